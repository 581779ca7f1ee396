"""Labelled gauges and counters held as plain floats: for series updated on every log line.

prometheus_client's children cost a lock and a few calls per update; here an update is a dict write.
A Family exposes exactly what the Gauge or Counter of the same name and labels would (series in
creation order, no `_created`). It is not thread-safe by itself: the daemon applies events and serves
scrapes under one lock, and replay reads it after the fact.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


class Family(Collector):
    """One gauge or counter family: `series` maps label values to the value, in creation order."""

    def __init__(
        self,
        name: str,
        doc: str,
        kind: Literal["gauge", "counter"],
        labelnames: tuple[str, ...],
        registry: CollectorRegistry,
    ) -> None:
        self.name, self.doc, self.kind, self.labelnames = name, doc, kind, labelnames
        self.series: dict[tuple[str, ...], float] = {}
        registry.register(self)

    def set(self, labels: tuple[str, ...], value: float) -> None:
        """Gauge.set(): the series appears if new."""
        self.series[labels] = float(value)

    def inc(self, labels: tuple[str, ...], amount: float) -> None:
        """Counter.inc(): the series appears at 0 if new, then adds `amount` (never negative)."""
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        series = self.series
        series[labels] = series.get(labels, 0.0) + amount

    def remove(self, labels: tuple[str, ...]) -> None:
        """Drop a series, if present."""
        self.series.pop(labels, None)

    def collect(self) -> Iterator[Metric]:
        """The family as prometheus_client's own metric would expose it."""
        family: GaugeMetricFamily | CounterMetricFamily
        if self.kind == "gauge":
            family = GaugeMetricFamily(self.name, self.doc, labels=self.labelnames)
        else:
            family = CounterMetricFamily(self.name, self.doc, labels=self.labelnames)
        for labels, value in list(self.series.items()):
            family.add_metric(labels, value)
        yield family
