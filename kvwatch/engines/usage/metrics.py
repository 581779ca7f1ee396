"""The `kvwatch_usage_*` metrics: per-request usage from gateway logs, by source, entry and model (#6).

The token counters let Grafana plot the operators' own metric, the token hit rate
sum(rate(cached)) / sum(rate(prompt)), per entry; the histograms show the distribution a mean hides
(incident 1: cached tokens pinned at 17920 while prompts grew). Labels are bounded here, not in the
events (detectors group on raw values): `entry` keeps the standard API paths and kinds plus
`extra_entries`, anything else is `other`; `model` keeps the first `max_models` distinct values, later
ones are `other`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from kvwatch.engines.usage.events import UsageSkipped
from kvwatch.engines.usage.fields import OTHER, bounded_entry
from kvwatch.model import UsageRecord

_SEM = ("source", "entry", "model")
#: Cached tokens per request: 0 (a cold miss), then 64 x 2^k up to 256k (vLLM caches whole blocks,
#: commonly 64-token aligned; powers of two keep the series count small).
CACHED_BUCKETS = (0.0, *(64.0 * 2**k for k in range(13)))
#: cached / prompt per request: fine near 1, where a healthy conversation's turns sit (98-99.7%).
RATIO_BUCKETS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 1.0)


class UsageMetrics:
    """Owns every kvwatch_usage_* metric and the label folding."""

    def __init__(
        self, registry: CollectorRegistry, max_models: int = 20, extra_entries: Iterable[str] = ()
    ) -> None:
        self.max_models = max_models
        self.extra_entries = frozenset(extra_entries)
        self._models: set[str] = set()

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, _SEM, registry=registry)

        self.requests = counter("kvwatch_usage_requests", "Completed requests in the usage log.")
        self.prompt = counter(
            "kvwatch_usage_prompt_tokens",
            "Prompt tokens, cached included (Anthropic usage: input + cache read + cache creation).",
        )
        self.cached = counter(
            "kvwatch_usage_cached_tokens", "Prompt tokens served from the prefix cache (cache reads)."
        )
        self.creation = counter(
            "kvwatch_usage_cache_creation_tokens",
            "Prompt tokens written to the cache (Anthropic cache_creation_input_tokens; 0 elsewhere).",
        )
        # Not `kvwatch_usage_cached_tokens`: that is the counter family's name (…_total).
        self.cached_hist = Histogram(
            "kvwatch_usage_request_cached_tokens",
            "Cached tokens per request.",
            _SEM,
            buckets=CACHED_BUCKETS,
            registry=registry,
        )
        self.ratio_hist = Histogram(
            "kvwatch_usage_cache_hit_ratio",
            "Cached / prompt tokens per request (0-1).",
            _SEM,
            buckets=RATIO_BUCKETS,
            registry=registry,
        )
        self.skipped = Counter(
            "kvwatch_usage_rows_skipped",
            "Usage-log rows that are not completed requests (errors, other row types, no usage).",
            ("source", "reason"),
            registry=registry,
        )

    def model_label(self, model: str) -> str:
        """The model itself while fewer than `max_models` distinct ones were seen, else `other`."""
        if model in self._models:
            return model
        if len(self._models) < self.max_models:
            self._models.add(model)
            return model
        return OTHER

    def entry_label(self, entry: str) -> str:
        """The entry itself when standard or configured, else `other`."""
        return bounded_entry(entry, self.extra_entries)

    def apply(self, ev: UsageRecord) -> None:
        """Count one completed request."""
        labels = (ev.source, self.entry_label(ev.entry), self.model_label(ev.model))
        self.requests.labels(*labels).inc()
        self.prompt.labels(*labels).inc(ev.prompt_tokens)
        self.cached.labels(*labels).inc(ev.cached_tokens)
        self.creation.labels(*labels).inc(ev.cache_creation_tokens)
        self.cached_hist.labels(*labels).observe(ev.cached_tokens)
        if ev.prompt_tokens > 0:
            self.ratio_hist.labels(*labels).observe(ev.cached_tokens / ev.prompt_tokens)

    def skipped_row(self, ev: UsageSkipped) -> None:
        """Count a row that is no completed request."""
        self.skipped.labels(ev.source, ev.reason).inc()


def handlers(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    """The engine's families on `registry`, as the handler of each event type they are fed
    (kvwatch.engines.base.MetricsFactory)."""
    family = UsageMetrics(registry)
    return {UsageRecord: family.apply, UsageSkipped: family.skipped_row}
