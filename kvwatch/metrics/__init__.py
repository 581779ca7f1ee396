"""Owns every kvwatch_* metric: each engine's families (from its package), and `Metrics.apply(event)`.

Everything is registered on a registry passed in, so tests and replays use a fresh one. Counters'
wall-clock `_created` series are switched off: replays must be deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, disable_created_metrics

from kvwatch.engines import ENGINES
from kvwatch.metrics.sources import SourceCountsCollector
from kvwatch.model import Event

disable_created_metrics()  # type: ignore[no-untyped-call]

__all__ = ["Metrics"]


class Metrics:
    """The metrics of one kvwatch process (or one replay)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        # apply() runs per event: one dict lookup on the exact type instead of a chain of isinstance.
        self._by_type: dict[type, Callable[[Any], None]] = {}
        for engine in ENGINES.values():
            self._by_type.update(engine.metrics(registry))
        self.sources = SourceCountsCollector()
        registry.register(self.sources)

    def apply(self, event: Event) -> None:
        """Update the metrics an event touches."""
        handler = self._by_type.get(type(event))
        if handler is not None:
            handler(event)
            return
        for kind, handle in self._by_type.items():  # a subclass of an event type
            if isinstance(event, kind):
                handle(event)
                return
