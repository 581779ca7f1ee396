"""What `replay --format text` tells a human about each source, gathered as events pass.

An engine that reports (kvwatch.engines.capabilities.Reports) gathers its own figures for its part
of the report, kept in `SourceView.parts` under its name from its first event (a SourceView is what
its section reads); this module keeps what every source has.
A cache layer's events belong to no engine (they never decide a source's engine): they go to the
gatherings of the layers the source's engine carries, or of its engine when that is such a layer.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from kvwatch.engines import ENGINES, engine_of, layers_of
from kvwatch.engines.capabilities import Reports, SourceView
from kvwatch.model import Event, SourceCounts, UnreadFields

#: The engine gathering an event type's figures, and how it starts one source's (None: no engine does).
Owner = tuple[str, Callable[[], Any]] | None
#: The cache layers gathering the events no engine owns, for sources of one engine.
Layers = tuple[tuple[str, Callable[[], Any]], ...]


class Summary:
    """Observer that keeps a SourceView per source."""

    def __init__(self) -> None:
        self.sources: dict[str, SourceView] = {}
        self._owners: dict[type, Owner] = {}
        self._layers: dict[str, Layers] = {}  # source's engine -> the layers gathering unowned events
        #: source -> sanitised shape -> lines: what kvwatch could not (wholly) read (format drift)
        self.unread: dict[str, dict[str, int]] = {}

    @property
    def counts(self) -> dict[str, SourceCounts]:
        """Line counts per source."""
        return {name: view.counts for name, view in self.sources.items()}

    def declare(self, source: str, engine: str, framing: str, counts: SourceCounts) -> None:
        """Register a source before its events arrive (a file may be one of several of a source)."""
        view = self.sources.get(source)
        if view is None:
            self.sources[source] = SourceView(engine, framing, counts)
        elif framing not in view.framing.split(", "):
            view.framing += ", " + framing

    def observe(self, event: Event) -> None:
        """Take one event into account."""
        view = self.sources[event.source]
        time = event.time
        if view.first is None or time < view.first:  # min() and max(), without the calls
            view.first = time
        if view.last is None or time > view.last:
            view.last = time
        gather = view.gathers.get(type(event))
        if gather is None:  # (an event type new to the source: nearly every event's was found before)
            gather = self._gather(view, type(event), event.source)
        gather(event)

    def _gather(self, view: SourceView, kind: type, source: str) -> Callable[[Any], None]:
        """What takes the source's events of `kind` in, its parts started as needed, remembered."""
        if kind is UnreadFields:
            gather = view.gathers[kind] = partial(_tally, self.unread.setdefault(source, {}))
            return gather
        owner = self._owners[kind] if kind in self._owners else self._owner(kind)
        if owner is not None:
            names: Layers = (owner,)
        else:
            names = self._layers[view.engine] if view.engine in self._layers else self._layers_of(view.engine)
        observes = []
        for name, start in names:
            part = view.parts.get(name)
            if part is None:
                part = view.parts[name] = start()
            observes.append(part.observe)
        gather = view.gathers[kind] = observes[0] if len(observes) == 1 else partial(_each, tuple(observes))
        return gather

    def _owner(self, kind: type) -> Owner:
        """The engine whose events include `kind` and its gathering's start, remembered (None: none)."""
        name = engine_of(kind)
        start = _gathering(name) if name is not None else None
        owner = self._owners[kind] = (name, start) if name is not None and start is not None else None
        return owner

    def _layers_of(self, engine: str) -> Layers:
        """The cache layers (with a gathering) that a source of `engine` carries, remembered."""
        carried = {name for known in ENGINES for name in layers_of(known)}
        names = (engine, *layers_of(engine)) if engine in carried else layers_of(engine)
        layers = self._layers[engine] = tuple(
            (name, gather) for name in names if (gather := _gathering(name)) is not None
        )
        return layers


def _gathering(engine: str) -> Callable[[], Any] | None:
    """How a source's gathering of the engine's figures starts (None: it reports nothing)."""
    known = ENGINES.get(engine)
    return known.gather if isinstance(known, Reports) else None


def _tally(shapes: dict[str, int], event: UnreadFields) -> None:
    """Count one line of a drifted shape."""
    shapes[event.shape] = shapes.get(event.shape, 0) + event.count


def _each(observes: tuple[Callable[[Any], None], ...], event: Event) -> None:
    """Hand an event to every one of `observes` (none: it is dropped)."""
    for observe in observes:
        observe(event)
