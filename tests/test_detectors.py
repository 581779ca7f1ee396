"""Detectors on synthetic windows: each fires on its signature and stays silent on its look-alikes."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from corpora import SAMPLES, sample_logs

from kvwatch.cli import main
from kvwatch.detectors import (
    hit_rate_low,
    no_signal,
    pinned_cache,
    prefix_cache_disabled,
    prefix_reuse,
    write_only_offload,
)
from kvwatch.engines import FACTS
from kvwatch.engines.llamacpp.events import LlamaRequest
from kvwatch.engines.sglang.events import SglangRequest
from kvwatch.engines.vllm.events import VllmKvTransfer, VllmStats
from kvwatch.model import EngineFact, Event, Finding, RequestRecord, ServerRestart, UsageRecord
from kvwatch.windows.window import KvPoint, RequestPoint, StatsPoint, Windows

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
    from kvwatch.windows.window import Windows

    windows = Windows(FACTS)
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


def test_pinned_cache_detect_finds_every_group_assess_finds_pinned() -> None:
    """detect(), with its cheap pre-checks (a count, the group's tally), fires on exactly the groups
    whose requests assess() finds pinned (random groups: few or many requests, ties, zero and negative
    cached lengths)."""
    rng = random.Random(3)
    pinned = healthy = 0
    for _ in range(4000):
        cfg = pinned_cache.Settings(
            min_requests=rng.choice((0, 1, 3, 8)),
            max_requests=rng.choice((5, 12, 50)),
            min_share=rng.choice((0.2, 0.5, 0.6, 0.9)),
            min_growth=rng.choice((0.5, 2.0)),
            min_trend=rng.choice((-1.0, 0.3)),
        )
        lengths = rng.sample((0, -5, 64, 128, 17920, 17984), rng.randint(1, 4))
        windows = Windows(FACTS)
        for i in range(rng.randint(1, 60)):
            windows.observe(RequestRecord("s", T0 + i, rng.randint(1, 60000), rng.choice(lengths)))
        [points] = windows.requests.values()
        # (no conversation here: detect's rules are the share rule and the creep)
        expected = pinned_cache.assess(points, cfg).pinned or pinned_cache.creeping(points, cfg) is not None
        assert expected == bool(pinned_cache.detect(windows, T0 + 60, cfg)), (list(points), cfg)
        pinned += expected
        healthy += not expected
    assert pinned > 100 and healthy > 1000


def test_a_groups_tally_is_a_count_of_its_points() -> None:
    """Windows.tallies: the commonest positive cached length's count and the points carrying a
    conversation, as a count of the group's kept points finds them, through evictions and restarts."""
    from kvwatch.windows.window import Windows

    rng = random.Random(11)
    for max_requests in (0, 1, 7, 60):
        windows = Windows(FACTS, max_requests=max_requests)
        for i in range(800):
            if rng.random() < 0.01:
                windows.observe(ServerRestart("l", T0 + i, "llamacpp"))
            cached = rng.choice((0, -3, 64, 128, 256, rng.randrange(1, 5000)))
            talk = rng.choice(("", "", "a", "b"))
            windows.observe(
                RequestRecord("l", T0 + i, 9000, cached, slot=rng.choice((0, 1)), conversation=talk)
            )
            for labels, points in windows.requests.items():
                tally = windows.tallies[labels]
                counts = Counter(p.cached for p in points if p.cached > 0)
                assert max(counts.values(), default=0) == tally.top
                assert sum(bool(p.conversation) for p in points) == tally.conversations
                newest = [turns[-1][0] for turns in tally.turns.values()]
                assert newest == sorted(newest)


def last_sizeable(points: list[RequestPoint], cfg: prefix_reuse.Settings) -> list[RequestPoint]:
    """The last `requests` points of at least `min_prompt` tokens, oldest first."""
    return [p for p in points if p.prompt >= cfg.min_prompt][-cfg.requests :]


def poor_reuse(point: RequestPoint, cfg: prefix_reuse.Settings) -> bool:
    """A request that reused almost nothing: fully re-processed, or at most `max_reuse` of its prompt."""
    return point.full_reprocess or point.cached <= cfg.max_reuse * point.prompt


def broken_by_the_rules(points: list[RequestPoint], cfg: prefix_reuse.Settings) -> bool:
    """prefix_reuse_broken's two rules read plainly over the whole group: the share of poor ones
    among the last sizeable requests, or one slot's large poor ones among its own."""
    sizeable = last_sizeable(points, cfg)
    share = len(sizeable) >= cfg.requests and sum(
        poor_reuse(p, cfg) for p in sizeable
    ) >= cfg.min_share * len(sizeable)
    slots = {p.slot for p in points}
    waste = any(
        sum(p.prompt >= cfg.large_prompt and poor_reuse(p, cfg) for p in last_sizeable(mine, cfg))
        >= cfg.waste_requests
        for mine in ([p for p in points if p.slot == slot] for slot in slots)
    )
    return share or waste


def test_prefix_reuse_detect_is_its_rules_read_plainly() -> None:
    """detect(), with its early outs (enough healthy requests among the newest), fires on exactly the
    groups its two rules, read over the whole group, find broken."""
    rng = random.Random(5)
    found = quiet = 0
    for _ in range(3000):
        cfg = prefix_reuse.Settings(
            requests=rng.choice((1, 3, 6)),
            min_prompt=rng.choice((0, 256, 4000)),
            max_reuse=rng.choice((0.0, 0.1, 0.5)),
            min_share=rng.choice((0.0, 0.5, 0.8, 1.0)),
            large_prompt=rng.choice((1, 4096)),
            waste_requests=rng.choice((1, 2, 3)),
        )
        cfg = replace(cfg, waste_requests=min(cfg.waste_requests, cfg.requests))
        poor = rng.random()
        windows = Windows(FACTS)
        for i in range(rng.randrange(1, 30)):
            windows.observe(
                SglangRequest(
                    "s",
                    T0 + i,
                    rng.choice((100, 3000, 5000, 24000)),
                    rng.choice((0, 10, 300, 2900)) if rng.random() < poor else 2900,
                    full_reprocess=rng.random() < poor / 3,
                    slot=rng.choice((0, 1, None)),
                )
            )
        [points] = windows.requests.values()
        expected = broken_by_the_rules(list(points), cfg)
        assert expected == bool(prefix_reuse.detect(windows, T0 + 30, cfg)), (list(points), cfg)
        found += expected
        quiet += not expected
    assert found > 300 and quiet > 300


def same_length(low: int, high: int, cfg: pinned_cache.Settings) -> bool:
    """Cached lengths from `low` to `high` are one length: within a block, else within `same_within`."""
    return high - low < cfg.block_size if cfg.block_size else high - low <= cfg.same_within


def gathered_run(points: list[RequestPoint], cfg: pinned_cache.Settings) -> pinned_cache.Run | None:
    """conversation_run as first written: each conversation's recent turns gathered, then each one's
    pinned tail read back from its newest turn; the longest (the first shown of those as long)."""
    conversations: dict[str, list[RequestPoint]] = {}
    for point in points[-cfg.max_requests :] if cfg.max_requests > 0 else points:
        if point.conversation:
            conversations.setdefault(point.conversation, []).append(point)
    best = None
    for name, turns in conversations.items():
        run: list[RequestPoint] = []
        last = turns[-1]
        if 0 < last.cached < last.prompt:
            low = high = last.cached
            run = [last]
            for point in reversed(turns[:-1]):
                low, high = min(low, point.cached), max(high, point.cached)
                if point.prompt >= run[-1].prompt or not same_length(low, high, cfg):
                    break
                run.append(point)
        if len(run) >= cfg.conversation_requests and (best is None or len(run) > len(best.points)):
            tolerance = cfg.block_size - 1 if cfg.block_size else cfg.same_within
            best = pinned_cache.Run(name, tuple(run[::-1]), tolerance)
    return best


def test_conversation_run_from_a_tally_finds_what_gathering_finds() -> None:
    """conversation_run, from gathered turns or from the group's tally, picks the run, and of equally
    long ones the conversation, that gathering each conversation's turns first picks (random groups:
    many conversations, ties, pins, groups longer than the window keeps)."""
    rng = random.Random(17)
    found = 0
    for _ in range(3000):
        cfg = pinned_cache.Settings(
            max_requests=rng.choice((5, 12, 50)),
            conversation_requests=rng.choice((2, 3, 4)),
            block_size=rng.choice((0, 0, 16)),
            same_within=rng.choice((0, 2, 40)),
        )
        names = rng.sample(("a", "b", "c", "d", "e"), rng.randint(1, 5))
        prompts = dict.fromkeys(names, 1000)
        points = []
        for i in range(rng.randint(0, 70)):
            name = rng.choice([*names, ""])
            prompts[name] = prompts.get(name, 1000) + rng.choice((-50, 0, 30, 200))
            cached = rng.choice((0, 512, 513, 520, 600, prompts[name] - 10, prompts[name] + 5))
            points.append(RequestPoint(float(i), prompts[name], cached, conversation=name))
        expected = gathered_run(points, cfg)
        assert expected == pinned_cache.conversation_run(points, cfg), (points, cfg)
        windows = Windows(FACTS, max_requests=rng.choice((30, 500)))  # (its tally: read from numbered turns)
        for point in points:
            windows.observe(
                RequestRecord("l", point.time, point.prompt, point.cached, conversation=point.conversation)
            )
        for labels, kept in windows.requests.items():
            tally = windows.tallies[labels]
            assert gathered_run(list(kept), cfg) == pinned_cache.conversation_run(kept, cfg, tally), (
                kept,
                cfg,
            )
        found += expected is not None
    assert found > 100


def replayed(tmp_path: Path, sample: str, first_line: int) -> str:
    """The golden-format replay of a sample log read from line `first_line` (1-based) on."""
    lines = (SAMPLES / sample).read_text().splitlines(keepends=True)
    cut = tmp_path / sample
    cut.write_text("".join(lines[first_line - 1 :]))
    assert 0 == main(["replay", "--format", "golden", "--year", "2026", str(cut)])
    return cut.name


@pytest.mark.parametrize(
    ("sample", "first_line", "fires"),
    [
        # a -lv 4 log read from the middle of task 0's prompt evaluation (its pick and reuse lines unseen):
        # one record derived from timings, then complete ones; -lv 4 it is
        ("llamacpp-healthy-two-slots.log", 188, False),
        # the same log read from its start, with the pick: nothing derived at all
        ("llamacpp-healthy-two-slots.log", 1, False),
        # default verbosity read from the middle of a request: the requests seen whole still tell
        ("llamacpp-default-verbosity.log", 13, True),
    ],
)
def test_no_signal_weighs_what_it_saw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sample: str, first_line: int, fires: bool
) -> None:
    """Default verbosity is judged on the requests seen whole, and one complete record settles it."""
    replayed(tmp_path, sample, first_line)
    out = capsys.readouterr().out
    assert fires == ("firing no_signal" in out), out
    assert "kvwatch_llamacpp_requests_total" in out  # the records themselves were read


