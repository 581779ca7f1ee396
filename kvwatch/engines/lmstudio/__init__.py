"""LM Studio: its server log's records, mlx-engine's prompt-cache lines and its llama.cpp runtime's
`Cache reuse summary`."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kvwatch.engines.base import Engine, Gathering
from kvwatch.engines.lmstudio.advice import ADVICE
from kvwatch.engines.lmstudio.blind import blindness
from kvwatch.model import LmstudioCacheEvent, LmstudioCompletion, LmstudioDiskUsage, LmstudioRequest
from kvwatch.parsers.base import Parser, ParserSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kvwatch.report.summary import SourceView


def _parser(source: str, settings: ParserSettings, options: Any) -> Parser:
    from kvwatch.engines.lmstudio.parser import LmstudioParser

    return LmstudioParser(source, settings)


def _metrics(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    from kvwatch.engines.lmstudio.metrics import LmstudioMetrics

    family = LmstudioMetrics(registry)
    return {
        LmstudioRequest: family.apply_request,
        LmstudioCacheEvent: family.apply_cache,
        LmstudioDiskUsage: family.apply_disk,
        LmstudioCompletion: family.apply_completion,
    }


def _report(view: SourceView) -> list[str] | None:
    from kvwatch.engines.lmstudio.report import section

    return section(view)


def _gather() -> Gathering:
    from kvwatch.engines.lmstudio.report import Figures

    return Figures()


#: How a record header of LM Studio's (lines.HEADER) starts.
_HEADER_START = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +\[")


def _hint(head: str) -> bool:
    """parser.looks_like reads `[stamp][LEVEL]`, `[cache_wrapper][`, `Cache reuse summary: ` or a
    header line (lines.ONE_LINE, lines.HEADER)."""
    if "][" in head or "Cache reuse summary: " in head or "【" in head or "Prompt cache" in head:
        return True
    return any(_HEADER_START.match(text) for text in head.splitlines())


ENGINE = Engine(
    name="lmstudio",
    display="LM Studio",
    home="kvwatch.engines.lmstudio.parser",
    parser=_parser,
    sniff_rank=0,
    sniff_hint=_hint,
    events=(LmstudioRequest, LmstudioCompletion, LmstudioCacheEvent, LmstudioDiskUsage),
    signals=frozenset({"server_requests"}),
    metrics=_metrics,
    report=_report,
    gather=_gather,
    blindness=blindness,
    advice=ADVICE,
)
