"""llama.cpp's llama-server: slot and srv lines joined into request records (parser, metrics, report)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kvwatch.engines.base import Engine, Gathering, RequestAdapter
from kvwatch.model import LlamaRequest
from kvwatch.parsers.base import Parser, ParserSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kvwatch.output.summary import SourceView


def _parser(source: str, settings: ParserSettings, options: Any) -> Parser:
    from kvwatch.engines.llamacpp.parser import LlamacppParser

    return LlamacppParser(source, settings)


def _metrics(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    from kvwatch.engines.llamacpp.metrics import LlamacppMetrics

    return {LlamaRequest: LlamacppMetrics(registry).apply}


def _report(view: SourceView) -> list[str] | None:
    from kvwatch.engines.llamacpp.report import section

    return section(view)


def _requests() -> RequestAdapter:
    from kvwatch.engines.llamacpp.records import Requests

    return Requests()


def _gather() -> Gathering:
    from kvwatch.engines.llamacpp.report import Figures

    return Figures()


#: parser.MARKERS (a test holds them equal): the parser, which imports much, is not needed to know a log
#: holds none.
SNIFF_MARKERS: tuple[str, ...] = ("slot ", "srv ", "eval time", "total time", "initializing", "listening")
SNIFF_MARKERS += ('{"type"', " | tid=", "timestamp=", "kv cache rm")


def _hint(head: str) -> bool:
    """parser.looks_like reads lines that hold one of its markers."""
    return any(marker in head for marker in SNIFF_MARKERS)


ENGINE = Engine(
    name="llamacpp",
    display="llama.cpp",
    home="kvwatch.engines.llamacpp.parser",
    parser=_parser,
    sniff_rank=1,
    sniff_hint=_hint,
    events=(LlamaRequest,),
    signals=frozenset({"server_requests", "derived_requests"}),
    metrics=_metrics,
    report=_report,
    gather=_gather,
    requests=_requests,
)