def test_no_signal_counts_a_request_joined_midway_apart() -> None:
    """A derived record with no pick seen is a joined request; exact ones outweigh derived ones."""
    cfg = no_signal.Settings()
    joined = LlamaRequest("l", T0, 1, 0, 570, 0, 570, "unknown", derived=True)
    exact = LlamaRequest("l", T0 + 2, 0, 13, 566, 0, 566, "lru")
    whole = LlamaRequest("l", T0 + 4, 1, 26, 657, 581, 76, "lcp", 0.884, 1.0, derived=True)
    assert [] == no_signal.detect(windows_of([joined]), T0, cfg)
    assert [] == no_signal.detect(windows_of([joined, exact]), T0 + 2, cfg)
    (finding,) = no_signal.detect(windows_of([joined, whole]), T0 + 4, cfg)
    assert {"derived_requests": 1, "exact_requests": 0, "joined_requests": 1} == finding.evidence
    assert [] == no_signal.detect(windows_of([joined, whole, exact]), T0 + 4, cfg)
    # a restart (say, from default verbosity to -lv 4) forgets what the old process printed
    restarted = [whole, ServerRestart("l", T0 + 5, "llamacpp"), exact]
    assert [] == no_signal.detect(windows_of(restarted), T0 + 6, cfg)
    assert ["info"] == [
        f.severity
        for f in no_signal.detect(
            windows_of([exact, ServerRestart("l", T0 + 5, "llamacpp"), whole]), T0 + 6, cfg
        )
    ]


