"""vLLM's SimpleCPUOffloadConnector counts KV blocks: its lines feed write_only_offload in blocks."""

from __future__ import annotations

import random

import pytest

from kvwatch.detectors import write_only_offload
from kvwatch.engines import FACTS
from kvwatch.engines.vllm.events import VllmKvTransfer, VllmStats
from kvwatch.engines.vllm.parser import VllmParser
from kvwatch.model import Event, LogLine
from kvwatch.parsers.base import ParserSettings
from kvwatch.windows.window import Windows

T0 = 1_796_474_100.0
HEAD = "(APIServer pid=25584) INFO 12-05 12:35:00 [metrics.py:103] KV Transfer metrics: "


def kv_line(payload: str) -> VllmKvTransfer:
    """The event a vLLM parser makes of one KV Transfer line."""
    parser = VllmParser("v", ParserSettings(year=2026))
    result = parser.parse(LogLine("v", HEAD + payload))
    assert isinstance(result, list), result
    (event,) = [e for e in result if isinstance(e, VllmKvTransfer)]
    return event


@pytest.mark.parametrize(
    ("payload", "blocks"),
    [
        # 0.32-0.34: gauges, a labelled outcome counter, the unlabelled completed loads
        (
            "vllm:simple_kv_offload_used_blocks=12, vllm:simple_kv_offload_pending_store_blocks=4, "
            "vllm:simple_kv_offload_save_outcomes_total:('stored',)=7, "
            "vllm:simple_kv_offload_save_outcomes_total:('skipped_already_cached',)=30, "
            "vllm:simple_kv_offload_load_blocks_total=21",
            (11, 21),
        ),
        # no load key: nothing loaded this interval (reduce() leaves a zero counter out)
        ("vllm:simple_kv_offload_used_blocks=3, vllm:simple_kv_offload_pending_store_blocks=3", (3, 0)),
        # PR #57251's labelled phases: completed loads count, issued ones do not
        (
            "vllm:simple_kv_offload_load_blocks_total:('issued',)=9, "
            "vllm:simple_kv_offload_load_blocks_total:('completed',)=8, "
            "vllm:simple_kv_offload_pending_store_blocks=0",
            (0, 8),
        ),
        # under MultiConnector, keys are nested per connector
        (
            "SimpleCPUOffloadConnector={'vllm:simple_kv_offload_pending_store_blocks': 5, "
            "\"vllm:simple_kv_offload_save_outcomes_total:('stored',)\": 2}",
            (7, 0),
        ),
    ],
)
def test_simplecpu_keys_are_read_in_blocks(payload: str, blocks: tuple[int, int]) -> None:
    """Stored = `stored` outcomes + pending stores, loaded = completed load blocks; bytes stay unknown."""
    event = kv_line(payload)
    assert (event.store_blocks, event.load_blocks) == blocks
    assert (event.store_bytes, event.load_bytes) == (None, None)


def test_a_byte_line_counts_no_blocks() -> None:
    """OffloadingConnector's byte keys give bytes and no block counts."""
    event = kv_line("vllm:kv_offload_store_bytes=4096, vllm:kv_offload_load_bytes=0")
    assert (event.store_bytes, event.store_blocks, event.load_blocks) == (4096, None, None)


def stats(t: float, external: float | None = 0.0) -> VllmStats:
    """A busy stats line at time t."""
    return VllmStats("v", t, "0", 600.0, 10.0, 2, 0, 0.02, 0.88, external)


def blocks(t: float, store: int, load: int = 0) -> VllmKvTransfer:
    """A SimpleCPU KV Transfer line at time t."""
    return VllmKvTransfer("v", t, "0", None, None, None, store, load)


def findings(events: list[Event], cfg: write_only_offload.Settings | None = None) -> list[str]:
    """The write_only_offload summaries at the last event's time."""
    windows = Windows(FACTS)
    for event in events:
        windows.observe(event)
    now = max(e.time for e in events)
    return [f.summary for f in write_only_offload.detect(windows, now, cfg or write_only_offload.Settings())]


def traffic(intervals: int, store: int = 5, loads: dict[int, int] | None = None) -> list[Event]:
    """Busy 10 s intervals, each a stats line and a SimpleCPU line (`loads`: interval -> blocks)."""
    loads = loads or {}
    events: list[Event] = []
    for i in range(intervals):
        events += [stats(T0 + 10 * i), blocks(T0 + 10 * i, store, loads.get(i, 0))]
    return events


def test_stores_without_loads_fire_in_blocks() -> None:
    """24 busy intervals storing blocks, none loaded: write_only_offload, its evidence in blocks."""
    (summary,) = findings(traffic(26))
    assert summary.startswith("KV offload stored 120 KV blocks over the last 24 busy stats intervals")
    windows = Windows(FACTS)
    for event in traffic(26):
        windows.observe(event)
    (finding,) = write_only_offload.detect(windows, T0 + 250, write_only_offload.Settings())
    assert finding.evidence["stored_blocks_total"] == 130 and finding.evidence["loaded_blocks_window"] == 0
    assert "load_blocks_total" in finding.fix


@pytest.mark.parametrize(
    ("case", "events"),
    [
        ("a load in the window", traffic(26, loads={20: 16})),
        ("too few intervals", traffic(20)),
        ("too few blocks", traffic(26, store=2)),
    ],
)
def test_healthy_or_thin_block_tiers_stay_silent(case: str, events: list[Event]) -> None:
    """A tier that loads anything back, too short a run, or under min_store_blocks: no finding."""
    assert findings(events) == [], case


@pytest.mark.parametrize("seed", range(20))
def test_the_shortcut_agrees_with_judging_in_full_on_block_lines(seed: int) -> None:
    """Random block traffic (loads rare or frequent, lines out of order): the shortcut hides nothing."""
    rng = random.Random(seed)
    windows = Windows(FACTS)
    cfg = write_only_offload.Settings(min_intervals=rng.choice((3, 24)), min_store_blocks=rng.choice((1, 64)))
    time, loads = T0, rng.random() * 0.3
    for _ in range(300):
        time += rng.uniform(-30, 30) if rng.random() < 0.1 else 10.0
        if rng.random() < 0.5:
            windows.observe(stats(time, rng.choice((0.0, 0.0, None))))
        else:
            windows.observe(blocks(time, rng.randint(0, 9), 16 if rng.random() < loads else 0))
        fast = write_only_offload.detect(windows, time, cfg)
        assert fast == write_only_offload.detect(windows, time, cfg, full=True)
