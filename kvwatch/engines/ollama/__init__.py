"""Ollama: its Go slog and `[GIN]` lines, its runners' cache lines, and (>= 0.30, 0.1.x) the bundled
llama.cpp server's lines through the llama.cpp parser (`reuses`)."""

from __future__ import annotations

from kvwatch.engines.base import Engine, Later
from kvwatch.engines.ollama.advice import ADVICE
from kvwatch.engines.ollama.blind import blindness
from kvwatch.engines.ollama.events import OllamaAccess, OllamaCacheEvent, OllamaRequest


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


class Ollama(Engine):
    """Ollama's optional capabilities (kvwatch.engines.capabilities): Hints, Reports, ReusesParser,
    JudgesBlindness, ForgetsOnRestart, Advises."""

    hint = staticmethod(_hint)
    section = Later("kvwatch.engines.ollama.report:section")
    gather = Later("kvwatch.engines.ollama.report:Figures")
    reuses = "llamacpp"
    blindness = staticmethod(blindness)
    restart_forgets = ("blind",)
    advice = ADVICE


ENGINE = Ollama(
    name="ollama",
    display="Ollama",
    home="kvwatch.engines.ollama.parser",
    parser=Later("kvwatch.engines.ollama.parser:make_parser"),
    sniff_rank=0,  # its log embeds llama-server's lines: it must be tried before llama.cpp
    events=(OllamaRequest, OllamaCacheEvent, OllamaAccess),
    signals=frozenset({"server_requests"}),
    metrics=Later("kvwatch.engines.ollama.metrics:handlers"),
)
