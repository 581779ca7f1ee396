"""The engines kvwatch reads, one registry line each; whatever picks, lists or detects an engine asks here.

Each engine is a package beside this one (kvwatch/engines/<name>/) declaring an `Engine` (engines.base).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from kvwatch.engines import llamacpp, lmcache, lmstudio, ollama, sglang, usage, vllm
from kvwatch.engines.base import AS_LAYER, Engine, Signal
from kvwatch.engines.capabilities import (
    Advises,
    CarriesLayers,
    ConvertsRequests,
    ForgetsOnRestart,
    JudgesBlindness,
    ReusesParser,
)
from kvwatch.model import Advise, Blindness, RequestAdapter
from kvwatch.parsers.base import Parser, ParserSettings

T = TypeVar("T")

#: name -> engine, in the order lists show them (and metrics are registered).
ENGINES: dict[str, Engine] = {}


def register(engine: Engine) -> None:
    """Add an engine (or replace the one of its name)."""
    ENGINES[engine.name] = engine
    _MEMO.clear()


#: (what, engine name) -> its capability's value, as the accessors below found it: asking a Protocol
#: (isinstance) costs ~20 us, and detectors ask per source at every tick.
_MEMO: dict[tuple[str, str], Any] = {}


def _memo(what: str, engine: str, read: Callable[[Engine | None], T]) -> T:
    key = (what, engine)
    if key not in _MEMO:
        _MEMO[key] = read(ENGINES.get(engine))
    return cast("T", _MEMO[key])


register(vllm.ENGINE)
register(llamacpp.ENGINE)
register(usage.ENGINE)
register(sglang.ENGINE)
register(ollama.ENGINE)
register(lmstudio.ENGINE)
register(lmcache.ENGINE)

#: The engines kvwatch ships: a configured engine (kvwatch.engines.custom) may not take one of their names.
BUILTIN = frozenset(ENGINES)


def register_configured(engine: Engine) -> None:
    """Add an engine a config defines (or replace the configured one of its name); a built-in engine's
    name is refused (ValueError)."""
    if engine.name in BUILTIN or engine.name == "auto":
        raise ValueError(f"{engine.name!r} is a built-in engine's name")
    register(engine)


def configure(tables: Sequence[Mapping[str, Any]], problems: list[str]) -> tuple[Any, ...]:
    """The engines a config's `[[engine]]` tables define (kvwatch.engines.custom), registered unless one
    is bad (a name already registered keeps its first definition); each problem recorded with its
    field. (Loaded only for a config that defines one: `regex` and the patterns stay out of every
    other start-up.)"""
    if not tables:
        return ()
    from kvwatch.engines.custom.configure import read_engines

    def first(engine: Engine) -> None:
        # The first definition of a name stays for the process: a reload must not change the labels
        # of families the metrics already built, nor the parsers of sources it leaves running.
        if engine.name not in ENGINES:
            register_configured(engine)

    return read_engines(tables, problems, BUILTIN, first)


def try_lines(specs: Sequence[Any], lines: Sequence[str]) -> str:
    """What each configured engine (specs from `configure`) makes of each line, for people to read."""
    from kvwatch.engines.custom.trial import describe

    return describe(specs, lines)


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
    reused = reuses_of(engine)
    if reused is None or reused not in ENGINES:
        raise ValueError(f"engine {engine!r} reuses no known engine")
    return ENGINES[reused].parser(source, settings, None)


def layer_parsers(engine: str, source: str, settings: ParserSettings) -> list[Parser]:
    """Fresh parsers of the cache layers whose lines the engine's log carries (its `layers`), made with
    the options AS_LAYER."""
    return [ENGINES[name].parser(source, settings, AS_LAYER) for name in layers_of(engine) if name in ENGINES]


def layers_of(engine: str) -> tuple[str, ...]:
    """The cache layers whose lines the engine's log carries (none for an unknown engine, or one that
    carries none)."""
    return _memo("layers", engine, lambda e: e.layers if isinstance(e, CarriesLayers) else ())


def reuses_of(engine: str) -> str | None:
    """The engine whose parser reads lines the engine's log embeds (None: none)."""
    return _memo("reuses", engine, lambda e: e.reuses if isinstance(e, ReusesParser) else None)


def advice_of(engine: str) -> Mapping[str, Advise]:
    """The engine's own cause and fix for engine-neutral alerts, by alert name (none: none)."""
    return _memo("advice", engine, lambda e: e.advice if isinstance(e, Advises) else {})


def blindness_of(engine: str) -> Blindness | None:
    """The engine's own no_signal verdict (None: it has none)."""
    return _memo("blindness", engine, lambda e: e.blindness if isinstance(e, JudgesBlindness) else None)


def markers_of(engine: str) -> tuple[str, ...] | None:
    """The markers of the engine's parser (every line it can make an event of holds one), its layers'
    included; None for `auto` or an unknown engine (every line may matter)."""
    chosen = ENGINES.get(engine)
    if chosen is None:
        return None
    markers = chosen.markers
    for other in (reuses_of(engine), *layers_of(engine)):
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


class Facts:
    """The registry's answers to what windows and detectors ask of the engines
    (kvwatch.windows.facts.EngineFacts): the pipeline hands them this."""

    owner = staticmethod(engine_of)
    signals = staticmethod(signals_of)
    layers = staticmethod(layers_of)
    blindness = staticmethod(blindness_of)
    advice = staticmethod(advice_of)

    @staticmethod
    def converts(engine: str) -> bool:
        """Whether its request events are converted by a per-source adapter."""
        return _memo("converts", engine, lambda e: isinstance(e, ConvertsRequests))

    @staticmethod
    def requests(engine: str) -> RequestAdapter | None:
        """A fresh request adapter of one source (None: the engine converts no requests)."""
        chosen = ENGINES.get(engine)
        return chosen.requests() if isinstance(chosen, ConvertsRequests) else None

    @staticmethod
    def forgets(engine: str) -> tuple[str, ...]:
        """The source facts its restart makes stale."""
        return _memo(
            "forgets", engine, lambda e: e.restart_forgets if isinstance(e, ForgetsOnRestart) else ()
        )


#: What windows and detectors are handed of the engines (kvwatch.pipeline passes it).
FACTS = Facts()
