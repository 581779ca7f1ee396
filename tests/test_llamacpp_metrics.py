"""llama.cpp request records -> kvwatch_llamacpp_* metrics, and the per-request text table."""

# The expected table is kept as printed, however long its lines.
# ruff: noqa: E501

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kvwatch.engines.llamacpp.events import LlamaRequest
from kvwatch.engines.llamacpp.metrics import LlamacppMetrics
from kvwatch.engines.llamacpp.report import requests_table
from kvwatch.parsers.base import DEFAULT_START

HEALTHY = LlamaRequest(
    "a", DEFAULT_START + 5.3607, 0, 6, 394, 300, 94, "lcp",
    sim_best=0.911, f_keep=1.0, prompt_eval_seconds=0.278,
)  # fmt: skip
BROKEN = LlamaRequest(
    "a", DEFAULT_START + 70.0, 1, 300, 24100, 0, 24100, "lru",
    full_reprocess=True, prompt_eval_seconds=55.012,
)  # fmt: skip
RESTORED = LlamaRequest(
    "b", DEFAULT_START + 90.0, 0, 70, 420, 394, 26, "lcp", sim_best=0.95, f_keep=0.99,
    checkpoint_restores=2, prompt_cache_rescue=True, prompt_eval_seconds=0.003,
)  # fmt: skip
DERIVED = LlamaRequest("b", DEFAULT_START + 91.5, 1, 16, None, None, 499, "unknown", derived=True)


def applied(*records: LlamaRequest) -> CollectorRegistry:
    """A fresh registry with the records applied."""
    registry = CollectorRegistry()
    metrics = LlamacppMetrics(registry)
    for record in records:
        metrics.apply(record)
    return registry


def value(registry: CollectorRegistry, name: str, source: str, **labels: str) -> float | None:
    """One sample of one source."""
    return registry.get_sample_value(name, {"source": source, **labels})


def test_counters_per_source() -> None:
    """Counters add up requests, prompt and cached tokens, re-processing, restores and LRU picks."""
    registry = applied(HEALTHY, BROKEN, RESTORED)
    names = ["requests", "prompt_tokens", "cached_tokens", "full_reprocess"]
    names += ["checkpoint_restores", "lru_selections"]
    got = {
        source: [value(registry, f"kvwatch_llamacpp_{n}_total", source) for n in names]
        for source in ("a", "b")
    }
    assert {"a": [2, 24494, 300, 1, 0, 1], "b": [1, 420, 394, 0, 2, 0]} == got


def test_every_series_exists_after_the_first_request() -> None:
    """A source's counters read 0, not absent, before their first event (dashboards need 0)."""
    registry = applied(HEALTHY)
    names = ["full_reprocess", "checkpoint_restores", "lru_selections"]
    expected = [0.0, 0.0, 0.0]
    assert expected == [value(registry, f"kvwatch_llamacpp_{n}_total", "a") for n in names]


def test_histograms() -> None:
    """sim_best, f_keep, reused/prompt and prompt eval seconds are observed when known."""
    registry = applied(HEALTHY, BROKEN)
    got = [
        value(registry, "kvwatch_llamacpp_slot_similarity_ratio_count", "a"),
        value(registry, "kvwatch_llamacpp_slot_keep_ratio_sum", "a"),
        value(registry, "kvwatch_llamacpp_request_reuse_ratio_count", "a"),
        value(registry, "kvwatch_llamacpp_request_reuse_ratio_bucket", "a", le="0.001"),
        value(registry, "kvwatch_llamacpp_prompt_eval_seconds_bucket", "a", le="0.5"),
        value(registry, "kvwatch_llamacpp_prompt_eval_seconds_bucket", "a", le="30.0"),
        value(registry, "kvwatch_llamacpp_prompt_eval_seconds_bucket", "a", le="60.0"),
    ]
    assert [1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 2.0] == got


def test_unknown_counts_are_not_observed() -> None:
    """A record without prompt/reused counts adds a request but no reuse observation."""
    registry = applied(DERIVED)
    got = [
        value(registry, "kvwatch_llamacpp_requests_total", "b"),
        value(registry, "kvwatch_llamacpp_request_reuse_ratio_count", "b"),
        value(registry, "kvwatch_llamacpp_prompt_tokens_total", "b"),
    ]
    assert [1.0, 0.0, 0.0] == got


def test_requests_table() -> None:
    """The text table: UTC time with Z, aligned columns, `-` for unknowns, notes for flags."""
    expected = (
        "time                      slot  prompt  reused    new  selection    sim   keep  eval time  notes\n"
        "2026-01-01T00:00:05.360Z     0     394     300     94  lcp        0.911  1.000    0.278 s\n"
        "2026-01-01T00:01:10.000Z     1   24100       0  24100  lru            -      -   55.012 s  full-reprocess\n"
        "2026-01-01T00:01:30.000Z     0     420     394     26  lcp        0.950  0.990    0.003 s  restores=2 prompt-cache\n"
        "2026-01-01T00:01:31.500Z     1       -       -    499  unknown        -      -          -  derived\n"
    )  # fmt: skip
    assert expected == requests_table([HEALTHY, BROKEN, RESTORED, DERIVED])


def test_requests_table_empty() -> None:
    """No records: just the header."""
    assert requests_table([]).startswith("time  slot  prompt  reused  new  selection")
