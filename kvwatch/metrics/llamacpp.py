"""The llama.cpp request metrics: counters and histograms fed by `LlamaRequest`, label `source`."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from kvwatch.model import LlamaRequest

# Ratios: fine steps at the bottom, where a broken prefix lives (the incident reused 21 of ~24k
# tokens, 0.001; its LCP similarity was 0.086, just under the 0.1 selection threshold), and near 1,
# where a healthy conversation lives (sim 0.999, f_keep 1.000).
RATIO_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
# Prompt eval: a cached turn takes a fraction of a second (0.3 s), a full re-prefill tens (55 s).
SECONDS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)


class LlamacppMetrics:
    """Owns every kvwatch_llamacpp_* metric; `apply` folds one request record into them."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, ["source"], registry=registry)

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, doc, ["source"], buckets=buckets, registry=registry)

        self.requests = counter(
            "kvwatch_llamacpp_requests", "llama.cpp requests completed (one per stop processing)."
        )
        self.prompt_tokens = counter(
            "kvwatch_llamacpp_prompt_tokens", "Prompt tokens of completed requests, cached or not."
        )
        self.reused_tokens = counter(
            "kvwatch_llamacpp_reused_tokens",
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
        self._series: dict[str, _Series] = {}

    def apply(self, event: LlamaRequest) -> None:
        """Count one finished request; every series of its source exists from the first one."""
        series = self._series.get(event.source)
        if series is None:
            series = self._series[event.source] = _Series(self, event.source)
        series.requests.inc()
        series.prompt_tokens.inc(event.prompt_tokens or 0)
        series.reused_tokens.inc(event.reused_tokens or 0)
        series.full_reprocess.inc(1 if event.full_reprocess else 0)
        series.checkpoint_restores.inc(event.checkpoint_restores)
        series.lru_selections.inc(1 if event.selection == "lru" else 0)
        if event.sim_best is not None:
            series.similarity.observe(event.sim_best)
        if event.f_keep is not None:
            series.keep.observe(event.f_keep)
        if event.prompt_tokens and event.reused_tokens is not None:
            series.reuse.observe(min(1.0, event.reused_tokens / event.prompt_tokens))
        if event.prompt_eval_seconds is not None:
            series.eval_seconds.observe(event.prompt_eval_seconds)


class _Series:
    """One source's children of every metric: `labels()` takes a lock and a dict walk per call."""

    def __init__(self, metrics: LlamacppMetrics, source: str) -> None:
        self.requests = metrics.requests.labels(source)
        self.prompt_tokens = metrics.prompt_tokens.labels(source)
        self.reused_tokens = metrics.reused_tokens.labels(source)
        self.full_reprocess = metrics.full_reprocess.labels(source)
        self.checkpoint_restores = metrics.checkpoint_restores.labels(source)
        self.lru_selections = metrics.lru_selections.labels(source)
        self.similarity = metrics.similarity.labels(source)
        self.keep = metrics.keep.labels(source)
        self.reuse = metrics.reuse.labels(source)
        self.eval_seconds = metrics.eval_seconds.labels(source)
