"""The LM Studio metrics: request-record counters per source, model and runtime, cache clears and
trims, mlx-engine's lifetime efficiency and its vision cache's disk usage.

Model labels are bounded by the parser (parser.MAX_MODELS, then "other"); "" is a request whose model
LM Studio's log did not name before it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kvwatch.engines.families import Family
from kvwatch.engines.lmstudio.events import (
    LmstudioCacheEvent,
    LmstudioCompletion,
    LmstudioDiskUsage,
    LmstudioRequest,
)

_REQUEST = ("source", "model", "runtime")


class LmstudioMetrics:
    """Owns every kvwatch_lmstudio_* metric; one `apply_*` per event type."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def family(name: str, doc: str, labels: tuple[str, ...], kind: str = "counter") -> Family:
            return Family(name, doc, "gauge" if kind == "gauge" else "counter", labels, registry)

        self.completions = family(
            "kvwatch_lmstudio_chat_completions",
            "LM Studio's `Running chat completion` lines: requests begun, with a cache line or not.",
            ("source", "model"),
        )
        self.requests = family(
            "kvwatch_lmstudio_requests", "LM Studio requests with a per-request cache line.", _REQUEST
        )
        self.prompt_tokens = family(
            "kvwatch_lmstudio_prompt_tokens", "Prompt tokens of those requests, cached or not.", _REQUEST
        )
        self.cached_tokens = family(
            "kvwatch_lmstudio_cached_tokens", "Prompt tokens taken from the runtime's prompt cache.", _REQUEST
        )
        self.clears = family(
            "kvwatch_lmstudio_cache_clears",
            "mlx-engine prompt caches dropped whole (`Cache is not trimmable. Clearing the cache instead.`, ...).",  # noqa: E501
            ("source", "reason"),
        )
        self.trimmed = family(
            "kvwatch_lmstudio_trimmed_tokens",
            "Tokens mlx-engine trimmed from its prompt cache (`Trimmed N tokens from the prompt cache`).",
            ("source",),
        )
        self.efficiency = family(
            "kvwatch_lmstudio_lifetime_efficiency_ratio",
            "mlx-engine vision prompt cache: restored / prefilled tokens since model load, last logged.",
            ("source", "model"),
            "gauge",
        )
        self.disk_used = family(
            "kvwatch_lmstudio_disk_cache_used_bytes",
            "mlx-engine vision prompt cache on disk, last logged.",
            ("source",),
            "gauge",
        )
        self.disk_cap = family(
            "kvwatch_lmstudio_disk_cache_capacity_bytes",
            "The cap of mlx-engine's vision prompt cache on disk, last logged.",
            ("source",),
            "gauge",
        )

    def apply_request(self, event: LmstudioRequest) -> None:
        """Count one request record; the clear and trim series of its source exist from the first one."""
        labels = (event.source, event.model, event.runtime)
        if labels not in self.requests.series:
            for family in (self.requests, self.prompt_tokens, self.cached_tokens):
                family.inc(labels, 0)
            self._source(event.source)
        self.requests.inc(labels, 1)
        self.prompt_tokens.inc(labels, event.prompt_tokens)
        self.cached_tokens.inc(labels, event.cached_tokens)
        if event.lifetime_efficiency is not None:
            self.efficiency.set((event.source, event.model), event.lifetime_efficiency)

    def apply_completion(self, event: LmstudioCompletion) -> None:
        """Count one chat completion begun."""
        self.completions.inc((event.source, event.model), 1)

    def apply_cache(self, event: LmstudioCacheEvent) -> None:
        """Count a cache clear (by reason) or the tokens of a trim."""
        self._source(event.source)
        if event.kind == "clear":
            self.clears.inc((event.source, event.reason), 1)
        else:
            self.trimmed.inc((event.source,), event.tokens)

    def apply_disk(self, event: LmstudioDiskUsage) -> None:
        """The vision cache's disk usage and cap, as last logged."""
        self.disk_used.set((event.source,), event.used_bytes)
        self.disk_cap.set((event.source,), event.cap_bytes)

    def _source(self, source: str) -> None:
        if (source,) not in self.trimmed.series:
            self.trimmed.inc((source,), 0)
            self.clears.inc((source, "not_trimmable"), 0)


def handlers(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    """The engine's families on `registry`, as the handler of each event type they are fed
    (kvwatch.engines.base.MetricsFactory)."""
    family = LmstudioMetrics(registry)
    return {
        LmstudioRequest: family.apply_request,
        LmstudioCacheEvent: family.apply_cache,
        LmstudioDiskUsage: family.apply_disk,
        LmstudioCompletion: family.apply_completion,
    }
