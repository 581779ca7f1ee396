"""Engines defined by configuration: a `[[engine]]` table's patterns yield engine-neutral events, which
get the same windows, detectors, alerts, report and landing page as a built-in engine's.

One package serves every configured engine: `make_engine(spec)` builds its `Engine` (its own event
subclasses, so a source's engine is known by its events; its metrics `kvwatch_<name>_*`), which
kvwatch.engines.register_configured adds to the registry. No built-in engine knows of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kvwatch.engines.base import Engine
from kvwatch.engines.custom.events import CustomNotice, CustomOffload, CustomRate, CustomRequest
from kvwatch.engines.custom.spec import SIGNALS, EngineSpec
from kvwatch.parsers.base import Parser, ParserSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kvwatch.engines.base import Signal
    from kvwatch.engines.capabilities import Gathering, SourceView
    from kvwatch.parsers.clock import LineClock

_BASES: dict[str, type] = {"request": CustomRequest, "cache_rate": CustomRate, "offload": CustomOffload}


#: engine name -> its event types: one set per name for the process, so that a config read again (by
#: check and run, or a reload) makes events the metrics already built still take
_KINDS: dict[str, dict[str, type]] = {}


def make_events(spec: EngineSpec) -> dict[str, type]:
    """The engine's own event types: event kind -> a subclass of the neutral one (and "notice")."""
    if spec.name not in _KINDS:
        _KINDS[spec.name] = _new_events(spec)
    return _KINDS[spec.name]


def _new_events(spec: EngineSpec) -> dict[str, type]:
    title = "".join(part.title() for part in spec.name.split("_"))
    kinds = {
        kind: type(f"{title}{base.__name__.removeprefix('Custom')}", (base,), {"__slots__": ()})
        for kind, base in _BASES.items()
    }
    kinds["notice"] = type(f"{title}Notice", (CustomNotice,), {"__slots__": ()})
    return kinds


@dataclass(frozen=True)
class CustomEngine(Engine):
    """A configured engine: its markers, sniff and parser come from its spec, not from a module."""

    spec: EngineSpec | None = None
    kinds: Mapping[str, type] = field(default_factory=dict)

    @property
    def markers(self) -> tuple[str, ...]:
        """The configured markers."""
        assert self.spec is not None
        return self.spec.markers

    def sniff(self, head: str) -> bool:
        """A line of the head holds a marker and matches a pattern (within the timeout)."""
        assert self.spec is not None
        for line in head.splitlines():
            if any(m in line for m in self.spec.markers):
                for pattern in self.spec.patterns:
                    try:
                        if pattern.pattern.search(line, timeout=self.spec.timeout):
                            return True
                    except TimeoutError:
                        continue
        return False

    @property
    def clock(self) -> LineClock | None:
        """`kvwatch demo` does not rewrite a configured engine's lines."""
        return None

    def gather(self) -> Gathering:
        """A fresh gathering of one source's figures for `replay --format text` (it Reports)."""
        from kvwatch.engines.custom.report import Figures

        return Figures()

    def section(self, view: SourceView) -> list[str] | None:
        """Its lines of the source's text report: per engine its rates and offloads, its requests."""
        from kvwatch.engines.custom.report import section

        assert self.spec is not None
        return section(view, self.spec)


def make_engine(spec: EngineSpec) -> CustomEngine:
    """The Engine of a configured engine."""
    kinds = make_events(spec)

    def parser(source: str, settings: ParserSettings, options: Any) -> Parser:
        from kvwatch.engines.custom.parser import CustomParser

        return CustomParser(spec, dict(kinds), source, settings)

    def metrics(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
        from kvwatch.engines.custom.metrics import handlers

        return handlers(spec, kinds, registry)

    signals: frozenset[Signal] = frozenset(SIGNALS[e] for e in spec.events)  # type: ignore[misc]
    return CustomEngine(
        name=spec.name,
        display=spec.display,
        home=__name__,
        parser=parser,
        events=tuple(kinds[e] for e in spec.events),
        signals=signals,
        metrics=metrics,
        sniff_rank=-10,  # a configured engine is asked first: its lines may sit inside a built-in's log
        spec=spec,
        kinds=kinds,
    )
