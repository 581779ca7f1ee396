"""The memo's shortcuts change nothing: with it, every tick finds and fires what it would without it,
the detectors whose verdicts move with event time alone (their `until`) included."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest
from prometheus_client import CollectorRegistry

from kvwatch.alerts import AlertBook
from kvwatch.detectors import (
    DETECTORS,
    DetectorSettings,
    Memo,
    detect_all,
    hicache_storage_unused,
    hit_rate_low,
    no_signal,
    offload_retrieve_failed,
)
from kvwatch.detectors.advice import advised
from kvwatch.detectors.stable import NEVER, before
from kvwatch.engines.llamacpp.events import LlamaRequest
from kvwatch.engines.vllm.events import VllmKvTransfer, VllmStats
from kvwatch.metrics import Metrics
from kvwatch.model import (
    Alert,
    CachePrefetch,
    EngineFact,
    Event,
    Finding,
    OffloadFailure,
    OffloadTransfer,
    RequestRecord,
    ServerRestart,
    UsageRecord,
)
from kvwatch.pipeline import Pipeline
from kvwatch.windows.window import Windows

T0 = 1_787_000_000.0


def timed_session(rng: random.Random, count: int) -> list[Event]:
    """A vLLM source busy, idle and silent (beyond no_signal's 300 s), an SGLang source with a storage
    tier whose prefetches fail or succeed, failed loads of an offload tier, usage records, facts and
    restarts, at times off the tick grid: every input of the detectors that read `now` moves."""
    events: list[Event] = [
        EngineFact("s", T0, "cache_storage_backend", "file"),
        EngineFact("s", T0, "prefix_cache", "enabled"),
    ]
    t = 0.0
    for _ in range(count):
        t += rng.choice((0.0, 0.5, 3.0, 10.0, 10.0, 10.0, 45.0, 290.0, 310.0))
        pick = rng.random()
        if pick < 0.4:
            busy = rng.random() < 0.7
            events.append(
                VllmStats("v", T0 + t, "0", 900.0 * busy, 50.0 * busy, 2, 0, 0.3, rng.random() * 0.4, 0.0)
            )
            if rng.random() < 0.5:
                events.append(VllmKvTransfer("v", T0 + t, "0", 2_000_000_000, rng.choice((0, 0, 5)), 3))
        elif pick < 0.6:
            outcome = "success" if rng.random() < 0.1 else "dropped"
            events.append(CachePrefetch("s", T0 + t, "storage", outcome, 512, benign=rng.random() < 0.1))
        elif pick < 0.75:
            events.append(OffloadFailure("o", T0 + t, rng.choice(("w0", "w1")), "short", "r1", 256))
        elif pick < 0.9:
            prompt = rng.randrange(1000, 9000)
            events.append(UsageRecord("g", T0 + t, rng.choice(("/a", "/b")), "m", prompt, prompt // 10))
        elif pick < 0.95:
            events.append(EngineFact("v", T0 + t, "api_server_count", rng.choice(("1", "1", "2"))))
        elif pick < 0.97:
            events.append(ServerRestart(rng.choice(("v", "s")), T0 + t, "vllm"))
        else:
            events.append(EngineFact("s", T0 + t, "prefetch_logged", rng.choice(("yes", "no"))))
    return events


SETTINGS = [
    DetectorSettings(),
    DetectorSettings(prefix_hit_rate_low=hit_rate_low.Settings(enabled=True, min_intervals=2)),
    DetectorSettings(
        no_signal=no_signal.Settings(silence=45.0),
        hicache_storage_unused=hicache_storage_unused.Settings(min_prefetches=2, window=120.0),
        offload_retrieve_failed=offload_retrieve_failed.Settings(min_failures=2, window=60.0, quiet=300.0),
    ),
]


def test_a_memo_changes_no_tick_of_the_timed_detectors() -> None:
    """detect_all with a memo finds at every tick what it finds without one, ticks spread over idle
    stretches included; every detector that reads `now` fires and stops on the way."""
    fired: set[str] = set()
    for seed in range(4):
        rng = random.Random(seed)
        windows, memo = Windows(), Memo()
        now, chosen = T0, SETTINGS[seed % len(SETTINGS)]
        for event in timed_session(rng, 800):
            while now + 10 <= event.time:
                now += 10
                expected = detect_all(windows, now, chosen)
                assert expected == detect_all(windows, now, chosen, memo), now
                fired |= {f.alert for f in expected}
            windows.observe(event)
            if rng.random() < 0.01:
                chosen = rng.choice(SETTINGS)
            if rng.random() < 0.002:
                windows.forget(rng.choice(("v", "s", "o", "g")))
    assert {"no_signal", "hicache_storage_unused", "offload_retrieve_failed", "prefix_hit_rate_low"} <= fired


@pytest.mark.parametrize("seed", range(10))
def test_a_detector_not_asked_finds_nothing_at_any_time(seed: int) -> None:
    """A detector switched off, or whose `reads` is empty (say, the cache-tier ones on sources that logged
    no tier), finds nothing and its findings hold forever: at every tick of sessions with some sources
    left out and settings that change, asked anyway, it says so; detect_all's findings are those of
    every detector asked."""
    rng = random.Random(seed)
    left_out = set(rng.sample(["v", "s", "o", "g"], rng.randrange(1, 4)))
    windows, memo, skipped, fired = Windows(), Memo(), set(), set()
    off = {
        detector.name: replace(getattr(DetectorSettings(), detector.name), enabled=False)
        for detector in DETECTORS
    }
    every = [*SETTINGS, DetectorSettings(**dict(rng.sample(sorted(off.items()), 5)))]
    now, chosen = T0, every[seed % len(every)]
    start = rng.uniform(0, 20000)  # (requests of a pinned cached length, which pinned_cache_length finds)
    session = [EngineFact("l", T0, "version", "b1"), *timed_session(rng, 600)] + [
        RequestRecord("l", T0 + start + 5 * n, 2000 + 300 * n, 1024) for n in range(40)
    ]
    for event in sorted(session, key=lambda e: e.time):
        while now + 10 <= event.time:
            now += 10
            asked = []
            for detector in DETECTORS:
                cfg = getattr(chosen, detector.name)
                found = detector.detect(windows, now, cfg)
                asked += found
                if not getattr(windows, detector.reads) or not cfg.enabled:  # (at this tick and every one)
                    skipped.add(detector.name)
                    assert found == []
                if not cfg.enabled:
                    assert detector.until is None or detector.until(windows, now, cfg) == NEVER
            assert advised(asked, windows) == detect_all(windows, now, chosen, memo)
            fired |= {f.alert for f in asked}
        if event.source not in left_out:
            windows.observe(event)
        if rng.random() < 0.002:
            windows.forget(rng.choice(("v", "s", "o", "g", "l")))
        if rng.random() < 0.01:
            chosen = rng.choice(every)
    assert skipped and "pinned_cache_length" in fired


def blind_session(rng: random.Random, count: int) -> list[Event]:
    """What no_signal reads, moving: vLLM stats lines busy, idle, with only one throughput or NaN,
    now and then back in time; its stats switched off and on, an LMCache connector; llama.cpp requests
    derived and exact; an SGLang storage tier's prefetches; restarts."""
    events: list[Event] = [EngineFact("s", T0, "cache_storage_backend", "file")]
    t = 0.0
    for i in range(count):
        t += rng.choice((0.0, 3.0, 10.0, 10.0, 45.0, 130.0, 310.0))
        pick = rng.random()
        if pick < 0.5:
            prompt, generation = rng.choice(((900.0, 50.0), (0.0, 0.0), (0.0, 50.0), (900.0, 0.0)))
            if rng.random() < 0.05:
                prompt = math.nan
            back = rng.choice((60.0, 400.0)) if rng.random() < 0.1 else 0.0  # (a line out of time order)
            events.append(VllmStats("v", T0 + t - back, "0", prompt, generation, 2, 0, 0.3, 0.1, 0.0))
        elif pick < 0.6:
            key, value = rng.choice(
                (
                    ("connector", "LMCacheConnectorV1"),
                    ("connector", "OffloadingConnector"),
                    ("stats_disabled", "--disable-log-stats"),
                    ("api_server_count", rng.choice(("1", "2", ""))),
                )
            )
            events.append(EngineFact("v", T0 + t, key, value))
        elif pick < 0.85:
            derived = rng.random() < 0.8
            events.append(LlamaRequest("l", T0 + t, 0, i, 900, 100, 800, "lcp", derived=derived))
        elif pick < 0.95:
            events.append(CachePrefetch("s", T0 + t, "storage", "dropped", 512))
        else:
            events.append(
                ServerRestart(rng.choice(("v", "l", "s")), T0 + t, rng.choice(("vllm", "llamacpp")))
            )
    return events


@pytest.mark.parametrize("seed", range(6))
def test_no_signal_is_asked_again_whenever_what_it_reads_moves(seed: int) -> None:
    """no_signal follows Windows.signals (not every change): at every tick its findings with the memo
    are those without, stats lines out of time order and NaN throughputs included."""
    rng = random.Random(seed)
    windows, memo = Windows(), Memo()
    settings = [DetectorSettings(), DetectorSettings(no_signal=no_signal.Settings(silence=45.0))]
    chosen, now, seen = settings[seed % 2], T0, set()
    for event in blind_session(rng, 1500):
        while now + 10 <= event.time:
            now += 10
            expected = detect_all(windows, now, chosen)
            assert expected == detect_all(windows, now, chosen, memo), now
            seen |= {(f.labels, f.summary[:20]) for f in expected if f.alert == "no_signal"}
        windows.observe(event)
        if rng.random() < 0.005:
            chosen = rng.choice(settings)
    assert len(seen) >= 5


class Unmemoised(Pipeline):
    """A pipeline whose ticks ask every detector and hand the alert book every finding anew."""

    def tick(self, now: float) -> list[Alert]:
        held = [finding for _, found in sorted(self.held.items()) for finding in found]
        return self.book.update(detect_all(self.windows, now, self.settings) + held, now)


@pytest.mark.parametrize("seed", range(3))
def test_the_pipelines_alerts_are_those_without_the_memo(seed: int) -> None:
    """Alert transitions, their times and the book's state are those of a pipeline without shortcuts,
    held findings coming and going and settings reloaded included."""
    rng = random.Random(seed)
    settings = SETTINGS[2]
    fast = Pipeline(Metrics(CollectorRegistry()), settings, resolve_after=rng.choice((0.0, 60.0, 120.0)))
    slow = Unmemoised(Metrics(CollectorRegistry()), settings, resolve_after=fast.book.resolve_after)
    held = Finding("probe_prefix_miss", (("probe", "p"),), "warning", "s", "c", "f", {})
    transitions = 0
    for event in timed_session(rng, 1000):
        if rng.random() < 0.01:
            for pipeline in (fast, slow):
                pipeline.held["p"] = [] if pipeline.held.get("p") else [held]
        if rng.random() < 0.01:  # (a reload: other settings, or equal ones in a new object)
            fast.settings = slow.settings = replace(rng.choice(SETTINGS))
        got, want = fast.advance(event.time), slow.advance(event.time)
        assert want == got
        transitions += len(got)
        fast.apply(event)
        slow.apply(event)
        assert slow.book.dump() == fast.book.dump()
    assert transitions > 20


@pytest.mark.parametrize("seed", range(5))
def test_again_is_an_update_with_the_same_findings(seed: int) -> None:
    """AlertBook.again(now) does what update(the last findings, now) does, after a load or a source's
    removal too."""
    rng = random.Random(seed)
    fast, slow = AlertBook(rng.choice((0.0, 30.0))), AlertBook(30.0)
    slow.resolve_after = fast.resolve_after
    pool = [
        Finding(name, (("source", source),), "warning", "s", "c", "f", {"n": n})
        for name in ("a", "b")
        for source in ("x", "y")
        for n in (1, 2)
    ]
    findings: list[Finding] = []
    for step in range(400):
        now = 10.0 * step
        roll = rng.random()
        if roll < 0.3:
            findings = rng.sample(pool, rng.randrange(0, 4))
            assert slow.update(findings, now) == fast.update(findings, now)
        elif roll < 0.35:
            source = rng.choice(("x", "y"))
            assert slow.remove(source, now) == fast.remove(source, now)
        elif roll < 0.38:
            state = slow.dump()
            fast.load(state)
            slow.load(state)
        else:
            assert slow.update(list(findings), now) == fast.again(now)
        assert slow.dump() == fast.dump()


def test_before_is_early_enough_for_the_silence_it_marks() -> None:
    """At before(start + span) (and so, rounding being monotonic, at every time under it) `t - start`
    is at most `span`: the verdict has not turned; and it is only a hair early."""
    rng = random.Random(7)
    for _ in range(20000):
        start = rng.choice((T0, 0.0, 1e12, -5.0)) + rng.random() * rng.choice((1.0, 1e3, 1e6))
        span = rng.choice((300.0, 0.1, 299.99999999, 1e-9, 1800.0))
        mark = before(start + span)
        assert mark - start <= span
        assert start + span - mark <= 1e-6 * max(1.0, abs(start))


def test_new_settings_are_judged_at_the_next_tick() -> None:
    """A reload's settings are read at the next tick even when nothing else changed: a shorter
    silence fires no_signal at once, where the old one's findings would still have held."""
    pipeline = Pipeline(Metrics(CollectorRegistry()))
    pipeline.advance(T0)
    pipeline.apply(VllmStats("v", T0, "0", 900.0, 50.0, 2, 0, 0.3, 0.1, 0.0))
    assert [] == pipeline.advance(T0 + 100)
    pipeline.settings = DetectorSettings(no_signal=no_signal.Settings(silence=45.0))
    [alert] = pipeline.advance(T0 + 200)
    assert ("no_signal", "firing", T0 + 110) == (alert.alert, alert.state, alert.at)


def test_offload_retrieve_failed_is_asked_again_when_a_load_falls_short() -> None:
    """offload_retrieve_failed follows Windows.shortfalls: a tier's short loads (no failure line) that
    come after ticks which judged it with none still fire it, at the tick that sees them."""
    windows, memo, settings = Windows(), Memo(), DetectorSettings()
    fired = []
    for n in range(12):
        now = T0 + 10 * n
        short = n >= 6  # (six ticks of whole loads, then short ones)
        windows.observe(OffloadTransfer("o", now + 1, "tp0", True, 256, 512, short=int(short)))
        windows.observe(OffloadTransfer("o", now + 2, "tp0", False, 4096))
        expected = detect_all(windows, now + 5, settings)
        assert expected == detect_all(windows, now + 5, settings, memo), n
        fired += [n for finding in expected if finding.alert == "offload_retrieve_failed"]
    assert 8 == fired[0]
