"""Ollama: its Go slog and `[GIN]` lines, its runners' cache lines, and (>= 0.30, 0.1.x) the bundled
llama.cpp server's lines through the llama.cpp parser (`reuses`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from kvwatch.engines.base import Engine, Gathering
from kvwatch.engines.ollama.advice import ADVICE
from kvwatch.engines.ollama.blind import blindness
from kvwatch.model import OllamaAccess, OllamaCacheEvent, OllamaRequest
from kvwatch.parsers.base import Parser, ParserSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kvwatch.report.summary import SourceView


def _parser(source: str, settings: ParserSettings, options: Any) -> Parser:
    from kvwatch.engines import markers_of, reused_parser
    from kvwatch.engines.ollama.parser import MARKERS, OllamaParser

    markers = markers_of(ENGINE.name) or MARKERS
    # (a partial, not a lambda: replay's parsing child receives the parser pickled)
    return OllamaParser(source, settings, partial(reused_parser, ENGINE.name, source, settings), markers)


def _metrics(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    from kvwatch.engines.ollama.metrics import OllamaMetrics

    family = OllamaMetrics(registry)
    return {
        OllamaRequest: family.apply_request,
        OllamaCacheEvent: family.apply_cache,
        OllamaAccess: family.apply_access,
    }


def _report(view: SourceView) -> list[str] | None:
    from kvwatch.engines.ollama.report import section

    return section(view)


def _gather() -> Gathering:
    from kvwatch.engines.ollama.report import Figures

    return Figures()


def _hint(head: str) -> bool:
    """parser.looks_like reads gin's lines, slog records with a source (`time=... source=...`), the MLX
    runner's bare cache lines or journald's `ollama[PID]:` tags."""
    return (
        "[GIN] " in head
        or ("time=" in head and "source=" in head)
        or "cache hit total=" in head
        or "cache miss total=" in head
        or "ollama[" in head
    )


ENGINE = Engine(
    name="ollama",
    display="Ollama",
    home="kvwatch.engines.ollama.parser",
    parser=_parser,
    sniff_rank=0,  # its log embeds llama-server's lines: it must be tried before llama.cpp
    sniff_hint=_hint,
    events=(OllamaRequest, OllamaCacheEvent, OllamaAccess),
    signals=frozenset({"server_requests"}),
    metrics=_metrics,
    report=_report,
    gather=_gather,
    reuses="llamacpp",
    blindness=blindness,
    restart_forgets=("blind",),
    advice=ADVICE,
)
