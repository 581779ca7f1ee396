"""Detectors on usage records: hit_rate_gap, usage_double_counting, and pinned_cache_length per entry."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from kvwatch.detectors import DetectorSettings, detect_all, double_counting, hit_rate_gap, pinned_cache
from kvwatch.engines import FACTS
from kvwatch.model import Finding, UsageRecord
from kvwatch.windows.usages import ENTRY_BYTES, GROUP_BYTES, RECENT, UsageWindows
from kvwatch.windows.window import Windows

T0 = 1787043600.0  # 2026-08-18T09:00:00Z
MSG, CHAT, RESP = "/v1/messages", "/v1/chat/completions", "/v1/responses"


def windows_of(records: Sequence[UsageRecord]) -> Windows:
    """Windows fed with records in time order."""
    windows = Windows(FACTS)
    for r in sorted(records, key=lambda r: r.time):
        windows.observe(r)
    return windows


def run(
    detect: Callable[[Windows, float, Any], list[Finding]], records: Sequence[UsageRecord], cfg: object
) -> list[Finding]:
    """Findings at the last record's time."""
    return detect(windows_of(records), max(r.time for r in records), cfg)


def traffic(
    entry: str, rate: float, n: int, *, model: str = "m", start: float = T0, every: float = 60.0
) -> list[UsageRecord]:
    """`n` requests of 100k prompt tokens with `rate` of them cached."""
    return [
        UsageRecord("gw", start + i * every, entry, model, 100000, round(rate * 100000)) for i in range(n)
    ]


# ---------------------------------------------------------------------------------------------
# hit_rate_gap
# ---------------------------------------------------------------------------------------------

GAP_CASES = [
    # incident 1: the low entry fires, the high one does not
    ("incident-1", traffic(MSG, 0.1596, 30) + traffic(CHAT, 0.9311, 30), [MSG]),
    # the day after the fix: 83% vs 93%
    ("after-fix", traffic(MSG, 0.83, 30) + traffic(CHAT, 0.93, 30), []),
    # a handful of cold requests is not a rate
    ("too-few-low", traffic(MSG, 0.1596, 19) + traffic(CHAT, 0.9311, 30), []),
    # different models are not compared
    ("other-model", traffic(MSG, 0.15, 30, model="a") + traffic(CHAT, 0.93, 30, model="b"), []),
    ("one-entry", traffic(MSG, 0.15, 40), []),
    # the low entry's traffic is older than the window
    ("outside-window", traffic(MSG, 0.15, 30) + traffic(CHAT, 0.93, 30, start=T0 + 5400), []),
    # a gap of 0.35 but 0.55 is more than half of 0.9
    ("ratio-not-low", traffic(MSG, 0.55, 30) + traffic(CHAT, 0.90, 30), []),
    # thresholds are inclusive: gap exactly 0.3 and ratio exactly 0.5
    ("edge-inclusive", traffic(MSG, 0.3, 30) + traffic(CHAT, 0.6, 30), [MSG]),
    ("two-low", traffic(MSG, 0.15, 30) + traffic(RESP, 0.2, 30) + traffic(CHAT, 0.93, 30), [MSG, RESP]),
]


@pytest.mark.parametrize(("records", "expected"), [c[1:] for c in GAP_CASES], ids=[c[0] for c in GAP_CASES])
def test_hit_rate_gap_table(records: list[UsageRecord], expected: list[str]) -> None:
    """The low entries of a source and model are flagged, each against the best entry."""
    findings = run(hit_rate_gap.detect, records, hit_rate_gap.Settings())
    assert expected == [dict(f.labels)["entry"] for f in findings]


def test_hit_rate_gap_evidence_names_both_entries() -> None:
    """15.96% vs 93.11%: labels source/entry/model, evidence with both rates and request counts."""
    (finding,) = run(hit_rate_gap.detect, GAP_CASES[0][1], hit_rate_gap.Settings())
    evidence = {k: finding.evidence[k] for k in ("low_entry", "low_hit_rate", "low_requests", "high_entry")}
    evidence |= {k: finding.evidence[k] for k in ("high_hit_rate", "high_requests")}
    expected = {
        "low_entry": MSG,
        "low_hit_rate": 0.1596,
        "low_requests": 30,
        "high_entry": CHAT,
        "high_hit_rate": 0.9311,
        "high_requests": 30,
    }
    assert (expected, {"source": "gw", "entry": MSG, "model": "m"}) == (evidence, dict(finding.labels))
    assert (True, True) == ("15.96%" in finding.summary, "93.11%" in finding.summary)