def turn(
    i: int, prompt: int, reused: int, pick: str = "lcp", slot: int = 0, *, reprocess: bool = False
) -> LlamaRequest:
    """One turn of an agent session on llama-server, 20 s apart, with the pick that placed it."""
    sim, keep = (round(reused / prompt, 3), 1.0) if pick == "lcp" else (None, None)
    seconds = round((prompt - reused) / 440.0, 3)  # incident 4's pace: 24k tokens in 55 s
    return LlamaRequest(
        "l", T0 + 20 * i, slot, 100 + 13 * i, prompt, reused, prompt - reused, pick,  # type: ignore[arg-type]
        sim_best=sim, f_keep=keep, full_reprocess=reprocess, prompt_eval_seconds=seconds,
    )  # fmt: skip


def healthy(start: int, prompts: list[int], slot: int = 0) -> list[Event]:
    """Turns that reuse the whole previous prompt (and its reply), as a working cache does."""
    return [
        turn(start + k, p, prompts[k - 1] + 25 if k else p - 40, slot=slot) for k, p in enumerate(prompts)
    ]


#: Incident 4: ~24.5k-token prompts, 30-50 new tokens a turn, 21 tokens reused, the slot picked by LRU.
SEED = [24479 + 37 * k for k in range(6)]


def seed_turns(count: int, start: int = 0, slot: int = 0) -> list[Event]:
    """The seeds' shape: every turn re-processes the whole prompt but the 21 tokens before the header."""
    return [turn(start + k, SEED[k], 21, "lru", slot) for k in range(count)]


