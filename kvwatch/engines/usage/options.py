"""The `[source.usage]` table: how a gateway's usage log maps onto requests (see engines.usage.parser)."""

from __future__ import annotations

from typing import Any

from kvwatch.engines.capabilities import OptionTable
from kvwatch.engines.usage.parser import UsageMapping

#: Dotted field paths a `[source.usage]` table may give.
PATH_KEYS = (
    "time",
    "prompt",
    "input",
    "cached",
    "cache_creation",
    "upstream_prompt",
    "model",
    "entry",
    "client",
    "channel",
)


def _names(f: OptionTable, key: str) -> dict[str, str]:
    """A table of raw value -> label value (clients, channels)."""
    value = f.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) and v for v in value.values()):
        f.problem(key, 'must be a table of raw value = "name" strings')
        return {}
    return {str(k): v for k, v in value.items()}


def read_mapping(f: OptionTable) -> UsageMapping:
    """A source's `[source.usage]` table (its unknown keys are reported by the caller's `done()`)."""
    paths: dict[str, Any] = {key: f.string(key) or "" for key in PATH_KEYS}
    mapping = UsageMapping(
        **paths,
        clients=_names(f, "clients"),
        channels=_names(f, "channels"),
        entries=f.strings("entries"),
        tz=f.string("tz") or "",
    )
    return mapping
