"""Detectors on synthetic windows: each fires on its signature and stays silent on its look-alikes."""

from __future__ import annotations

import random

import pytest

from kvwatch.detectors import hit_rate_low, no_signal, pinned_cache, prefix_reuse, write_only_offload
from kvwatch.model import (
    EngineFact,
    Event,
    LlamaRequest,
    ServerRestart,
    UsageRecord,
    VllmKvTransfer,
    VllmStats,
)

T0 = 1_787_000_000.0


def stats(t: float, prompt: float = 30000.0, external: float | None = 0.0, engine: str = "0") -> VllmStats:
    """A stats line at time t."""
    return VllmStats("v", t, engine, prompt, 500.0, 8, 0, 0.3, 0.88, external)


def kv(
    t: float, store: int | None = 2_500_000_000, load: int | None = 0, engine: str = "0"
) -> VllmKvTransfer:
    """A KV Transfer line at time t."""
    return VllmKvTransfer("v", t, engine, store, load, 7)


def offload_traffic(intervals: int, **kw: object) -> list[Event]:
    """`intervals` stats+KV pairs every 10 s."""
    events: list[Event] = []
    for i in range(intervals):
        events += [
            stats(T0 + 10 * i, **{k: v for k, v in kw.items() if k in ("prompt", "external")}),  # type: ignore[arg-type]
            kv(T0 + 10 * i, **{k: v for k, v in kw.items() if k in ("store", "load")}),
        ]  # type: ignore[arg-type]
    return events


def windows_of(events: list[Event]):  # type: ignore[no-untyped-def]
    """Windows fed with events."""
    from kvwatch.window import Windows

    windows = Windows()
    for event in events:
        windows.observe(event)
    return windows


def fires(detect, events: list[Event], cfg: object) -> list[str]:  # type: ignore[no-untyped-def]
    """Names of findings at the last event's time."""
    now = max(e.time for e in events)
    return [f.alert for f in detect(windows_of(events), now, cfg)]


@pytest.mark.parametrize(
    ("case", "events", "expected"),
    [
        # the incident: steady prefill, tens of GB stored, nothing loaded, External 0.0% throughout
        ("write-only, 26 intervals", offload_traffic(26), ["write_only_offload"]),
        # before the first minutes of traffic
        ("too early", offload_traffic(12), []),
        # healthy: loads happen
        ("loads appear", offload_traffic(26, load=1000), []),
        # healthy by External, even if the byte counter missed a load
        ("external above 0", offload_traffic(26, external=0.05), []),
        # unknown is not zero: a connector that reports no byte counts
        ("no byte counts", offload_traffic(26, store=None, load=None), []),
        # idle: no prefill
        ("idle", offload_traffic(26, prompt=0.0), []),
        # a pause after the incident changes nothing: no new evidence, the alert must not resolve
        ("paused after", [*offload_traffic(26), stats(T0 + 900, prompt=0.0)], ["write_only_offload"]),
        # storing a trickle only
        ("little stored", offload_traffic(26, store=1000), []),
    ],
)
def test_write_only_offload(case: str, events: list[Event], expected: list[str]) -> None:
    """write_only_offload fires only on sustained write-only traffic."""
    assert expected == fires(write_only_offload.detect, events, write_only_offload.Settings())


def test_write_only_offload_names_the_hybrid_cause() -> None:
    """With the EAGLE/MTP startup fact the alert explains the connector's lookup."""
    events: list[Event] = [
        EngineFact("v", T0 - 5, "offload_excluded_groups", "EAGLE/MTP [2]"),
        *offload_traffic(26),
    ]
    (finding,) = write_only_offload.detect(windows_of(events), T0 + 250, write_only_offload.Settings())
    assert "EAGLE/MTP [2]" in finding.cause and "no hit when any group misses" in finding.cause
    assert (0, 65_000_000_000) == (
        finding.evidence["loaded_bytes_window"],
        finding.evidence["stored_bytes_total"],
    )


def llama(prompts: list[int], cached: list[int], reprocess: bool = False) -> list[Event]:
    """llama.cpp request records one second apart."""
    return [
        LlamaRequest("l", T0 + i, 0, i, p, c, p - c, "lru", full_reprocess=reprocess)
        for i, (p, c) in enumerate(zip(prompts, cached, strict=True))
    ]


GROWING = [480 + 30 * i for i in range(10)]


@pytest.mark.parametrize(
    ("case", "events", "expected"),
    [
        # the llama.cpp capture: only the 47 tokens before the cch= nonce are reused
        ("pinned at 47", llama(GROWING, [0, 0] + [47] * 8), ["pinned_cache_length"]),
        # healthy conversations: the cached length grows with the prompt
        ("cached grows", llama(GROWING, [0, 0] + [p - 40 for p in GROWING[2:]]), []),
        # a cold start: nothing cached
        ("cold", llama(GROWING, [0] * 10), []),
        # one compaction among healthy turns
        ("isolated compaction", llama(GROWING, [0, 300, 330, 0, 400, 430, 460, 490, 520, 550]), []),
        # unrelated prompts sharing a 1984-token system prompt: same C, prompts about as long, no growth
        ("shared system prompt", llama(random.Random(7).sample(range(2050, 4500), 10), [1984] * 10), []),
        # pinned with little growth per turn but far beyond C: many sessions on one source
        (
            "many sessions",
            llama(random.Random(5).sample(range(400, 900), 10), [47] * 10),
            ["pinned_cache_length"],
        ),
        # too few requests to judge
        ("few", llama(GROWING[:5], [47] * 5), []),
    ],
)
def test_pinned_cache_length_llamacpp(case: str, events: list[Event], expected: list[str]) -> None:
    """pinned_cache_length fires on a pinned constant with growing prompts only."""
    assert expected == fires(pinned_cache.detect, events, pinned_cache.Settings())