@pytest.mark.parametrize(
    ("case", "events", "expected"),
    [
        ("seeds, two turns", seed_turns(2), []),
        ("seeds, three turns", seed_turns(3), ["prefix_reuse_broken"]),
        ("seeds, five turns", seed_turns(5), ["prefix_reuse_broken"]),
        # SWA model: `forcing full prompt re-processing`, nothing reused, three times
        (
            "swa, three turns",
            [turn(k, 24000 + 40 * k, 0, "lru", reprocess=True) for k in range(3)],
            ["prefix_reuse_broken"],
        ),
        # a session reusing its previous turn, then /compact: one cold large prompt, then healthy again
        (
            "isolated compaction",
            [*healthy(0, [30000, 30400, 30900]), turn(3, 9800, 0, "lru"), *healthy(4, [10300, 10800])],
            [],
        ),
        # an MCP server adds tools: the tool list leads the prompt, so one turn reuses almost nothing
        (
            "tool-list change",
            [*healthy(0, [20000, 20300]), turn(2, 21900, 45), *healthy(3, [22200, 22600, 23000])],
            [],
        ),
        # both in one window: two full re-processings stay below three
        (
            "compaction and tool change",
            [
                *healthy(0, [30000]),
                turn(1, 9800, 0, "lru"),
                *healthy(2, [10300]),
                turn(3, 12100, 45),
                *healthy(4, [12500, 12900]),
            ],
            [],
        ),
        # two users on two slots: two broken turns on slot 0 and one on slot 1 are no slot's third
        ("spread over slots", [*seed_turns(2), *seed_turns(1, start=2, slot=1)], []),
        # small prompts re-processed in full waste little
        ("small prompts", [turn(k, 3000 + 40 * k, 21, "lru") for k in range(3)], []),
    ],
)
def test_prefix_reuse_broken_by_waste(case: str, events: list[Event], expected: list[str]) -> None:
    """The third full re-processing of a large prompt on one slot fires; one or two after a change do not."""
    assert expected == fires(prefix_reuse.detect, events, prefix_reuse.Settings())


def test_prefix_reuse_broken_by_waste_says_so() -> None:
    """The evidence names the rule, the slot and the numbers; `large_prompt` sets what is large."""
    (finding,) = prefix_reuse.detect(windows_of(seed_turns(3)), T0 + 40, prefix_reuse.Settings())
    assert {
        "rule": "waste",
        "slot": 0,
        "requests": 3,
        "large_prompt": 4096,
        "wasted_requests": 3,
        "reused_tokens": [21, 21, 21],
        "prompt_tokens": SEED[:3],
        "reprocessed_tokens": sum(SEED[:3]) - 63,
        "reuse_ratio": round(63 / sum(SEED[:3]), 4),
        "full_reprocess": 0,
        "lru_selections": 3,
        "derived_from_timings": False,
    } == finding.evidence
    assert finding.summary.startswith("3 of the last 3 prompts on slot 0 were large and re-processed in full")
    assert [] == fires(prefix_reuse.detect, seed_turns(3), prefix_reuse.Settings(large_prompt=30000))
    (six,) = prefix_reuse.detect(windows_of(seed_turns(6)), T0 + 100, prefix_reuse.Settings())
    assert "share" == six.evidence["rule"]  # six poor prompts of six: the first rule, as before


#: An agent session pinned at 943 tokens (the prompt changes right after them) with prompts of 1.1k-1.6k.
PINNED = [1102, 1240, 1385, 1511, 1598]


def pinned_session(turns: int, cached: list[int] | None = None) -> list[Event]:
    """A cold first turn, then turns placed on slot 0 by similarity that reuse 943 tokens each."""
    reused = cached or [943] * (turns - 1)
    return [turn(0, 1060, 0, "lru"), *(turn(k + 1, PINNED[k], reused[k]) for k in range(turns - 1))]


@pytest.mark.parametrize(
    ("case", "events", "expected"),
    [
        ("pinned, two turns at 943", pinned_session(3), []),
        ("pinned, three turns at 943", pinned_session(4), ["pinned_cache_length"]),
        ("pinned, four turns at 943", pinned_session(5), ["pinned_cache_length"]),
        ("within 2 tokens", pinned_session(4, [943, 945, 944]), ["pinned_cache_length"]),
        ("3 tokens apart", pinned_session(4, [943, 946, 944]), []),
        # a healthy session reuses its previous turn: the cached length grows with the prompt
        ("healthy session", healthy(0, [1102, 1240, 1385, 1511, 1598]), []),
        # the prompt does not grow: the same request retried is no conversation moving on
        ("retried", [turn(0, 1060, 0, "lru"), *(turn(k, 1240, 943) for k in range(1, 4))], []),
        # an LRU pick is no evidence of one conversation: each may be another user's first turn
        ("lru picks", [turn(0, 1060, 0, "lru"), *(turn(k + 1, PINNED[k], 943, "lru") for k in range(4))], []),
        # many users behind one 943-token system prompt on two slots: each newcomer reuses the system
        # prompt, each user's next turns their own history
        (
            "shared system prompt across users",
            [
                *healthy(0, [1102, 1240]),
                turn(2, 1188, 943, slot=1),
                turn(3, 1450, 1213, slot=1),
                turn(4, 1050, 943),
                turn(5, 1300, 1075),
                turn(6, 1120, 943, slot=1),
                turn(7, 1390, 1145, slot=1),
                turn(8, 1260, 943),
                turn(9, 1500, 1285),
            ],
            [],
        ),
    ],
)
def test_pinned_cache_length_in_one_conversation(case: str, events: list[Event], expected: list[str]) -> None:
    """Three turns of one conversation on the same length while the prompt grows fire, whatever C / prompt."""
    assert expected == fires(pinned_cache.detect, events, pinned_cache.Settings())


