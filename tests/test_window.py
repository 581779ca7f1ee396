"""Windows stay bounded by count under any rate, and what detectors read from them stays exact."""

from __future__ import annotations

import random
from itertools import takewhile
from typing import Any

import pytest

from kvwatch.detectors import hit_rate_low, write_only_offload
from kvwatch.engines.vllm.events import VllmKvTransfer, VllmStats
from kvwatch.model import Event
from kvwatch.windows.window import HORIZON, MAX_POINTS, POINT_TAIL, Windows

T0 = 1_787_000_000.0


def line(t: float, prompt: float, *, external: float | None = 0.0, hit: float | None = 0.1) -> VllmStats:
    """A stats line of engine 0."""
    return VllmStats("v", t, "0", prompt, 50.0, 4, 0, 0.3, hit, external)


def kv(t: float, store: int | None, load: int | None = 0, lookups: int | None = 3) -> VllmKvTransfer:
    """A KV Transfer line of engine 0."""
    return VllmKvTransfer("v", t, "0", store, load, lookups)


def windows_of(events: list[Event]) -> Windows:
    """Windows fed with events."""
    windows = Windows()
    for event in events:
        windows.observe(event)
    return windows


def expected_offload(events: list[Event], cfg: write_only_offload.Settings) -> dict[str, Any] | None:
    """What write_only_offload judges, worked out from every line kept (the horizon only)."""
    newest = max(e.time for e in events)
    stats = [e for e in events if isinstance(e, VllmStats) and e.time >= newest - HORIZON]
    lines = [e for e in events if isinstance(e, VllmKvTransfer) and e.time >= newest - HORIZON]
    busy = [s for s in stats if s.prompt_throughput >= cfg.min_prompt_throughput][-cfg.min_intervals :]
    if len(busy) < cfg.min_intervals:
        return None
    since = list(takewhile(lambda s: s.time >= busy[0].time, reversed(stats)))
    counted = [
        k for k in takewhile(lambda k: k.time >= busy[0].time, reversed(lines)) if k.store_bytes is not None
    ]
    external = [s.external_hit for s in since if s.external_hit is not None]
    stored = sum(k.store_bytes or 0 for k in counted)
    if not counted or stored < cfg.min_store_bytes or any(k.load_bytes for k in counted) or any(external):
        return None
    lookups = [k.lookups for k in counted if k.lookups is not None]
    usage = [s.kv_cache_usage for s in since if s.kv_cache_usage is not None]
    evidence = {
        "busy_intervals": len(busy),
        "span_seconds": round(busy[-1].time - busy[0].time, 1),
        "stored_bytes_window": stored,
        "external_lines": len(external),
        "lookups_window": sum(lookups) if lookups else None,
        "gpu_kv_usage_last": usage[0] if usage else None,
        "prompt_throughput_mean": round(sum(s.prompt_throughput for s in busy) / len(busy), 1),
    }
    return {k: v for k, v in evidence.items() if v is not None}


def judged_offload(windows: Windows, cfg: write_only_offload.Settings) -> dict[str, Any] | None:
    """The same figures as write_only_offload finds them in the windows."""
    (finding,) = write_only_offload.detect(windows, 0.0, cfg) or (None,)
    if finding is None:
        return None
    keys = ("busy_intervals", "span_seconds", "stored_bytes_window", "external_lines", "lookups_window")
    keys += ("gpu_kv_usage_last", "prompt_throughput_mean")
    return {k: finding.evidence[k] for k in keys if k in finding.evidence}


