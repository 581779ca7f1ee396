"""Labelled gauges, counters and histograms held as plain floats: for series updated per event.

prometheus_client's children cost a lock and a few calls per update; here an update is a dict write.
A Family (HistogramFamily) exposes exactly what the Gauge or Counter (Histogram) of the same name and
labels would (series in creation order, no `_created`). It is not thread-safe by itself: the daemon
applies events and serves scrapes under one lock, and replay reads it after the fact.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterator
from typing import Literal

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import INF, floatToGoString


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
        try:
            self.series[labels] += amount
        except KeyError:  # (a new series: once per label values)
            self.series[labels] = 0.0 + amount

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


class HistogramFamily(Collector):
    """One histogram family: per label values, the count in each bucket (not cumulative) and the sum."""

    def __init__(
        self,
        name: str,
        doc: str,
        labelnames: tuple[str, ...],
        buckets: tuple[float, ...],
        registry: CollectorRegistry,
    ) -> None:
        self.name, self.doc, self.labelnames = name, doc, labelnames
        bounds = [float(b) for b in buckets]
        if bounds != sorted(set(bounds)) or bounds[0] < 0:
            # (a negative bound would make Histogram drop `_sum` and the family `_count` as well)
            raise ValueError("buckets must be distinct, sorted and not negative")
        if not bounds or bounds[-1] != INF:
            bounds.append(INF)
        self.bounds = tuple(bounds)
        self._les = tuple(floatToGoString(b) for b in bounds)  # type: ignore[no-untyped-call]
        # label values -> [count in bucket 0, ..., count in +Inf, sum]
        self.series: dict[tuple[str, ...], list[float]] = {}
        registry.register(self)

    def labels(self, labels: tuple[str, ...]) -> list[float]:
        """The series' counters, created empty if new (as Histogram.labels() creates the child)."""
        series = self.series.get(labels)
        if series is None:
            series = self.series[labels] = [0.0] * (len(self.bounds) + 1)
        return series

    def observe(self, labels: tuple[str, ...], amount: float) -> None:
        """Histogram.observe(): the sum grows by `amount`, its bucket (the first bound >= it) by one."""
        series = self.labels(labels)
        series[-1] += amount
        index = bisect_left(self.bounds, amount)
        # bisect puts nan first; Histogram compares `amount <= bound`, false for every bound
        if not math.isnan(amount):
            series[index] += 1.0

    def collect(self) -> Iterator[Metric]:
        """The family as prometheus_client's Histogram would expose it."""
        family = HistogramMetricFamily(self.name, self.doc, labels=self.labelnames)
        for labels, series in list(self.series.items()):
            cumulative, total = [], 0.0
            for le, count in zip(self._les, series[:-1], strict=True):
                total += count
                cumulative.append((le, total))
            family.add_metric(labels, cumulative, series[-1])
        yield family
