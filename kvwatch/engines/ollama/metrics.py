"""The Ollama metrics: request-record counters per source and model, cache events, `[GIN]` requests.

Model labels are bounded by the parser (parser.MAX_MODELS, then "other"); "" is a runner whose model
the log did not name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kvwatch.engines.families import Family
from kvwatch.engines.ollama.events import OllamaAccess, OllamaCacheEvent, OllamaCutOff, OllamaRequest


class OllamaMetrics:
    """Owns every kvwatch_ollama_* metric; one `apply_*` per event type."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str, labels: tuple[str, ...] = ("source", "model")) -> Family:
            return Family(name, doc, "counter", labels, registry)

        self.requests = counter("kvwatch_ollama_requests", "Ollama requests with a per-request cache line.")
        self.prompt_tokens = counter(
            "kvwatch_ollama_prompt_tokens", "Prompt tokens of those requests, cached or not."
        )
        self.cached_tokens = counter(
            "kvwatch_ollama_cached_tokens",
            "Prompt tokens restored from the runner's cache instead of evaluated.",
        )
        self.full_reprocess = counter(
            "kvwatch_ollama_full_reprocess",
            "Requests whose llama-server runner logged `forcing full prompt re-processing`.",
        )
        self.cache_clears = counter(
            "kvwatch_ollama_cache_clears",
            "Runner caches cleared (`kv cache removal unsupported`, `kv cache cannot shift`).",
            ("source",),
        )
        self.failed_restores = counter(
            "kvwatch_ollama_failed_restores",
            "MLX runner `failed to restore cache, freeing all caches`: the next prompt is prefilled in full.",
            ("source",),
        )
        self.context_shifts = counter(
            "kvwatch_ollama_context_shifts",
            "`context limit hit - shifting`: a slot's context shifted.",
            ("source",),
        )
        self.http = counter(
            "kvwatch_ollama_http_requests",
            "Ollama HTTP requests (`[GIN]` lines), by status class.",
            ("source", "code"),
        )

    def apply_request(self, event: OllamaRequest) -> None:
        """Count one request record; the cache-event series of its source exist from the first one."""
        labels = (event.source, event.model)
        self._series(labels)
        self.requests.inc(labels, 1)
        self.prompt_tokens.inc(labels, event.prompt_tokens)
        self.cached_tokens.inc(labels, event.cached_tokens)
        if event.full_reprocess:
            self.full_reprocess.inc(labels, 1)

    def apply_cut_off(self, event: OllamaCutOff) -> None:
        """Count the forced full re-processing of a request the input ended before it finished."""
        labels = (event.source, event.model)
        self._series(labels)
        self.full_reprocess.inc(labels, 1)

    def _series(self, labels: tuple[str, str]) -> None:
        """A source and model's request series, and its source's cache-event series, from the first event."""
        if labels not in self.requests.series:
            for family in (self.requests, self.prompt_tokens, self.cached_tokens, self.full_reprocess):
                family.inc(labels, 0)
            self._source(labels[0])

    def apply_cache(self, event: OllamaCacheEvent) -> None:
        """Count a cache clear, failed restore or context shift (evictions and forks are not counted)."""
        self._source(event.source)
        family = {"clear": self.cache_clears, "failed_restore": self.failed_restores}.get(event.kind)
        if event.kind == "context_shift":
            family = self.context_shifts
        if family is not None:
            family.inc((event.source,), 1)

    def apply_access(self, event: OllamaAccess) -> None:
        """Count one `[GIN]` request by status class (2xx, 4xx, ...)."""
        self.http.inc((event.source, f"{event.status // 100}xx"), 1)

    def _source(self, source: str) -> None:
        for family in (self.cache_clears, self.failed_restores, self.context_shifts):
            if (source,) not in family.series:
                family.inc((source,), 0)


def handlers(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    """The engine's families on `registry`, as the handler of each event type they are fed
    (kvwatch.engines.base.MetricsFactory)."""
    family = OllamaMetrics(registry)
    return {
        OllamaRequest: family.apply_request,
        OllamaCacheEvent: family.apply_cache,
        OllamaAccess: family.apply_access,
        OllamaCutOff: family.apply_cut_off,
    }
