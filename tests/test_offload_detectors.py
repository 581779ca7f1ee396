"""write_only_offload on an external tier's lines, and offload_retrieve_failed: pure verdicts on windows."""

from __future__ import annotations

from kvwatch.detectors import offload_retrieve_failed, write_only_offload
from kvwatch.engines.lmcache.events import LmcacheFailure, LmcacheLookup, LmcacheTransfer
from kvwatch.engines.vllm.events import VllmStats
from kvwatch.windows.window import Windows

T0 = 1_800_000_000.0


def agent(
    lookups: int, *, hit: int = 0, need: int = 0, new: int = 1000, load: bool = False, tp: int = 1
) -> Windows:
    """A lookup every 5 s (hit, need), each worker's store of `new` tokens, and a load if asked."""
    windows = Windows()
    for k in range(lookups):
        t = T0 + 5 * k
        windows.observe(LmcacheLookup("s", t, 4000 + k, hit, need, 0))
        for worker in range(tp):
            windows.observe(LmcacheTransfer("s", t, f"tp{worker}", False, new, new))
            if load:
                windows.observe(LmcacheTransfer("s", t, f"tp{worker}", True, need, need))
    return windows


def verdict(windows: Windows, **settings: int) -> list[tuple[tuple[tuple[str, str], ...], object]]:
    """The write_only_offload findings' labels and stored tokens."""
    found = write_only_offload.detect(windows, T0 + 10_000, write_only_offload.Settings(**settings))
    return [(f.labels, f.evidence.get("stored_tokens_window")) for f in found]


def test_write_only_tier_fires_on_stores_without_hits_or_loads() -> None:
    """24 lookups finding nothing while 24,000 tokens were stored fire, with the busiest worker's tokens."""
    assert [((("source", "s"), ("tier", "external")), 24000)] == verdict(agent(30, tp=2))


def test_write_only_tier_stays_silent_on_healthy_or_thin_traffic() -> None:
    """Hits (even those vLLM's own cache held), loads, too few lookups or tokens, External > 0: silent."""
    assert [] == verdict(agent(30, hit=512, need=0))  # vLLM's prefix cache had it: a hit all the same
    assert [] == verdict(agent(30, hit=512, need=512, load=True))
    assert [] == verdict(agent(23))
    assert [] == verdict(agent(30, new=500))  # 12,000 tokens stored
    windows = agent(30)
    windows.observe(VllmStats("s", T0 + 140, "0", 900.0, 30.0, 2, 0, 0.1, 0.2, 0.05))
    assert [] == verdict(windows)
    assert [] == verdict(agent(30), enabled=False)


def test_write_only_tier_ignores_idle_time_and_resolves_on_a_hit() -> None:
    """The verdict rests on the last lookups, however long ago; one hit among them clears it."""
    windows = agent(30)
    assert verdict(windows)  # judged at T0 + 10,000 s, long after the last lookup
    windows.observe(LmcacheLookup("s", T0 + 200, 4000, 256, 256, 0))
    assert [] == verdict(windows)


def failures(times: list[float], worker: str = "tp0", *, with_error: bool = True) -> Windows:
    """Short loads at the given offsets, each followed (same second) by the connector's error line."""
    windows = Windows()
    for k, dt in enumerate(times):
        windows.observe(LmcacheTransfer("s", T0 + dt, worker, True, 256, 768, short=1, request=f"r{k}"))
        if with_error:
            windows.observe(LmcacheFailure("s", T0 + dt, worker, "retrieve_error", f"r{k}", 512))
    return windows


def failed(windows: Windows, now: float) -> list[tuple[tuple[tuple[str, str], ...], object, object]]:
    """The offload_retrieve_failed findings' labels, shortfalls and tokens lost at `now` (T0 + now)."""
    found = offload_retrieve_failed.detect(windows, T0 + now, offload_retrieve_failed.Settings())
    return [(f.labels, f.evidence["shortfalls"], f.evidence.get("tokens_lost")) for f in found]


def test_retrieve_failed_fires_at_the_third_within_ten_minutes_and_holds_thirty() -> None:
    """Three shortfalls within 600 s fire (a short load and its error line are one); 1800 s quiet ends it."""
    labels = (("source", "s"), ("worker", "tp0"))
    windows = failures([0, 200, 500])
    assert [(labels, 3, 1536)] == failed(windows, 500)
    assert [(labels, 3, 1536)] == failed(windows, 2299)
    assert [] == failed(windows, 2300)
    assert [] == failed(failures([0, 400, 800]), 800)  # never three within 600 s
    assert [] == failed(failures([0, 200]), 200)


def test_retrieve_failed_counts_failure_lines_alone_and_per_worker() -> None:
    """Failure lines without a short load count on their own worker; other workers are apart."""
    windows = failures([0, 10], "tp1")
    windows.observe(LmcacheFailure("s", T0 + 20, "tp1", "unretrievable_block"))
    windows.observe(LmcacheFailure("s", T0 + 30, "tp0", "no_attn_metadata"))
    windows.observe(LmcacheFailure("s", T0 + 40, "tp0", "cpu_memory_pressure", retrieve=False))
    assert [((("source", "s"), ("worker", "tp1")), 3, 1024)] == failed(windows, 60)
