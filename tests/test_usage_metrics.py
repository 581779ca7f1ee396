"""kvwatch_usage_* metrics on a fresh registry: token counters, histograms, bounded entry and model labels."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kvwatch.engines.usage.metrics import UsageMetrics
from kvwatch.metrics import Metrics
from kvwatch.model import UsageRecord


def record(
    entry: str = "/v1/messages", model: str = "m", prompt: int = 100000, cached: int = 17920
) -> UsageRecord:
    """One request."""
    return UsageRecord("gw", 1787043600.0, entry, model, prompt, cached)


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    """A sample's value (source gw unless given)."""
    return registry.get_sample_value(name, {"source": "gw", **labels})


def test_token_counters_give_the_hit_rate() -> None:
    """Requests, prompt and cached tokens add up per source, entry and model."""
    registry = CollectorRegistry()
    metrics = UsageMetrics(registry)
    metrics.apply(record(prompt=100000, cached=17920))
    metrics.apply(record(prompt=120000, cached=17920))
    labels = {"entry": "/v1/messages", "model": "m"}
    actual = [
        value(registry, "kvwatch_usage_requests_total", **labels),
        value(registry, "kvwatch_usage_prompt_tokens_total", **labels),
        value(registry, "kvwatch_usage_cached_tokens_total", **labels),
    ]
    assert [2.0, 220000.0, 35840.0] == actual


def test_histograms_bucket_cached_tokens_and_ratio() -> None:
    """17920 cached falls in (16384, 32768]; 0 cached in le=0; the ratio histogram sees 0.1792."""
    registry = CollectorRegistry()
    metrics = UsageMetrics(registry)
    metrics.apply(record(cached=17920))
    metrics.apply(record(cached=0))
    labels = {"entry": "/v1/messages", "model": "m"}
    actual = [
        value(registry, "kvwatch_usage_request_cached_tokens_bucket", le="0.0", **labels),
        value(registry, "kvwatch_usage_request_cached_tokens_bucket", le="16384.0", **labels),
        value(registry, "kvwatch_usage_request_cached_tokens_bucket", le="32768.0", **labels),
        value(registry, "kvwatch_usage_cache_hit_ratio_bucket", le="0.1", **labels),
        value(registry, "kvwatch_usage_cache_hit_ratio_bucket", le="0.2", **labels),
    ]
    assert [1.0, 1.0, 2.0, 1.0, 2.0] == actual


def test_model_cap_folds_later_models_into_other() -> None:
    """After `max_models` distinct models, new ones count under model="other"; known ones keep theirs."""
    registry = CollectorRegistry()
    metrics = UsageMetrics(registry, max_models=2)
    for model in ("a", "b", "c", "d", "a"):
        metrics.apply(record(model=model))
    counts = {
        model: value(registry, "kvwatch_usage_requests_total", entry="/v1/messages", model=model)
        for model in ("a", "b", "c", "other")
    }
    assert {"a": 2.0, "b": 1.0, "c": None, "other": 2.0} == counts


def test_entry_allow_list_and_its_extension() -> None:
    """Standard paths stay, configured extras stay, anything else is entry="other"."""
    registry = CollectorRegistry()
    metrics = UsageMetrics(registry, extra_entries=("/v2/agent",))
    for entry in ("/v1/chat/completions", "/v2/agent", "/api/x/42", "other"):
        metrics.apply(record(entry=entry))
    counts = {
        entry: value(registry, "kvwatch_usage_requests_total", entry=entry, model="m")
        for entry in ("/v1/chat/completions", "/v2/agent", "/api/x/42", "other")
    }
    assert {"/v1/chat/completions": 1.0, "/v2/agent": 1.0, "/api/x/42": None, "other": 2.0} == counts


def test_rows_skipped_become_a_counter() -> None:
    """Rows that are no requests reach kvwatch_usage_rows_skipped_total{source,reason} as events."""
    from kvwatch.engines.usage.parser import UsageParser
    from kvwatch.model import LogLine
    from kvwatch.parsers.base import ParserSettings

    registry = CollectorRegistry()
    metrics = Metrics(registry)
    parser = UsageParser("gw", ParserSettings())
    for kind in (5, 5, 1):
        row = (
            f'{{"id":1,"created_at":1787043600,"type":{kind},"model_name":"m","prompt_tokens":0,"other":""}}'
        )
        for event in parser.parse(LogLine("gw", row, None)) or []:  # type: ignore[union-attr]
            metrics.apply(event)
    actual = [
        value(registry, "kvwatch_usage_rows_skipped_total", reason="error"),
        value(registry, "kvwatch_usage_rows_skipped_total", reason="not_consumption"),
    ]
    assert [2.0, 1.0] == actual


def test_metrics_dispatches_usage_records() -> None:
    """`Metrics.apply` feeds UsageRecord events to the usage family."""
    registry = CollectorRegistry()
    Metrics(registry).apply(record())
    assert 1.0 == value(registry, "kvwatch_usage_requests_total", entry="/v1/messages", model="m")