def usage_day(cached: list[int], prompts: list[int]) -> list[Event]:
    """Gateway usage records, one a minute, on /v1/messages."""
    return [
        UsageRecord("gw", T0 + 60 * i, "/v1/messages", "m", p, c)
        for i, (p, c) in enumerate(zip(prompts, cached, strict=True))
    ]


def test_pinned_cache_length_incident_one() -> None:
    """Incident 1's day: C = 17920 = 280 x 64, implied hit rate near 14%, per source and entry."""
    prompts = [40000 + 2800 * i for i in range(50)]
    (finding,) = pinned_cache.detect(
        windows_of(usage_day([17920] * 50, prompts)), T0 + 3000, pinned_cache.Settings()
    )
    assert (("source", "gw"), ("entry", "/v1/messages")) == finding.labels
    assert "17920 = 280 x 64" == finding.evidence["blocks"]
    assert 0.1 < finding.evidence["implied_hit_rate"] < 0.2


def test_pinned_cache_length_after_the_fix_is_silent() -> None:
    """The day after the fix: cached lengths spread from 0 to 128k+."""
    rng = random.Random(3)
    prompts = [40000 + 2800 * i for i in range(50)]
    cached = [
        0 if i % 12 == 0 else (p - rng.randrange(100, 2000)) // 256 * 256 for i, p in enumerate(prompts)
    ]
    assert [] == fires(pinned_cache.detect, usage_day(cached, prompts), pinned_cache.Settings())


def test_restart_forgets_requests() -> None:
    """A server restart clears the request history: old pinned requests are not judged."""
    events = [*llama(GROWING, [0, 0] + [47] * 8), ServerRestart("l", T0 + 20, "llamacpp")]
    assert [] == fires(pinned_cache.detect, events, pinned_cache.Settings())


@pytest.mark.parametrize(
    ("case", "events", "expected"),
    [
        ("swa full re-processing", llama([24000] * 6, [0] * 6, reprocess=True), ["prefix_reuse_broken"]),
        ("21 tokens of 24k", llama([24000 + 40 * i for i in range(6)], [21] * 6), ["prefix_reuse_broken"]),
        ("healthy", llama([24000 + 40 * i for i in range(6)], [23990 + 40 * i for i in range(6)]), []),
        ("small prompts", llama([100] * 6, [0] * 6), []),
        ("one cold among healthy", llama([24000] * 6, [0, 23990, 23990, 23990, 23990, 23990]), []),
    ],
)
def test_prefix_reuse_broken(case: str, events: list[Event], expected: list[str]) -> None:
    """prefix_reuse_broken judges effective reuse over consecutive sizeable prompts."""
    assert expected == fires(prefix_reuse.detect, events, prefix_reuse.Settings())


def test_no_signal_cases() -> None:
    """Stats off, default verbosity and busy silence are blind spots; idle silence is not."""
    cfg = no_signal.Settings()
    off = [EngineFact("v", T0, "stats_disabled", "api_server_count > 1")]
    assert ["warning"] == [f.severity for f in no_signal.detect(windows_of(off), T0, cfg)]
    derived = [LlamaRequest("l", T0, 0, 1, 500, 400, 100, "lcp", derived=True)]
    assert ["info"] == [f.severity for f in no_signal.detect(windows_of(derived), T0, cfg)]
    busy = [stats(T0)]
    assert [] == no_signal.detect(windows_of(busy), T0 + 200, cfg)
    assert ["no_signal"] == [f.alert for f in no_signal.detect(windows_of(busy), T0 + 400, cfg)]
    idle = [stats(T0, prompt=0.0)]
    idle[0] = VllmStats("v", T0, "0", 0.0, 0.0, 0, 0, 0.0)
    assert [] == no_signal.detect(windows_of(idle), T0 + 4000, cfg)


def test_prefix_hit_rate_low_is_off_by_default() -> None:
    """The low-hit-rate detector needs enabling, then fires on a low window."""
    events: list[Event] = [VllmStats("v", T0 + 10 * i, "0", 100.0, 10.0, 1, 0, 0.2, 0.1) for i in range(10)]
    assert [] == fires(hit_rate_low.detect, events, hit_rate_low.Settings())
    assert ["prefix_hit_rate_low"] == fires(hit_rate_low.detect, events, hit_rate_low.Settings(enabled=True))


def test_pinned_cache_precheck_never_hides_a_pinned_group() -> None:
    """detect() skips assess() for a group _may_be_pinned rules out: only ever a group assess() would
    not find pinned (random groups: few or many requests, ties, zero and negative cached lengths)."""
    from kvwatch.window import RequestPoint

    rng = random.Random(3)
    checked = skipped = 0
    for _ in range(4000):
        cfg = pinned_cache.Settings(
            min_requests=rng.choice((1, 3, 8)),
            max_requests=rng.choice((5, 12, 50)),
            min_share=rng.choice((0.2, 0.5, 0.6, 0.9)),
            min_growth=rng.choice((0.5, 2.0)),
            min_trend=rng.choice((-1.0, 0.3)),
        )
        lengths = rng.sample((0, -5, 64, 128, 17920, 17984), rng.randint(1, 4))
        points = [
            RequestPoint(float(i), rng.randint(1, 60000), rng.choice(lengths))
            for i in range(rng.randint(0, 60))
        ]
        pinned = pinned_cache.assess(points, cfg).pinned
        if not pinned_cache._may_be_pinned(points, cfg):
            skipped += 1
            assert not pinned, (points, cfg)
        checked += pinned
    assert skipped > 1000 and checked > 100
