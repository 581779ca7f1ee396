"""Gateway usage logs: one JSON row of token usage per request (parser, field mapping, metrics, report)."""

from __future__ import annotations

from kvwatch.engines.base import Engine, Later
from kvwatch.model import UsageRecord


def _hint(head: str) -> bool:
    """parser.looks_like reads JSON rows: a line that starts with `{`."""
    return any(text.lstrip().startswith("{") for text in head.splitlines())


class Usage(Engine):
    """A gateway usage log's optional capabilities (kvwatch.engines.capabilities): Hints, Reports,
    ConvertsRequests, TakesOptions."""

    hint = staticmethod(_hint)
    section = Later("kvwatch.engines.usage.report:section")
    gather = Later("kvwatch.engines.usage.report:Figures")
    requests = Later("kvwatch.engines.usage.records:Requests")
    options = Later("kvwatch.engines.usage.options:read_mapping")


ENGINE = Usage(
    name="usage",
    display="gateway usage log",
    home="kvwatch.engines.usage.parser",
    parser=Later("kvwatch.engines.usage.parser:make_parser"),
    sniff_rank=0,  # strict (JSON rows with usage), so it goes first
    events=(UsageRecord,),  # (a source of skipped rows only is not known to be a gateway's)
    signals=frozenset({"gateway_requests"}),
    metrics=Later("kvwatch.engines.usage.metrics:handlers"),
)
