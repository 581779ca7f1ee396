"""The `kvwatch_lmcache_*` metrics: exact sums of what LMCache's lookup, store, load and failure lines print.

Lookups come once per request from the scheduler (label `source`); stores and loads from each TP worker
(`source`, `worker`): bytes add up across workers, token counts are each worker's view of the same
requests (a dashboard takes the max over workers). Bytes are bytes (LMCache prints GiB).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kvwatch.engines.families import Family
from kvwatch.engines.lmcache.events import (
    LmcacheFailure,
    LmcacheLookup,
    LmcachePrefetch,
    LmcacheStoreRequest,
    LmcacheTransfer,
)

_S = ("source",)
_SW = ("source", "worker")


class LmcacheMetrics:
    """Owns every kvwatch_lmcache_* metric."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str, labels: tuple[str, ...] = _SW) -> Family:
            return Family(f"kvwatch_lmcache_{name}", doc, "counter", labels, registry)

        self.lookups = counter(
            "lookups", "Requests looked up (the first lookup line with a number per request id).", _S
        )
        self.query = counter("query_tokens", "Tokens of the requests looked up (Total tokens).", _S)
        self.hit = counter("hit_tokens", "Prefix tokens LMCache held for them (LMCache hit tokens).", _S)
        self.need = counter("need_load_tokens", "Tokens to load from LMCache (need to load, at least 0).", _S)
        self.apc = counter(
            "vllm_apc_tokens", "Tokens vLLM's own prefix cache had (Inference Engine computed, 0.3.15+).", _S
        )
        self.storing = counter(
            "store_requested_tokens", "Tokens handed to LMCache to store (Storing KV cache for N)."
        )
        self.stores = counter("stores", "Store lines (Stored ..., one per request and step).")
        self.stored = counter("stored_tokens", "Tokens newly stored (Stored N).")
        self.offered = counter(
            "store_offered_tokens", "Tokens offered to the store (Stored N out of total M)."
        )
        self.stored_bytes = counter("stored_bytes", "Bytes stored (size, printed in GiB).")
        self.store_seconds = counter("store_seconds", "Seconds spent storing (cost).")
        self.retrieves = counter("retrieves", "Retrieve lines (Retrieved ...).")
        self.retrieved = counter("retrieved_tokens", "Tokens loaded back (Retrieved N).")
        self.required = counter("retrieve_required_tokens", "Tokens a load required (out of M required).")
        self.retrieved_bytes = counter("retrieved_bytes", "Bytes loaded back (size, printed in GiB).")
        self.retrieve_seconds = counter("retrieve_seconds", "Seconds spent loading (cost).")
        self.short = counter("retrieve_short", "Loads that got fewer tokens than they required.")
        self.failures = counter(
            "failures", "Failure lines by kind (see docs/metrics.md).", ("source", "worker", "kind")
        )
        self.failed_tokens = counter(
            "failed_retrieve_tokens", "Tokens a failed retrieve lost (expected - retrieved)."
        )
        self.prefetches = counter("prefetches", "MP mode: prefetches that found keys.", _S)
        self.prefetch_hits = counter(
            "prefetch_hit_keys", "MP mode: keys (chunks) found by those prefetches.", _S
        )
        self.prefetch_keys = counter(
            "prefetch_requested_keys", "MP mode: keys those prefetches asked for.", _S
        )

    def lookup(self, ev: LmcacheLookup) -> None:
        """Apply one counted lookup."""
        labels = (ev.source,)
        self.lookups.inc(labels, ev.lookups)
        if ev.query_tokens:  # (0: not printed, SGLang's adapter: no series rather than a false 0)
            self.query.inc(labels, ev.query_tokens)
        self.hit.inc(labels, ev.hit_tokens)
        self.need.inc(labels, ev.need_load_tokens)
        if ev.local_tokens is not None:
            self.apc.inc(labels, ev.local_tokens)

    def transfer(self, ev: LmcacheTransfer) -> None:
        """Apply one worker's store or load lines."""
        labels = (ev.source, ev.worker)
        if ev.load:
            lines, tokens, asked, size, seconds = (
                self.retrieves,
                self.retrieved,
                self.required,
                self.retrieved_bytes,
                self.retrieve_seconds,
            )
            if ev.short or labels not in self.short.series:
                self.short.inc(labels, ev.short)
        else:
            lines, tokens, asked, size, seconds = (
                self.stores,
                self.stored,
                self.offered,
                self.stored_bytes,
                self.store_seconds,
            )
        lines.inc(labels, ev.lines)
        tokens.inc(labels, ev.tokens)
        if ev.asked is not None:
            asked.inc(labels, ev.asked)
        if ev.bytes is not None:
            size.inc(labels, ev.bytes)
        if ev.seconds is not None:
            seconds.inc(labels, ev.seconds)

    def store_request(self, ev: LmcacheStoreRequest) -> None:
        """Apply one `Storing KV cache for N out of M tokens` line."""
        self.storing.inc((ev.source, ev.worker), ev.tokens)

    def failure(self, ev: LmcacheFailure) -> None:
        """Apply one failure."""
        self.failures.inc((ev.source, ev.worker, ev.kind), 1)
        if ev.tokens is not None:
            self.failed_tokens.inc((ev.source, ev.worker), ev.tokens)

    def prefetch(self, ev: LmcachePrefetch) -> None:
        """Apply one MP-mode prefetch."""
        labels = (ev.source,)
        self.prefetches.inc(labels, 1)
        self.prefetch_hits.inc(labels, ev.hit_keys)
        self.prefetch_keys.inc(labels, ev.requested_keys)


def handlers(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    """The engine's families on `registry`, as the handler of each event type they are fed
    (kvwatch.engines.base.MetricsFactory)."""
    family = LmcacheMetrics(registry)
    return {
        LmcacheLookup: family.lookup,
        LmcacheTransfer: family.transfer,
        LmcacheStoreRequest: family.store_request,
        LmcacheFailure: family.failure,
        LmcachePrefetch: family.prefetch,
    }
