"""A source's engine options: the `[source.<engine>]` tables, each read by the engine that declares one."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kvwatch.config.fields import Fields
from kvwatch.engines import ENGINES
from kvwatch.engines.capabilities import TakesOptions


def read_options(parent: Fields, engine: str) -> Mapping[str, Any]:
    """Engine name -> its options, for each `[source.<name>]` table given; only a source of that
    engine (or an `auto` one, which may turn out to be it) may have one."""
    options: dict[str, Any] = {}
    for known in ENGINES.values():
        raw = parent.get(known.name) if isinstance(known, TakesOptions) else None
        if not isinstance(known, TakesOptions) or raw is None:
            continue
        if not isinstance(raw, Mapping):
            parent.problem(known.name, f"must be a table ([source.{known.name}])")
            continue
        if engine not in (known.name, "auto"):
            why = f'only for engine "{known.name}" (this source has engine "{engine}")'
            parent.problem(known.name, why)
        f = Fields(raw, parent.name(known.name), parent.problems, parent.base)
        options[known.name] = known.options(f)
        f.done()
    return MappingProxyType(options)