def test_pinned_cache_length_in_one_conversation_says_so() -> None:
    """The evidence names the rule and the conversation and shows the lengths; the metric shows C."""
    from kvwatch.metrics.derived import PinnedCollector

    windows = windows_of(pinned_session(4))
    (finding,) = pinned_cache.detect(windows, T0 + 60, pinned_cache.Settings())
    assert {
        "rule": "conversation",
        "conversation": "slot 0 #1",
        "cached_tokens": 943,
        "blocks": "943 (not a multiple of 16)",
        "requests": 3,
        "cached_lengths": [943, 943, 943],
        "prompt_tokens": PINNED[:3],
        "same_within_tokens": 2,
        "mean_prompt_tokens": round(sum(PINNED[:3]) / 3, 1),
        "measured_hit_rate": round(3 * 943 / sum(PINNED[:3]), 4),
    } == finding.evidence
    assert "3 consecutive requests of one conversation (slot 0 #1) reused 943 tokens each" in finding.summary
    (tokens, _) = PinnedCollector(windows, pinned_cache.Settings).collect()
    assert [943.0] == [s.value for s in tokens.samples]
    # with a known block size, lengths within one block are one length
    blocky = pinned_session(4, [936, 943, 950])
    assert [] == fires(pinned_cache.detect, blocky, pinned_cache.Settings())
    assert ["pinned_cache_length"] == fires(pinned_cache.detect, blocky, pinned_cache.Settings(block_size=16))


def test_pinned_cache_length_without_a_known_conversation_keeps_the_share_rule() -> None:
    """Gateway records carry no conversation: three pinned growing requests are not enough there."""
    assert [] == fires(pinned_cache.detect, usage_day([943] * 4, PINNED[:4]), pinned_cache.Settings())


@pytest.mark.parametrize("seed", range(4))
def test_prefix_reuse_reads_each_slot_as_a_scan_of_the_group_would(seed: int) -> None:
    """prefix_reuse_broken's per-slot reading, from the window's slot index through evictions, finds
    what its rules read over the whole group kept find."""
    rng = random.Random(seed)
    windows = Windows(FACTS, max_requests=rng.choice((10, 100, 500)))
    for i in range(1500):
        slot = rng.choice((0, 1, 2, 3, None)) if rng.random() < 0.9 else rng.randrange(100)
        windows.observe(SglangRequest("l", T0 + i, rng.randrange(1, 6000), rng.randrange(0, 600), slot=slot))
        if i % 50 == 0:
            requests = rng.randrange(1, 9)
            cfg = prefix_reuse.Settings(
                requests=requests,
                min_prompt=rng.choice((0, 256, 3000, 7000)),
                min_share=rng.choice((0.5, 1.0)),
                waste_requests=rng.randrange(1, requests + 1),
            )
            [points] = windows.requests.values()
            expected = broken_by_the_rules(list(points), cfg)
            assert expected == bool(prefix_reuse.detect(windows, T0 + i, cfg)), (i, cfg)


def random_session(rng: random.Random, count: int) -> list[Event]:
    """Requests on three slots and a gateway, in phases of pinned, broken and healthy reuse, with ticks'
    worth of silence, block-size facts, restarts and settings that change: every input of the request
    detectors moves."""
    events: list[Event] = []
    t, prompt, mode = 0.0, 2000, "pinned"
    for i in range(count):
        if i % 40 == 0:
            mode = rng.choice(("pinned", "broken", "healthy"))
        t += rng.choice((0.0, 3.0, 10.0, 25.0, 60.0))
        prompt = prompt + rng.randrange(10, 400) if prompt < 30000 else 2000
        cached = {"pinned": 1024, "broken": 21, "healthy": prompt - rng.randrange(20, 60)}[mode]
        pick = rng.random()
        if pick < 0.75:
            slot = rng.choice((0, 0, 1, 2))
            events.append(
                LlamaRequest(
                    "l",
                    T0 + t,
                    slot,
                    i,
                    prompt,
                    cached,
                    prompt - cached,
                    "lcp" if mode == "healthy" else "lru",
                    full_reprocess=mode == "broken" and rng.random() < 0.7,
                )
            )
        elif pick < 0.9:
            events.append(UsageRecord("g", T0 + t, "/v1/messages", "m", prompt, cached))
        elif pick < 0.95:
            events.append(EngineFact("l", T0 + t, "block_size", rng.choice(("16", "64", "256"))))
        elif pick < 0.97:
            events.append(ServerRestart("l", T0 + t, "llamacpp"))
        else:
            events.append(EngineFact("l", T0 + t, "version", "b1"))  # (a fact no request detector reads)
    return events