def test_hit_rate_gap_can_be_disabled() -> None:
    """enabled = false: no findings."""
    assert [] == run(hit_rate_gap.detect, GAP_CASES[0][1], hit_rate_gap.Settings(enabled=False))


# ---------------------------------------------------------------------------------------------
# usage_double_counting
# ---------------------------------------------------------------------------------------------


def session(
    n: int,
    *,
    double: bool,
    start: int = 30000,
    pinned: int = 0,
    upstream: bool = False,
    t0: float = T0,
    every: float = 40.0,
    seed: int = 1,
) -> list[UsageRecord]:
    """A Claude Code session through a gateway in front of vLLM (no cache creation reported)."""
    rng = random.Random(seed)
    out, prompt, previous = [], start, 0
    for i in range(n):
        prompt += rng.randint(600, 4800)
        cached = pinned or (previous // 64 * 64 if previous else 19200)
        told = prompt if double else prompt - cached
        out.append(
            UsageRecord(
                "gw",
                t0 + i * every,
                MSG,
                "m",
                prompt if upstream else told + cached,
                cached,
                input_tokens=told,
                upstream_prompt_tokens=prompt if upstream else None,
            )
        )
        previous = prompt
    return out


def claude_code_correct(n: int) -> list[UsageRecord]:
    """Anthropic's own accounting in a long conversation: tiny input, growing cache reads, some writes."""
    rng = random.Random(7)
    out, context = [], 22000
    for i in range(n):
        created, uncached = rng.randint(300, 5200), rng.randint(1, 12)
        out.append(
            UsageRecord("gw", T0 + 30 * i, MSG, "m", context + created + uncached, context, created, uncached)
        )
        context += created + uncached
    return out


def partial_evictions(n: int) -> list[UsageRecord]:
    """Correct accounting on a cache that keeps a random 20-60% of a growing prompt."""
    rng = random.Random(11)
    out = []
    for i in range(n):
        prompt = 40000 + 2500 * i
        read = prompt * rng.randint(20, 60) // 100
        out.append(UsageRecord("gw", T0 + 30 * i, MSG, "m", prompt, read, input_tokens=prompt - read))
    return out


def interleaved_with_compaction() -> list[UsageRecord]:
    """Two double-counted sessions at once, each compacting (prompt back to ~30k) half way."""
    first = session(20, double=True, seed=2) + session(20, double=True, seed=3, t0=T0 + 800)
    second = session(20, double=True, start=60000, seed=4, t0=T0 + 20) + session(
        20, double=True, seed=5, t0=T0 + 820
    )
    return first + second


DOUBLE_CASES = [
    ("double-counted", session(30, double=True), "pattern"),
    ("correct-claude-code", claude_code_correct(60), None),
    ("correct-on-pinned-cache", session(30, double=False, start=40000, pinned=17920), None),
    # without the upstream count, double counting on a pinned cache cannot be told apart
    ("double-on-pinned-cache", session(30, double=True, start=40000, pinned=17920), None),
    ("interleaved-compacting", interleaved_with_compaction(), "pattern"),
    ("upstream-equal", session(3, double=True, upstream=True), "upstream"),
    ("upstream-correct", session(30, double=False, upstream=True), None),
    ("too-few", session(9, double=True), None),
    ("partial-evictions", partial_evictions(40), None),
    (
        "openai-shaped",
        [UsageRecord("gw", T0 + i, MSG, "m", 50000 + i * 900, 40000 + i * 850) for i in range(30)],
        None,
    ),
]


@pytest.mark.parametrize(("records", "rule"), [c[1:] for c in DOUBLE_CASES], ids=[c[0] for c in DOUBLE_CASES])
def test_double_counting_table(records: list[UsageRecord], rule: str | None) -> None:
    """Fires (with the rule that decided) on double-counted usage only."""
    findings = run(double_counting.detect, records, double_counting.Settings())
    assert ([rule] if rule else []) == [f.evidence["rule"] for f in findings]


def test_double_counting_alert_explains_compaction_and_the_formula() -> None:
    """The alert names Claude Code's auto-compaction and input = prompt - cache_read - cache_creation."""
    (finding,) = run(double_counting.detect, session(30, double=True), double_counting.Settings())
    example = finding.evidence["examples"][-1]
    assert ("usage_double_counting", {"source": "gw", "entry": MSG, "model": "m"}) == (
        finding.alert,
        dict(finding.labels),
    )
    formula = "input_tokens = prompt_tokens - cache_read - cache_creation (floor 0)"
    actual = ("auto-compaction" in finding.cause, "compacts early" in finding.cause, formula in finding.fix)
    assert (True, True, True) == actual
    expected = example["input_tokens"] - example["cache_read_input_tokens"]
    assert expected == example["correct_input_tokens"]


def test_rank_correlation_edges() -> None:
    """Constant or too-short sequences correlate 0; identical orders correlate 1."""
    rc = double_counting.rank_correlation
    assert [0.0, 0.0, 1.0] == [rc([5, 5, 5], [1, 2, 3]), rc([1, 2], [1, 2]), rc([1, 3, 2], [10, 30, 20])]


# ---------------------------------------------------------------------------------------------
# pinned_cache_length on usage records (grouped by source and entry)
# ---------------------------------------------------------------------------------------------


def incident_day(n: int) -> list[UsageRecord]:
    """/v1/messages prompts growing 40k -> 180k, cached pinned at 17920 except a few cold requests."""
    return [
        UsageRecord("gw", T0 + 60 * i, MSG, "m", 40000 + 140000 * i // (n - 1), 0 if i % 40 == 0 else 17920)
        for i in range(n)
    ]


def fixed_day() -> list[UsageRecord]:
    """After the fix: 5x 0, 4x 256, 3x <64k, 14x 64-128k, 28x >128k cached, consecutive turns ~99%."""
    rng = random.Random(5)
    cached = [0] * 5 + [256] * 4 + [19200, 40960, 61440]
    cached += [rng.randint(66000, 130000) // 64 * 64 for _ in range(14)]
    cached += [rng.randint(132000, 200000) // 64 * 64 for _ in range(28)]
    rng.shuffle(cached)
    return [
        UsageRecord("gw", T0 + 60 * i, MSG, "m", max(c * 100 // 99, 1000), c) for i, c in enumerate(cached)
    ]


def test_pinned_fires_on_an_incident_1_day_of_usage_records() -> None:
    """C = 17920 = 280 x 64, labelled by source and entry; implied hit rate = C / mean prompt."""
    (finding,) = run(pinned_cache.detect, incident_day(60), pinned_cache.Settings())
    evidence = finding.evidence
    implied = round(17920 / evidence["mean_prompt_tokens"], 4)
    expected = ({"source": "gw", "entry": MSG}, 17920, "17920 = 280 x 64", implied)
    assert expected == (
        dict(finding.labels),
        evidence["cached_tokens"],
        evidence["blocks"],
        evidence["implied_hit_rate"],
    )


def test_pinned_implied_rate_over_the_whole_day_is_the_incident_figure() -> None:
    """Implied rate: 17920 / 110000 = 16.3% over all 451 requests, ~10.4% over the default last 50."""
    records = incident_day(451)
    whole = run(pinned_cache.detect, records, pinned_cache.Settings(max_requests=451))
    recent = run(pinned_cache.detect, records, pinned_cache.Settings())
    actual = (whole[0].evidence["implied_hit_rate"], recent[0].evidence["implied_hit_rate"])
    assert (0.1629, 0.104) == actual


def test_pinned_is_silent_the_day_after_the_fix() -> None:
    """Cached lengths spread from 0 to 200k: no pinned length."""
    assert [] == run(pinned_cache.detect, fixed_day(), pinned_cache.Settings())


def test_detect_all_runs_the_usage_detectors() -> None:
    """The registry of detectors includes hit_rate_gap and usage_double_counting with their defaults."""
    records = GAP_CASES[0][1] + session(30, double=True, t0=T0 + 10, every=55)
    windows = windows_of(records)
    names = sorted({f.alert for f in detect_all(windows, max(r.time for r in records), DetectorSettings())})
    assert ["hit_rate_gap", "usage_double_counting"] == names


# ---------------------------------------------------------------------------------------------
# the usage part of the windows
# ---------------------------------------------------------------------------------------------


def test_usage_windows_keep_one_horizon_per_source_and_model() -> None:
    """Records older than the horizon (relative to the group's newest) are dropped; models apart."""
    records = traffic(MSG, 0.5, 3, model="a", every=3000) + traffic(MSG, 0.5, 2, model="b")
    windows = windows_of(records)
    actual = {
        key: [s - T0 for s in usage.seconds]
        for key, group in windows.usage.sorted()
        for usage in group.entries.values()
    }
    assert {("gw", "a"): [3000, 6000], ("gw", "b"): [0, 60]} == actual


def test_usage_windows_are_bounded_by_bytes_dropping_the_group_updated_longest_ago() -> None:
    """Past the budget, the group updated longest ago goes whole; the bytes counted are those held."""
    one = GROUP_BYTES + ENTRY_BYTES + 28 + 24  # a group of one entry, one second, one kept record
    windows = UsageWindows(3600.0, budget=3 * one + 52)
    for i in range(4):
        windows.add(UsageRecord("gw", T0 + i, MSG, f"model-{i}", 100, 90, input_tokens=10))
    assert [("gw", f"model-{i}") for i in (1, 2, 3)] == [key for key, _ in windows.sorted()]
    windows.add(UsageRecord("gw", T0 + 9, MSG, "model-1", 100, 90, input_tokens=10))  # model-1 is newest now
    windows.add(UsageRecord("gw", T0 + 9, MSG, "model-4", 100, 90, input_tokens=10))
    assert ["model-1", "model-3", "model-4"] == [key[1] for key, _ in windows.sorted()]
    held = sum(GROUP_BYTES + sum(e.nbytes for e in g.entries.values()) for _, g in windows.sorted())
    assert held == windows.nbytes == 3 * one + 52  # (model-1: a second bucket, a second record)


def test_usage_windows_sum_per_second_as_the_records_would() -> None:
    """An entry's sums over any whole-second window equal the sums of its records there, records out
    of order and several in one second included; the kept records are the last RECENT that read the
    cache with input_tokens logged, in the order they came."""
    import random

    rng = random.Random(7)
    records = [
        UsageRecord("gw", T0 + rng.uniform(0, 900), MSG, "m", rng.randrange(1, 9000), rng.randrange(0, 900),
                    input_tokens=rng.choice([None, rng.randrange(0, 99)]))
        for _ in range(3000)
    ]  # fmt: skip
    windows = Windows(FACTS)
    for record in records:
        windows.observe(record)
    (usage,) = windows.usage.groups[("gw", "m")].entries.values()
    for since, now in [(T0, T0 + 900), (T0 + 17, T0 + 400), (T0 + 899, T0 + 900), (T0 - 5, T0 + 3)]:
        inside = [r for r in records if since < r.time <= now]
        expected = (len(inside), sum(r.prompt_tokens for r in inside), sum(r.cached_tokens for r in inside))
        assert expected == tuple(usage.totals(since, now)), (since, now)
    shaped = [r for r in records if r.input_tokens is not None and r.cached_tokens > 0][-RECENT:]
    assert [(r.time, r.input_tokens) for r in shaped] == [
        (r.time, r.input_tokens) for r in usage.recent(T0 - 1, T0 + 901)
    ]


def test_double_countings_max_requests_is_at_most_what_the_windows_keep(tmp_path: Path) -> None:
    """`max_requests` past the records an entry keeps is refused with the field and the bound."""
    from kvwatch.config import load_config
    from kvwatch.config.alerting import detector_settings

    path = tmp_path / "kv.toml"
    problems: list[str] = []
    for wanted in (RECENT, RECENT + 1):
        path.write_text(f"[detectors.usage_double_counting]\nmax_requests = {wanted}\n")
        detector_settings(load_config(path), problems)
    field = "detectors.usage_double_counting.max_requests"
    assert [f"{field}: must be from 1 to {RECENT} (the records kept per entry)"] == problems
