"""metrics.families: plain-float families expose exactly what prometheus_client's own metrics would."""

from __future__ import annotations

import math
import random

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

import kvwatch.metrics  # noqa: F401  (as in the daemon: importing it turns prometheus_client's _created series off)
from kvwatch.engines.families import Family, HistogramFamily

BUCKETS = (0.001, 0.01, 0.1, 0.5, 1.0, 2.5, 60.0)


def test_histogram_family_exposes_what_histogram_does() -> None:
    """Same observations, in the same order, over several series: byte-identical exposition."""
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    family = HistogramFamily("h_seconds", "A histogram.", ("source",), BUCKETS, ours)
    reference = Histogram("h_seconds", "A histogram.", ["source"], buckets=BUCKETS, registry=theirs)
    rng = random.Random(8)
    values = [0.0, 0.001, 0.0010000001, 1.0, 60.0, 61.0, 1e300, math.inf, math.nan, -1.0]
    values += [rng.uniform(0, 70) for _ in range(2000)] + [rng.choice(BUCKETS) for _ in range(200)]
    for index, value in enumerate(values):
        source = ("b", "a", "c")[index % 3]
        family.observe((source,), value)
        reference.labels(source).observe(value)
    family.labels(("empty",))
    reference.labels("empty")
    assert generate_latest(ours) == generate_latest(theirs)
    assert b'h_seconds_bucket{le="+Inf",source="a"}' in generate_latest(ours)


def test_histogram_family_refuses_buckets_histogram_would_expose_differently() -> None:
    """Unsorted, repeated or negative bounds are refused when the family is made."""
    for buckets in ((1.0, 0.5), (0.5, 0.5), (-1.0, 1.0)):
        with pytest.raises(ValueError, match="buckets"):
            HistogramFamily("h", "doc", ("source",), buckets, CollectorRegistry())


def test_family_exposes_what_gauge_and_counter_do() -> None:
    """Set, inc and remove on a Family match the Gauge or Counter of the same name and labels."""
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    gauge = Family("g_ratio", "A gauge.", "gauge", ("source", "engine"), ours)
    counter = Family("c_bytes", "A counter.", "counter", ("source", "engine"), ours)
    ref_gauge = Gauge("g_ratio", "A gauge.", ["source", "engine"], registry=theirs)
    ref_counter = Counter("c_bytes", "A counter.", ["source", "engine"], registry=theirs)
    for step in range(50):
        labels = ("s", str(step % 4))
        gauge.set(labels, step / 7)
        ref_gauge.labels(*labels).set(step / 7)
        counter.inc(labels, step * 1.5)
        ref_counter.labels(*labels).inc(step * 1.5)
    gauge.remove(("s", "2"))
    ref_gauge.remove("s", "2")
    assert generate_latest(ours) == generate_latest(theirs)
    with pytest.raises(ValueError):
        counter.inc(("s", "0"), -1)
