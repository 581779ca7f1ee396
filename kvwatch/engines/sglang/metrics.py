"""The `kvwatch_sglang_*` metrics: exact sums of what SGLang's batch, request and HiCache lines print.

Batch series are per source and DP rank (label `engine`, as vLLM's DP engine index); request series per
source. Gauges hold the last logged value; series appear once their lines have been seen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kvwatch.engines.families import Family
from kvwatch.engines.sglang.events import SglangDecode, SglangHicacheError, SglangPrefill, SglangRequest
from kvwatch.model import CachePrefetch

_SE = ("source", "engine")


class SglangMetrics:
    """Owns every kvwatch_sglang_* metric."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def family(name: str, doc: str, kind: str, labels: tuple[str, ...] = _SE) -> Family:
            return Family(name, doc, "counter" if kind == "counter" else "gauge", labels, registry)

        self.batches = family("kvwatch_sglang_prefill_batches", "Prefill batch lines.", "counter")
        self.seqs = family("kvwatch_sglang_prefill_seqs", "Sequences admitted (#new-seq).", "counter")
        self.computed = family(
            "kvwatch_sglang_prefill_computed_tokens", "Prefill tokens computed (#new-token).", "counter"
        )
        self.cached = family(
            "kvwatch_sglang_prefill_cached_tokens", "Prefix tokens reused (#cached-token).", "counter"
        )
        self.decodes = family("kvwatch_sglang_decode_lines", "Decode stats lines.", "counter")
        self.usage = family(
            "kvwatch_sglang_token_usage_ratio",
            "KV pool fraction in use (0-1) by pool, last logged.",
            "gauge",
            ("source", "engine", "pool"),
        )
        self.running = family("kvwatch_sglang_requests_running", "#running-req, last logged.", "gauge")
        self.queued = family("kvwatch_sglang_requests_queued", "#queue-req, last logged.", "gauge")
        self.pending = family(
            "kvwatch_sglang_pending_tokens", "#pending-token, last logged (0.5.11+).", "gauge"
        )
        self.decode_cached = family(
            "kvwatch_sglang_decode_cached_tokens",
            "Decode line's #cached-token, last logged: cached tokens of the requests decoding at that moment "
            "(PD decode with its radix cache; a snapshot, not added to the prefill cached tokens).",
            "gauge",
        )
        self.gen_tps = family(
            "kvwatch_sglang_generation_throughput_tokens_per_second", "gen throughput, last logged.", "gauge"
        )
        self.requests = family(
            "kvwatch_sglang_requests", "Requests recorded (--log-requests, else from prefill batches).",
            "counter", ("source",),
        )  # fmt: skip
        self.prompt = family(
            "kvwatch_sglang_prompt_tokens", "Prompt tokens of recorded requests.", "counter", ("source",)
        )
        self.request_cached = family(
            "kvwatch_sglang_cached_tokens",
            "Cached prompt tokens of recorded requests, by tier (`unknown` where the log does not split).",
            "counter",
            ("source", "tier"),
        )
        self.prefetches = family(
            "kvwatch_sglang_hicache_prefetches",
            "HiCache storage prefetches ended, by outcome.",
            "counter",
            ("source", "outcome"),
        )
        self.errors = family(
            "kvwatch_sglang_hicache_errors",
            "HiCache WARNING/ERROR lines, by kind.",
            "counter",
            ("source", "kind"),
        )

    def prefill(self, ev: SglangPrefill) -> None:
        """Apply one prefill batch line."""
        labels = (ev.source, ev.engine)
        self.batches.inc(labels, 1)
        self.seqs.inc(labels, ev.seqs)
        self.computed.inc(labels, ev.computed)
        self.cached.inc(labels, ev.cached)
        self._gauges(labels, ev.running, ev.queued, ev.usage)
        if ev.pending is not None:
            self.pending.set(labels, ev.pending)

    def decode(self, ev: SglangDecode) -> None:
        """Apply one decode stats line."""
        labels = (ev.source, ev.engine)
        self.decodes.inc(labels, 1)
        self._gauges(labels, ev.running, ev.queued, ev.usage)
        if ev.throughput is not None:
            self.gen_tps.set(labels, ev.throughput)
        if ev.cached_tokens is not None:
            self.decode_cached.set(labels, ev.cached_tokens)

    def _gauges(
        self,
        labels: tuple[str, str],
        running: int | None,
        queued: int | None,
        usage: tuple[tuple[str, float], ...],
    ) -> None:
        if running is not None:
            self.running.series[labels] = float(running)
        if queued is not None:
            self.queued.series[labels] = float(queued)
        series = self.usage.series
        for pool, value in usage:
            series[(labels[0], labels[1], pool)] = float(value)

    def request(self, ev: SglangRequest) -> None:
        """Count one request record; split cached tokens by tier where the line does."""
        labels = (ev.source,)
        for series, amount in ((self.requests.series, 1), (self.prompt.series, ev.prompt_tokens)):
            series[labels] = series.get(labels, 0.0) + amount
        if ev.tiers:
            for tier, tokens in ev.tiers:
                self.request_cached.inc((ev.source, tier), tokens)
        else:
            self.request_cached.inc((ev.source, "unknown"), ev.cached_tokens)

    def prefetch(self, ev: CachePrefetch) -> None:
        """Count one ended prefetch."""
        self.prefetches.inc((ev.source, ev.outcome), 1)

    def error(self, ev: SglangHicacheError) -> None:
        """Count one HiCache error line."""
        self.errors.inc((ev.source, ev.kind), 1)


def handlers(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    """The engine's families on `registry`, as the handler of each event type they are fed
    (kvwatch.engines.base.MetricsFactory)."""
    family = SglangMetrics(registry)
    return {
        SglangPrefill: family.prefill,
        SglangDecode: family.decode,
        SglangRequest: family.request,
        CachePrefetch: family.prefetch,
        SglangHicacheError: family.error,
    }
