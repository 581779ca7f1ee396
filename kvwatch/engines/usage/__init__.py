"""Gateway usage logs: one JSON row of token usage per request (parser, field mapping, metrics, report)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kvwatch.engines.base import Engine, Gathering, RequestAdapter
from kvwatch.model import UsageRecord, UsageSkipped
from kvwatch.parsers.base import Parser, ParserSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kvwatch.output.summary import SourceView


def _parser(source: str, settings: ParserSettings, options: Any) -> Parser:
    from kvwatch.engines.usage.parser import UsageParser

    return UsageParser(source, settings, options)  # options: the source's UsageMapping, if configured


def _options(f: Any) -> Any:  # (f: a kvwatch.config.fields.Fields)
    from kvwatch.engines.usage.options import read_mapping  # (reads config fields: not at import)

    return read_mapping(f)


def _metrics(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    from kvwatch.engines.usage.metrics import UsageMetrics

    family = UsageMetrics(registry)
    return {UsageRecord: family.apply, UsageSkipped: family.skipped_row}


def _report(view: SourceView) -> list[str] | None:
    from kvwatch.engines.usage.report import section

    return section(view)


def _requests() -> RequestAdapter:
    from kvwatch.engines.usage.records import Requests

    return Requests()


def _gather() -> Gathering:
    from kvwatch.engines.usage.report import Figures

    return Figures()


def _hint(head: str) -> bool:
    """parser.looks_like reads JSON rows: a line that starts with `{`."""
    return any(text.lstrip().startswith("{") for text in head.splitlines())


ENGINE = Engine(
    name="usage",
    display="gateway usage log",
    home="kvwatch.engines.usage.parser",
    parser=_parser,
    sniff_rank=0,  # strict (JSON rows with usage), so it goes first
    sniff_hint=_hint,
    events=(UsageRecord,),  # (a source of skipped rows only is not known to be a gateway's)
    signals=frozenset({"gateway_requests"}),
    metrics=_metrics,
    report=_report,
    gather=_gather,
    requests=_requests,
    options=_options,
)