def test_a_flood_at_one_time_is_one_point() -> None:
    """200k stats and KV lines sharing one second keep one point each, its tail bounded, its sums exact."""
    rng = random.Random(1)
    events: list[Event] = []
    for i in range(100_000):
        events.append(line(T0, rng.choice((0.0, 500.0, 30000.0)), hit=rng.choice((None, 0.1, 0.2))))
        events.append(kv(T0, rng.choice((None, 2_000_000_000)), lookups=rng.choice((None, i))))
    windows = windows_of(events)
    engine = windows.sources["v"].engines["0"]
    (point,) = engine.stats
    (kv_point,) = engine.kv
    assert (point.lines, kv_point.lines) == (100_000, 100_000)
    assert POINT_TAIL <= len(point.prompts) < 2 * POINT_TAIL
    assert list(point.prompts) == [e.prompt_throughput for e in events[::2]][-len(point.prompts) :]
    counted = [e for e in events[1::2] if isinstance(e, VllmKvTransfer) and e.store_bytes is not None]
    assert (kv_point.counted, kv_point.store) == (len(counted), sum(e.store_bytes or 0 for e in counted))
    assert kv_point.lookups == sum(e.lookups or 0 for e in counted)
    cfg = write_only_offload.Settings()
    assert expected_offload(events, cfg) == judged_offload(windows, cfg) is not None
    rated = [
        e
        for e in events[::2]
        if isinstance(e, VllmStats) and e.prefix_hit is not None and e.prompt_throughput
    ]
    (low,) = hit_rate_low.detect(windows, T0, hit_rate_low.Settings(enabled=True, threshold=0.5))
    assert low.evidence == {"lines": len(rated), "max": 0.2, "last": rated[-1].prefix_hit}


def test_points_are_capped_when_every_line_has_its_own_time() -> None:
    """Sub-second stamps at a high rate: the oldest points go, at most MAX_POINTS stay per series."""
    events: list[Event] = []
    for i in range(3 * MAX_POINTS):
        events += [line(T0 + i / 1000, 100.0), kv(T0 + i / 1000, 1000)]
    engine = windows_of(events).sources["v"].engines["0"]
    assert (len(engine.stats), len(engine.kv)) == (MAX_POINTS, MAX_POINTS)
    assert engine.stats[0].time == T0 + 2 * MAX_POINTS / 1000
    assert engine.store_total == 3 * MAX_POINTS * 1000


@pytest.mark.parametrize("seed", range(40))
def test_points_judge_as_the_lines_do(seed: int) -> None:
    """Random streams (repeated stamps, gaps past the horizon, unknown values, loads, External hits):
    write_only_offload's evidence from the points equals the one worked out from every line."""
    rng = random.Random(seed)
    t, events = T0, []
    for _ in range(rng.randint(1, 400)):
        t += rng.choice((0.0, 0.0, 1.0, 10.0, 10.0, 0.5, 4000.0 if rng.random() < 0.02 else 10.0))
        for _ in range(rng.choice((1, 1, 2, 5))):
            external = rng.choice((None, 0.0, 0.0, 0.0, 0.0)) if rng.random() < 0.995 else 0.01
            usage = rng.choice((None, 0.2, 0.4))
            prompt = rng.choice((0.0, 0.5, 1.0, 123.4, 3000.7))
            hit = rng.choice((None, 0.1, 0.2, 0.3 if rng.random() < 0.1 else 0.0))
            events.append(VllmStats("v", t, "0", prompt, 1.0, 1, 0, usage, hit, external))
            load = 0 if rng.random() < 0.995 else 5
            events.append(kv(t, rng.choice((None, 10**9, 3 * 10**9)), load, rng.choice((None, 2))))
    for cfg in (
        write_only_offload.Settings(),
        write_only_offload.Settings(min_intervals=3, min_store_bytes=0),
        write_only_offload.Settings(min_intervals=40, min_prompt_throughput=0.0),
    ):
        assert expected_offload(events, cfg) == judged_offload(windows_of(events), cfg)
    now = max(e.time for e in events)
    cfg_low = hit_rate_low.Settings(
        enabled=True, threshold=0.25, window=rng.choice((30.0, 600.0)), min_intervals=2
    )
    rates = [
        e.prefix_hit
        for e in events
        if isinstance(e, VllmStats) and e.time >= now - cfg_low.window and e.prefix_hit is not None
        if e.prompt_throughput > 0
    ]
    found = hit_rate_low.detect(windows_of(events), now, cfg_low)
    expected = (
        [{"lines": len(rates), "max": max(rates), "last": rates[-1]}]
        if len(rates) >= 2 and max(rates) < 0.25
        else []
    )
    assert expected == [f.evidence for f in found]


