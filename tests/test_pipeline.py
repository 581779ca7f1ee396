"""The pipeline's event-time tick grid, shared by replay and the daemon."""

from __future__ import annotations

import random
import threading
from itertools import pairwise

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from test_detect_memo import SETTINGS, timed_session

from kvwatch.metrics import Metrics
from kvwatch.model import Alert, Event
from kvwatch.pipeline import Pipeline


def ticking_pipeline() -> tuple[Pipeline, list[float]]:
    """A pipeline whose ticks are recorded."""
    pipeline = Pipeline(Metrics(CollectorRegistry()))
    seen: list[float] = []

    def tick(now: float) -> list[Alert]:
        seen.append(now)
        return []

    pipeline.tick = tick  # type: ignore[method-assign]
    return pipeline, seen


def test_grid_sits_on_whole_ten_seconds() -> None:
    """Ticks fall on multiples of 10 s of event time, each grid point once."""
    pipeline, seen = ticking_pipeline()
    for when in (1003.5, 1009.0, 1031.2):
        pipeline.advance(when)
    assert [1010.0, 1020.0, 1030.0] == seen


def test_a_long_gap_costs_a_bounded_number_of_ticks() -> None:
    """Months without events tick through the time-dependent settings, then jump to the next event."""
    pipeline, seen = ticking_pipeline()
    pipeline.advance(0.0)
    pipeline.advance(200 * 86400.0 + 5)
    assert len(seen) < 100
    assert (10.0, 200 * 86400.0) == (seen[0], seen[-1])
    assert all(b - a == 10.0 for a, b in pairwise(seen[:-1]))  # no gap before the jump


def test_a_time_past_the_floats_resolution_ends_the_grid_instead_of_hanging() -> None:
    """An event time so large that adding 10 s changes nothing (damage the parsers let through):
    one tick there, then no grid point is left; advance() returns instead of looping for ever."""
    pipeline, seen = ticking_pipeline()
    pipeline.advance(1000.0)
    worker = threading.Thread(target=pipeline.advance, args=(1e19,), daemon=True)
    worker.start()
    worker.join(10.0)
    assert not worker.is_alive(), "advance() still looping"
    assert len(seen) < 100 and 1e18 < seen[-1] <= 1e19
    count = len(seen)
    pipeline.advance(2e19)  # (no grid point is left: no more ticks)
    assert count == len(seen)


@pytest.mark.parametrize("seed", range(4))
def test_feed_does_what_advance_then_apply_do_per_event(seed: int) -> None:
    """Pipeline.feed over batches of any size: the alert transitions, ticks, metrics and observed
    events of advance() then apply() called per event."""
    rng = random.Random(seed)
    events = timed_session(rng, 1500)
    settings = SETTINGS[2]
    fed: list[Event] = []
    applied: list[Event] = []
    fast = Pipeline(Metrics(CollectorRegistry()), settings, observers=[fed.append])
    slow = Pipeline(Metrics(CollectorRegistry()), settings, observers=[applied.append])
    got: list[Alert] = []
    want: list[Alert] = []
    at = 0
    while at < len(events):
        batch = events[at : at + rng.choice((0, 1, 2, 7, 50, 300))]
        at += len(batch)
        got.extend(fast.feed(iter(batch)))
        for event in batch:
            want.extend(slow.advance(event.time))
            slow.apply(event)
        assert (fast.next_tick, fast.last_time) == (slow.next_tick, slow.last_time)
    assert want == got and len(got) > 10
    assert applied == fed
    assert generate_latest(slow.metrics.registry) == generate_latest(fast.metrics.registry)
