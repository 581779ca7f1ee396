"""Owns every kvwatch_* metric: each engine's families (from its package), and `Metrics.apply(event)`.

Everything is registered on a registry passed in, so tests and replays use a fresh one. Counters'
wall-clock `_created` series are switched off: replays must be deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, disable_created_metrics
from prometheus_client.metrics import MetricWrapperBase

from kvwatch.engines import ENGINES
from kvwatch.engines.families import Family, HistogramFamily
from kvwatch.metrics.sources import SourceCountsCollector
from kvwatch.metrics.unread import UnreadFamily
from kvwatch.model import Event, UnreadFields

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
        self._by_type[UnreadFields] = UnreadFamily(registry).apply  # engine-neutral
        self.sources = SourceCountsCollector()
        registry.register(self.sources)

    def forget(self, source: str) -> None:
        """Drop every series labelled with `source` (a source removed from the config)."""
        # (an engine's families are the attributes of the objects whose methods handle its events)
        owners = {id(o): o for o in (getattr(h, "__self__", None) for h in self._by_type.values()) if o}
        for owner in owners.values():
            for family in vars(owner).values():
                _drop(family, source)
            forget = getattr(owner, "forget", None)
            if callable(forget):
                forget(source)
        self.sources.counts.pop(source, None)

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


def _drop(family: object, source: str) -> None:
    """Remove the series of `source` from one family (of ours, or prometheus_client's)."""
    if isinstance(family, Family | HistogramFamily) and "source" in family.labelnames:
        at = family.labelnames.index("source")
        for labels in [k for k in family.series if k[at] == source]:
            del family.series[labels]
    elif isinstance(family, MetricWrapperBase):
        names: tuple[str, ...] = getattr(family, "_labelnames", ())
        if "source" in names:
            at = names.index("source")
            for labels in [k for k in list(getattr(family, "_metrics", {})) if k[at] == source]:
                family.remove(*labels)
