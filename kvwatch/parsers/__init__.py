"""LogLine -> Event, one parser per engine; `make_parser` and `detect_engine` pick one."""

from __future__ import annotations

from kvwatch.parsers.base import Parser, ParserSettings
from kvwatch.parsers.llamacpp import LlamacppParser, looks_like_llamacpp
from kvwatch.parsers.usage import UsageMapping, UsageParser, looks_like_usage
from kvwatch.parsers.vllm import VllmParser, looks_like_vllm

_PARSERS: dict[str, type[VllmParser | LlamacppParser | UsageParser]] = {
    "vllm": VllmParser,
    "llamacpp": LlamacppParser,
    "usage": UsageParser,
}
ENGINES = tuple(_PARSERS)


def make_parser(
    engine: str, source: str, settings: ParserSettings, usage: UsageMapping | None = None
) -> Parser:
    """A fresh parser for one source (`usage`: a gateway log's field mapping, from the config)."""
    if engine == "vllm":
        return VllmParser(source, settings)
    if engine == "llamacpp":
        return LlamacppParser(source, settings)
    if engine == "usage":
        return UsageParser(source, settings, usage)
    raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")


def markers_of(engine: str) -> tuple[str, ...] | None:
    """The markers of the engine's parser (every line it can make an event of holds one); None for
    `auto` or an unknown engine (every line may matter)."""
    chosen = _PARSERS.get(engine)
    return None if chosen is None else chosen.markers


def detect_engine(sample: str) -> str | None:
    """The engine whose log the sample (a file's first lines, decoded) looks like, if any."""
    if looks_like_usage(sample):  # strict (JSON rows with usage), so it goes first
        return "usage"
    if looks_like_llamacpp(sample):
        return "llamacpp"
    if looks_like_vllm(sample):
        return "vllm"
    return None
