"""The llama.cpp request metrics: counters and histograms fed by `LlamaRequest` (and `LlamaCutOff`: what
an unfinished request had shown when the input ended), label `source`.

Plain-float families (metrics.families): a -lv 4 replay applies tens of thousands of requests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kvwatch.engines.families import Family, HistogramFamily
from kvwatch.engines.llamacpp.events import LlamaCutOff, LlamaRequest

# Ratios: fine steps at the bottom, where a broken prefix lives (the incident reused 21 of ~24k
# tokens, 0.001; its LCP similarity was 0.086, just under the 0.1 selection threshold), and near 1,
# where a healthy conversation lives (sim 0.999, f_keep 1.000).
RATIO_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
# Prompt eval: a cached turn takes a fraction of a second (0.3 s), a full re-prefill tens (55 s).
SECONDS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)


class LlamacppMetrics:
    """Owns every kvwatch_llamacpp_* metric; `apply` folds one request record into them."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str) -> Family:
            return Family(name, doc, "counter", ("source",), registry)

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> HistogramFamily:
            return HistogramFamily(name, doc, ("source",), buckets, registry)

        self.requests = counter(
            "kvwatch_llamacpp_requests", "llama.cpp requests completed (one per stop processing)."
        )
        self.prompt_tokens = counter(
            "kvwatch_llamacpp_prompt_tokens", "Prompt tokens of completed requests, cached or not."
        )
        self.cached_tokens = counter(
            "kvwatch_llamacpp_cached_tokens",
            "Prompt tokens served from the slot's KV cache (n_past) instead of being evaluated.",
        )
        self.full_reprocess = counter(
            "kvwatch_llamacpp_full_reprocess",
            "Requests with `forcing full prompt re-processing`: no usable cache (SWA/hybrid).",
        )
        self.checkpoint_restores = counter(
            "kvwatch_llamacpp_checkpoint_restores",
            "Context checkpoints restored to serve a prompt prefix (SWA/hybrid/recurrent memory).",
        )
        self.lru_selections = counter(
            "kvwatch_llamacpp_lru_selections",
            "Requests placed by LRU: no slot shared more than the similarity threshold.",
        )
        self.similarity = histogram(
            "kvwatch_llamacpp_slot_similarity_ratio",
            "sim_best of LCP slot selection: common prefix / new prompt length (0-1).",
            RATIO_BUCKETS,
        )
        self.keep = histogram(
            "kvwatch_llamacpp_slot_keep_ratio",
            "f_keep of LCP slot selection: common prefix / tokens cached in the slot (0-1).",
            RATIO_BUCKETS,
        )
        self.reuse = histogram(
            "kvwatch_llamacpp_request_reuse_ratio",
            "Per request, reused tokens / prompt tokens (0-1): the effective prefix-cache hit.",
            RATIO_BUCKETS,
        )
        self.eval_seconds = histogram(
            "kvwatch_llamacpp_prompt_eval_seconds",
            "Time spent evaluating the uncached part of each prompt (prefill), seconds.",
            SECONDS_BUCKETS,
        )
        self._counters = (
            self.requests,
            self.prompt_tokens,
            self.cached_tokens,
            self.full_reprocess,
            self.checkpoint_restores,
            self.lru_selections,
        )
        self._histograms = (self.similarity, self.keep, self.reuse, self.eval_seconds)

    def _series(self, labels: tuple[str]) -> None:
        """Every series of a source, from its first event on."""
        if labels not in self.requests.series:
            for family in self._counters:
                family.inc(labels, 0)
            for histogram in self._histograms:
                histogram.labels(labels)

    def apply(self, event: LlamaRequest) -> None:
        """Count one finished request; every series of its source exists from the first one."""
        labels = (event.source,)
        self._series(labels)
        self.requests.inc(labels, 1)
        self.prompt_tokens.inc(labels, event.prompt_tokens or 0)
        self.cached_tokens.inc(labels, event.reused_tokens or 0)
        if event.full_reprocess:
            self.full_reprocess.inc(labels, 1)
        if event.checkpoint_restores:
            self.checkpoint_restores.inc(labels, event.checkpoint_restores)
        if event.selection == "lru":
            self.lru_selections.inc(labels, 1)
        if event.sim_best is not None:
            self.similarity.observe(labels, event.sim_best)
        if event.f_keep is not None:
            self.keep.observe(labels, event.f_keep)
        if event.prompt_tokens and event.reused_tokens is not None:
            self.reuse.observe(labels, min(1.0, event.reused_tokens / event.prompt_tokens))
        if event.prompt_eval_seconds is not None:
            self.eval_seconds.observe(labels, event.prompt_eval_seconds)

    def cut_off(self, event: LlamaCutOff) -> None:
        """A request the input ended before it finished: its forced re-processing or LRU pick counts
        (the line said so), the request does not (it did not complete)."""
        labels = (event.source,)
        self._series(labels)
        if event.full_reprocess:
            self.full_reprocess.inc(labels, 1)
        if event.lru:
            self.lru_selections.inc(labels, 1)


def handlers(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    """The engine's families on `registry`, as the handler of each event type they are fed
    (kvwatch.engines.base.MetricsFactory)."""
    metrics = LlamacppMetrics(registry)
    return {LlamaRequest: metrics.apply, LlamaCutOff: metrics.cut_off}