@pytest.mark.parametrize("seed", range(5))
def test_a_memo_changes_no_tick(seed: int) -> None:
    """detect_all with a memo (the request detectors asked only when their windows changed) finds at
    every tick what it finds without one, whatever changed in between; both request alerts fire."""
    from kvwatch.detectors import DetectorSettings, Memo, detect_all
    from kvwatch.windows.window import Windows

    rng = random.Random(seed)
    windows, memo = Windows(FACTS, max_requests=rng.choice((20, 500))), Memo()
    settings = [
        DetectorSettings(),
        DetectorSettings(prefix_reuse_broken=prefix_reuse.Settings(requests=4, waste_requests=2)),
        DetectorSettings(pinned_cache_length=pinned_cache.Settings(min_requests=4, max_requests=12)),
    ]
    fired: set[str] = set()
    now, chosen = T0, settings[0]
    for event in random_session(rng, 1500):
        while now + 10 <= event.time:  # every tick up to the event, as Pipeline.advance runs them
            now += 10
            expected = detect_all(windows, now, chosen)
            assert expected == detect_all(windows, now, chosen, memo)
            fired |= {f.alert for f in expected}
        windows.observe(event)
        if rng.random() < 0.02:
            chosen = rng.choice(settings)
        if rng.random() < 0.003:
            windows.forget(rng.choice(("l", "g")))
    assert {"pinned_cache_length", "prefix_reuse_broken"} <= fired