def test_engines_adapters_make_request_points_and_count_how_exact() -> None:
    """llama.cpp's records become points numbered by slot conversation (a new one after any pick but
    lcp, even one without counts; afresh after a restart), counted exact / derived / joined; a usage
    row's point carries its entry."""
    from kvwatch.engines.llamacpp.events import LlamaRequest
    from kvwatch.model import ServerRestart, UsageRecord

    def llama(t: float, selection: str, *, derived: bool = False, prompt: int | None = 100) -> LlamaRequest:
        return LlamaRequest("l", T0 + t, 0, int(t), prompt, 90, 10, selection, derived=derived)  # type: ignore[arg-type]

    events: list[Event] = [
        llama(1, "lru"),
        llama(2, "lcp", derived=True),
        llama(3, "unknown", derived=True, prompt=None),
        llama(4, "lcp"),
        ServerRestart("l", T0 + 5, "llamacpp"),
        llama(6, "lcp"),
        UsageRecord("g", T0 + 7, "/v1/messages", "m", 200, 150),
    ]
    before = windows_of(events[:4])
    points = before.requests[(("source", "l"),)]
    assert ["slot 0 #1", "slot 0 #1", "slot 0 #2"] == [p.conversation for p in points]  # (#2: t=3)
    assert [("lru", False), ("lcp", True), ("lcp", False)] == [(p.selection, p.derived) for p in points]
    window = before.sources["l"]
    assert (2, 1, 1) == (window.exact_requests, window.derived_requests, window.joined_requests)
    after = windows_of(events)
    [point] = after.requests[(("source", "l"),)]  # (a restart drops the points and the numbering)
    assert "slot 0 #0" == point.conversation
    assert (1, 0) == (after.sources["l"].exact_requests, after.sources["l"].derived_requests)
    [gateway] = after.requests[(("source", "g"), ("entry", "/v1/messages"))]
    assert (200, 150, "") == (gateway.prompt, gateway.cached, gateway.conversation)


@pytest.mark.parametrize("seed", range(4))
def test_each_slots_points_are_the_windows_own(seed: int) -> None:
    """`Windows.slots` holds each request group's points by slot, in order, and only those: through
    evictions at the count cap, restarts and a forgotten source (prefix_reuse_broken reads it)."""
    from kvwatch.model import RequestRecord, ServerRestart, UsageRecord

    rng = random.Random(seed)
    windows = Windows(max_requests=rng.choice((1, 5, 40)))
    for i in range(2000):
        t = T0 + i
        source = rng.choice(("a", "b"))
        pick = rng.random()
        if pick < 0.85:
            slot = rng.choice((0, 1, 2, 7, None))
            windows.observe(
                RequestRecord(source, t, rng.randrange(1, 9000), rng.randrange(0, 900), slot=slot)
            )
        elif pick < 0.95:
            windows.observe(UsageRecord(source, t, rng.choice(("/v1/messages", "/v1/chat")), "m", 300, 200))
        elif pick < 0.99:
            windows.observe(ServerRestart(source, t, "llamacpp"))
        else:
            windows.forget(source)
        assert windows.requests.keys() == windows.slots.keys()
        for labels, points in windows.requests.items():
            assert len(points) <= windows.max_requests
            by_slot: dict[int | None, list[object]] = {}
            for point in points:
                by_slot.setdefault(point.slot, []).append(point)
            assert by_slot == {slot: list(kept) for slot, kept in windows.slots[labels].items()}
            for kept in windows.slots[labels].values():  # (the very points, not equal copies)
                assert all(any(p is q for q in points) for p in kept)


def test_newest_is_the_tail_of_the_list() -> None:
    """`newest(points, n)` is `list(points)[-n:]` for any n, a deque's or a list's."""
    from collections import deque

    from kvwatch.windows.window import RequestPoint, newest

    for size in (0, 1, 5, 50, 500):
        points = [RequestPoint(T0 + i, 100 + i, i) for i in range(size)]
        for count in (-3, 0, 1, 4, 49, 50, 51, 600):
            assert list(points)[-count:] == newest(deque(points), count) == newest(points, count)
