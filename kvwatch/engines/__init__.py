"""The engines kvwatch reads, one registry line each; whatever picks, lists or detects an engine asks here.

Each engine is a package beside this one (kvwatch/engines/<name>/) declaring an `Engine` (engines.base).
"""

from __future__ import annotations

from kvwatch.engines import llamacpp, lmcache, lmstudio, ollama, sglang, usage, vllm
from kvwatch.engines.base import AS_LAYER, Engine, Signal
from kvwatch.parsers.base import Parser, ParserSettings

#: name -> engine, in the order lists show them (and metrics are registered).
ENGINES: dict[str, Engine] = {}


def register(engine: Engine) -> None:
    """Add an engine (or replace the one of its name)."""
    ENGINES[engine.name] = engine


register(vllm.ENGINE)
register(llamacpp.ENGINE)
register(usage.ENGINE)
register(sglang.ENGINE)
register(ollama.ENGINE)
register(lmstudio.ENGINE)
register(lmcache.ENGINE)

#: The engine assumed for a log no engine recognises (replay, and an `auto` source that never decides).
FALLBACK = vllm.ENGINE.name


def names() -> tuple[str, ...]:
    """Every engine's name, in registry order."""
    return tuple(ENGINES)


def displays() -> tuple[str, ...]:
    """How messages name each registered engine, in registry order ("vLLM", "llama.cpp", ...)."""
    return tuple(engine.display for engine in ENGINES.values())


def choices() -> tuple[str, ...]:
    """What `engine =` and `--engine` accept: `auto`, then every engine."""
    return ("auto", *ENGINES)


def make_parser(engine: str, source: str, settings: ParserSettings, options: object = None) -> Parser:
    """A fresh parser for one source (`options`: the engine's own config, e.g. a usage log's mapping)."""
    chosen = ENGINES.get(engine)
    if chosen is None:
        raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    return chosen.parser(source, settings, options)


def reused_parser(engine: str, source: str, settings: ParserSettings) -> Parser:
    """A fresh parser of the engine that `engine` reuses (its `reuses`), for lines its log embeds."""
    reused = ENGINES[engine].reuses
    if reused is None or reused not in ENGINES:
        raise ValueError(f"engine {engine!r} reuses no known engine")
    return ENGINES[reused].parser(source, settings, None)


def layer_parsers(engine: str, source: str, settings: ParserSettings) -> list[Parser]:
    """Fresh parsers of the cache layers whose lines the engine's log carries (its `layers`), made with
    the options AS_LAYER."""
    return [
        ENGINES[name].parser(source, settings, AS_LAYER) for name in ENGINES[engine].layers if name in ENGINES
    ]


def markers_of(engine: str) -> tuple[str, ...] | None:
    """The markers of the engine's parser (every line it can make an event of holds one), its layers'
    included; None for `auto` or an unknown engine (every line may matter)."""
    chosen = ENGINES.get(engine)
    if chosen is None:
        return None
    markers = chosen.markers
    for other in (chosen.reuses, *chosen.layers):
        found = ENGINES.get(other) if other else None
        if found is not None:
            markers += tuple(m for m in found.markers if m not in markers)
    return markers


def detect_engine(sample: str) -> str | None:
    """The engine whose log the sample (a file's first lines, decoded) looks like, if any."""
    for engine in sorted(ENGINES.values(), key=lambda e: e.sniff_rank):
        if engine.sniff(sample):
            return engine.name
    return None


def engine_of(kind: type) -> str | None:
    """The engine whose events include this type (None: an engine-neutral event)."""
    for engine in ENGINES.values():
        if kind in engine.events:
            return engine.name
    return None


def signals_of(engine: str) -> frozenset[Signal]:
    """The engine-neutral signals the engine can produce (none for an unknown or undecided one)."""
    chosen = ENGINES.get(engine)
    return frozenset() if chosen is None else chosen.signals