def test_a_memo_changes_no_tick_of_any_sample(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Replaying every sample, each tick's findings with the pipeline's memo are those without it."""
    import kvwatch.pipeline
    from kvwatch.detectors import detect_all

    ticks = []

    def checked(windows, now, settings, memo=None):  # type: ignore[no-untyped-def]
        found = detect_all(windows, now, settings, memo)
        assert found == detect_all(windows, now, settings)
        ticks.append(bool(found))
        return found

    monkeypatch.setattr(kvwatch.pipeline, "detect_all", checked)
    logs = sample_logs()
    for log in logs:
        assert 0 == main(["replay", "--format", "golden", "--year", "2026", str(log)])
    capsys.readouterr()
    assert len(logs) >= 40 and len(ticks) > 1000 and sum(ticks) > 100


def _inversions(points: Iterable[StatsPoint] | Iterable[KvPoint]) -> int:
    """How many adjacent points of a deque are out of time order."""
    return sum(1 for a, b in pairwise(points) if b.time < a.time)


@pytest.mark.parametrize("seed", range(30))
def test_write_only_offload_shortcut_finds_what_judging_in_full_finds(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Engines fed through Windows.observe (lines in time order or not, several a point, loads and
    External hits rare or frequent, points leaving by the horizon and by the count, restarts): the
    order count and the newest marks the windows keep are right, and write_only_offload finds at
    every line what judging every engine in full finds (its shortcut from those marks, or its walks
    when points are out of order, hides no finding)."""
    import kvwatch.windows.window

    rng = random.Random(seed)
    monkeypatch.setattr(kvwatch.windows.window, "MAX_POINTS", rng.choice((6, 40, 4096)))
    windows = Windows(FACTS, horizon=rng.choice((60.0, 400.0, 3600.0)))
    cfgs = [
        write_only_offload.Settings(min_intervals=n, min_prompt_throughput=p)
        for n in (0, 1, 3, 24)
        for p in (1.0, 100.0)
    ]
    loads, hits, shuffled = rng.random() * 0.3, rng.random() * 0.2, rng.random() < 0.3
    time, verdicts = T0, set()
    for _ in range(600):
        time += rng.uniform(-40, 30) if shuffled and rng.random() < 0.3 else rng.choice((0.0, 1.0, 10.0))
        engine = rng.choice(("0", "0", "1"))
        pick = rng.random()
        if pick < 0.5:
            external = rng.choice((None, 0.0, 0.0, -1.0)) if rng.random() >= hits else 12.5
            windows.observe(stats(time, rng.choice((0.0, 0.5, 1.0, 200.0, 3000.0)), external, engine))
        elif pick < 0.995:
            # (no negative bytes: the parsers refuse them)
            load = rng.choice((0, None)) if rng.random() >= loads else 4096
            windows.observe(kv(time, rng.choice((2_500_000_000, None)), load, engine))
        else:
            windows.observe(ServerRestart("v", time, "vllm"))
        for eng in windows.sources["v"].engines.values():
            assert eng.disorder == _inversions(eng.stats) + _inversions(eng.kv)
            loaded = [k for k in eng.kv if k.load > 0]
            if eng.loaded is None:
                assert not loaded
            elif eng.loaded.load > 0:
                assert eng.loaded is loaded[-1]
            else:  # (negative bytes took its load back: the verdict walks then)
                assert any(k is eng.loaded for k in eng.kv)
            hit = [s for s in eng.stats if s.external_lines and s.external_max > 0]
            assert eng.external is (hit[-1] if hit else None)
            assert all(isinstance(p, StatsPoint) for p in eng.stats)
            assert all(isinstance(k, KvPoint) for k in eng.kv)
        for cfg in cfgs:
            expected = write_only_offload.detect(windows, time, cfg, full=True)
            assert expected == write_only_offload.detect(windows, time, cfg)
            verdicts.add(bool(expected))
    assert {True, False} == verdicts


def _without_notes(
    windows: Windows, detect: Callable[[Windows, float, Any], list[Finding]], now: float, cfg: object
) -> list[Finding]:
    """What `detect` finds judging every group in full (the tallies' notes put aside meanwhile)."""
    kept = {labels: tally.notes for labels, tally in windows.tallies.items()}
    for tally in windows.tallies.values():
        tally.notes = {}
    try:
        return detect(windows, now, cfg)
    finally:
        for labels, notes in kept.items():
            windows.tallies[labels].notes = notes


@pytest.mark.parametrize("seed", range(8))
def test_prefix_reuse_notes_never_hide_a_finding(seed: int) -> None:
    """prefix_reuse_broken with its notes (a group found healthy is judged again only when the points
    since could make it fire) finds after every request what judging every group in full finds:
    phases of broken, pinned and healthy reuse on several slots, large and small prompts, restarts,
    groups that keep fewer points than the rules read, settings that change."""
    rng = random.Random(seed)
    windows = Windows(FACTS, max_requests=rng.choice((4, 20, 500)))
    configs = [
        prefix_reuse.Settings(),
        prefix_reuse.Settings(requests=4, waste_requests=2, large_prompt=3000, min_prompt=1500),
        prefix_reuse.Settings(requests=1, waste_requests=1, min_share=0.5),
        prefix_reuse.Settings(requests=9, max_reuse=0.3),
    ]
    cfg, fired = rng.choice(configs), Counter[str]()
    for logged in random_session(rng, 1500):
        event = logged
        if isinstance(logged, LlamaRequest) and rng.random() < 0.3:
            event = replace(logged, prompt_tokens=rng.choice((100, 2000, 5000, 30000)))
        windows.observe(event)
        if rng.random() < 0.02:
            cfg = rng.choice(configs)
        found = prefix_reuse.detect(windows, event.time, cfg)
        assert found == _without_notes(windows, prefix_reuse.detect, event.time, cfg)
        fired.update(str(f.evidence["rule"]) for f in found)
    assert fired["share"] and fired["waste"]


@pytest.mark.parametrize("seed", range(8))
def test_pinned_cache_notes_never_hide_a_conversation_run(seed: int) -> None:
    """pinned_cache_length with its notes (a group without a long enough run is judged again only for
    the conversations of the points since) finds after every request what judging every group in full
    finds: conversations pinned and healthy, interleaved, slots, restarts, block sizes, groups that keep
    few points, settings that change."""
    rng = random.Random(seed)
    windows = Windows(FACTS, max_requests=rng.choice((6, 40, 500)))
    configs = [
        pinned_cache.Settings(),
        pinned_cache.Settings(max_requests=8, conversation_requests=2),
        pinned_cache.Settings(max_requests=3, same_within=40),
        pinned_cache.Settings(block_size=16, conversation_requests=4),
    ]
    cfg, fired = rng.choice(configs), Counter[str]()
    prompts: dict[str, int] = {}
    pinned: dict[str, int] = {}
    t = T0
    for i in range(1500):
        t += rng.choice((0.0, 5.0, 30.0))
        name = rng.choice(("a", "b", "c", "d", "e", "f", ""))
        if rng.random() < 0.1:
            pinned[name] = rng.choice((0, 512, 1024)) if name not in pinned else pinned.pop(name)
        prompts[name] = prompts.get(name, 800) + rng.choice((300, 600, -100)) if rng.random() < 0.95 else 800
        cached = pinned.get(name) or max(0, prompts[name] - rng.choice((20, 300, 2000)))
        cached += rng.choice((0, 0, 0, 1, 3))
        pick = rng.random()
        if pick < 0.01:
            windows.observe(ServerRestart("l", t, "llamacpp"))
        elif pick < 0.03:
            windows.observe(EngineFact("l", t, "block_size", rng.choice(("16", "64"))))
        else:
            slot = rng.choice((0, 1))
            windows.observe(RequestRecord("l", t, prompts[name], cached, slot=slot, conversation=name))
        if rng.random() < 0.02:
            cfg = rng.choice(configs)
        found = pinned_cache.detect(windows, t, cfg)
        assert found == _without_notes(windows, pinned_cache.detect, t, cfg), i
        fired.update(str(f.evidence["rule"]) for f in found)
    assert fired["conversation"]


def _never_hits_plainly(windows: Windows, cfg: prefix_cache_disabled.Settings) -> list[str]:
    """The sources prefix_cache_disabled's `never_hits` rule finds, as its text reads it (no precheck)."""
    found = []
    for source, win in sorted(windows.sources.items()):
        points = windows.requests.get((("source", source),))
        if win.facts.get("prefix_cache") != "enabled" or not points or len(points) < cfg.min_requests:
            continue
        recent = list(points)[-cfg.min_requests :]
        if not any(p.cached for p in recent) and all(p.prompt >= cfg.min_prompt for p in recent):
            found.append(source)
    return found


@pytest.mark.parametrize("seed", range(5))
def test_prefix_cache_disabled_precheck_never_hides_a_finding(seed: int) -> None:
    """The newest request's precheck leaves prefix_cache_disabled's never-hits verdict as reading the
    recent requests finds it (cached or short requests rare or frequent, small or no minimums)."""
    rng = random.Random(seed)
    windows = Windows(FACTS, max_requests=rng.choice((5, 50)))
    windows.observe(EngineFact("o", T0, "prefix_cache", "enabled"))
    hits, short, verdicts = rng.random() * 0.2, rng.random() * 0.2, Counter[bool]()
    for i in range(600):
        cached = rng.choice((0, 512)) if rng.random() < hits else 0
        prompt = 100 if rng.random() < short else 4000
        windows.observe(RequestRecord("o", T0 + i, prompt, cached))
        cfg = prefix_cache_disabled.Settings(min_requests=rng.choice((0, 1, 5, 20)), min_prompt=1024)
        found = [dict(f.labels)["source"] for f in prefix_cache_disabled.detect(windows, T0 + i, cfg)]
        assert found == _never_hits_plainly(windows, cfg)
        verdicts[bool(found)] += 1
    assert verdicts[True] and verdicts[False]


def test_a_stats_point_of_one_line_is_one_with_the_line_added() -> None:
    """StatsPoint.of(line) holds what StatsPoint(line.time) holds after add(line) (random lines: fields
    missing, zero, negative or NaN)."""
    rng = random.Random(13)
    values = (None, 0.0, -1.0, 0.4, 1.0, 250.0, math.nan)
    for _ in range(3000):
        prompt = rng.choice((0.0, -2.0, 3.5, 900.0, math.nan))
        line = VllmStats(
            "v", T0, "0", prompt, 5.0, 1, 0, rng.choice(values), rng.choice(values), rng.choice(values)
        )
        added = StatsPoint(line.time)
        added.add(line)
        assert repr(StatsPoint.of(line)) == repr(added)


CLAUDE_TURNS = [21000 + 900 * i for i in range(12)]


@pytest.mark.parametrize(
    ("case", "events", "expected"),
    [
        # Claude Code's <total_tokens> reminder: the break point moves ~13 tokens a turn
        (
            "token reminder",
            llama(CLAUDE_TURNS, [14_000 + 13 * i for i in range(12)]),
            ["pinned_cache_length"],
        ),
        # the same break point through a gateway's usage log
        (
            "reminder via gateway",
            usage_day([14_000 + 13 * i for i in range(12)], CLAUDE_TURNS),
            ["pinned_cache_length"],
        ),
        # healthy turns: the cached length follows the previous prompt
        ("healthy", llama(CLAUDE_TURNS, [0] + [p - 30 for p in CLAUDE_TURNS[:-1]]), []),
        # prompts that do not grow (a shared prefix of unrelated requests, slowly varying)
        (
            "flat prompts",
            llama([30_000 + (i % 3) * 50 for i in range(12)], [14_000 + 13 * i for i in range(12)]),
            [],
        ),
        # a cached length that jumps (two conversations interleaved)
        ("jumping", llama(CLAUDE_TURNS, [14_000 if i % 2 else 2_000 for i in range(12)]), []),
        # short prompts sent again, all but their last token cached (full hits: no break point), then
        # three long unrelated prompts (SGLang 0.5.16's benchmark, tests/wild): no creep to judge
        (
            "full hits",
            llama(
                [48, 73, 67, 81, 91, 101, 111, 4689, 4658, 4720],
                [1, 72, 66, 80, 90, 100, 110, 37, 46, 46],
            ),
            [],
        ),
    ],
)
def test_pinned_cache_length_creeping_break_point(
    case: str, events: list[Event], expected: list[str]
) -> None:
    """pinned_cache_length fires when the break point creeps slowly while prompts grow fast, and only then."""
    assert expected == fires(pinned_cache.detect, events, pinned_cache.Settings())


def test_pinned_cache_length_creep_names_its_rate_and_the_token_reminder_fix() -> None:
    """The creep finding gives the creep rate as evidence and names the token reminder and its setting."""
    events = llama(CLAUDE_TURNS, [14_000 + 13 * i for i in range(12)])
    (finding,) = pinned_cache.detect(windows_of(events), T0 + 20, pinned_cache.Settings())
    assert ("creep", 13.0) == (finding.evidence["rule"], finding.evidence["creep_tokens_per_request"])
    assert "<total_tokens>" in finding.cause and "CLAUDE_CODE_TOTAL_TOKENS_REMINDER=off" in finding.fix
    for cause in ("x-anthropic-billing-header", "timestamp", "order", "sliding-window"):
        assert cause in finding.cause
