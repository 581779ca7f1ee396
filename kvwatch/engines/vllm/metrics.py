"""The `kvwatch_vllm_*` metrics: what vLLM's stats, KV Transfer and startup lines say, per engine.

Gauges hold the last logged value; counters sum per-interval deltas. Series appear only once their
lines have been seen: no KV line for an engine means no offload counters (unknown, not zero).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kvwatch.engines.families import Family
from kvwatch.engines.vllm.events import VllmKvTransfer, VllmPrefixV0, VllmSpecDecoding, VllmStats
from kvwatch.model import EngineFact

_SE = ("source", "engine")


class VllmMetrics:
    """Owns every kvwatch_vllm_* metric."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def gauge(name: str, doc: str, labels: tuple[str, ...] = _SE) -> Family:
            return Family(name, doc, "gauge", labels, registry)

        def counter(name: str, doc: str) -> Family:
            return Family(name, doc, "counter", _SE, registry)

        self.prefix = gauge(
            "kvwatch_vllm_prefix_cache_hit_ratio",
            "Prefix cache hit rate (0-1) as last logged; vLLM V1 slides it over the last 1000 requests.",
        )
        self.external = gauge(
            "kvwatch_vllm_external_prefix_cache_hit_ratio",
            "External (KV connector, e.g. CPU offload) prefix cache hit rate (0-1) as last logged.",
        )
        self.kv_usage = gauge(
            "kvwatch_vllm_kv_cache_usage_ratio",
            "Share of KV cache blocks in use (0-1), last logged.",
        )
        self.stats_lines = counter(
            "kvwatch_vllm_stats_lines", "Stats lines logged, one per engine per stats interval."
        )
        self.store = counter(
            "kvwatch_vllm_kv_offload_store_bytes",
            "Bytes the KV connector stored (GPU to offload tier).",
        )
        self.load = counter(
            "kvwatch_vllm_kv_offload_load_bytes",
            "Bytes the KV connector loaded back (offload tier to GPU).",
        )
        self.lookups = counter(
            "kvwatch_vllm_kv_offload_lookups", "Offload lookups reported by the connector (0.26+)."
        )
        self.store_blocks = counter(
            "kvwatch_vllm_kv_offload_store_blocks",
            "KV blocks a block-counting connector (SimpleCPU) stored or was storing, per its lines.",
        )
        self.load_blocks = counter(
            "kvwatch_vllm_kv_offload_load_blocks",
            "KV blocks a block-counting connector (SimpleCPU) loaded back (offload tier to GPU).",
        )
        self.capacity = gauge(
            "kvwatch_vllm_kv_cache_capacity_tokens",
            "KV cache capacity in tokens from the startup log.",
        )
        self.info = gauge(
            "kvwatch_vllm_info",
            "vLLM version and KV connector seen in the log (value 1).",
            ("source", "version", "connector"),
        )
        self.prompt_tps = gauge(
            "kvwatch_vllm_prompt_throughput_tokens_per_second",
            "Avg prompt throughput, last logged.",
        )
        self.gen_tps = gauge(
            "kvwatch_vllm_generation_throughput_tokens_per_second",
            "Avg generation throughput, last logged.",
        )
        self.running = gauge("kvwatch_vllm_requests_running", "Requests running, last logged.")
        self.waiting = gauge("kvwatch_vllm_requests_waiting", "Requests waiting, last logged.")
        self.preemptions = counter("kvwatch_vllm_preemptions", "Preemptions logged in stats lines.")
        self.accepted = counter(
            "kvwatch_vllm_spec_decode_accepted_tokens", "Speculative draft tokens accepted."
        )
        self.drafted = counter("kvwatch_vllm_spec_decode_drafted_tokens", "Speculative draft tokens.")
        self.last_stats = gauge(
            "kvwatch_vllm_last_stats_timestamp_seconds", "Event time of the last stats line (Unix)."
        )
        self._info: dict[str, tuple[str, str]] = {}
        # The series every stats line sets: they appear together with an engine's first stats line.
        self._per_engine = (
            self.stats_lines,
            self.prompt_tps,
            self.gen_tps,
            self.running,
            self.waiting,
            self.preemptions,
            self.last_stats,
        )

    def stats(self, ev: VllmStats) -> None:
        """Apply one stats line."""
        labels = (ev.source, ev.engine)
        if labels not in self.stats_lines.series:
            for family in self._per_engine:
                family.set(labels, 0.0)
        self.stats_lines.inc(labels, 1)
        if ev.prefix_hit is not None:
            self.prefix.set(labels, ev.prefix_hit)
        if ev.external_hit is not None:
            self.external.set(labels, ev.external_hit)
        if ev.kv_cache_usage is not None:
            self.kv_usage.set(labels, ev.kv_cache_usage)
        self.prompt_tps.set(labels, ev.prompt_throughput)
        self.gen_tps.set(labels, ev.generation_throughput)
        self.running.set(labels, ev.running)
        self.waiting.set(labels, ev.waiting)
        if ev.preemptions:
            self.preemptions.inc(labels, ev.preemptions)
        self.last_stats.set(labels, ev.time)

    def prefix_v0(self, ev: VllmPrefixV0) -> None:
        """Apply V0's separate prefix line: the cache's rate (the swap column's is not exported)."""
        self.prefix.set((ev.source, ev.engine), ev.hit)

    def kv_transfer(self, ev: VllmKvTransfer) -> None:
        """Apply one KV Transfer line's per-interval deltas."""
        labels = (ev.source, ev.engine)
        store, load, lookups = ev.store_bytes, ev.load_bytes, ev.lookups
        if store is not None and load is not None:
            self.store.inc(labels, store)
            self.load.inc(labels, load)
        if lookups is not None:
            self.lookups.inc(labels, lookups)
        if ev.store_blocks is not None:
            self.store_blocks.inc(labels, ev.store_blocks)
            self.load_blocks.inc(labels, ev.load_blocks or 0)

    def spec_decoding(self, ev: VllmSpecDecoding) -> None:
        """Apply one SpecDecoding line."""
        labels = (ev.source, ev.engine)
        self.accepted.inc(labels, ev.accepted_tokens)
        self.drafted.inc(labels, ev.drafted_tokens)

    def forget(self, source: str) -> None:
        """Forget the version and connector seen for `source` (its series are dropped by Metrics)."""
        self._info.pop(source, None)

    def fact(self, ev: EngineFact) -> None:
        """Apply a startup fact: capacity per engine, version and connector per source."""
        if ev.key == "kv_capacity_tokens":
            self.capacity.set((ev.source, ev.engine), float(ev.value))
        elif ev.key in ("version", "connector"):
            version, connector = self._info.get(ev.source, ("unknown", "none"))
            if ev.key == "version":
                version = ev.value
            else:
                connector = ev.value
            old = self._info.get(ev.source)
            if old is not None and old != (version, connector):
                self.info.remove((ev.source, *old))
            self._info[ev.source] = (version, connector)
            self.info.set((ev.source, version, connector), 1)


def handlers(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    """The engine's families on `registry`, as the handler of each event type they are fed
    (kvwatch.engines.base.MetricsFactory)."""
    family = VllmMetrics(registry)
    return {
        VllmStats: family.stats,
        VllmKvTransfer: family.kv_transfer,
        VllmPrefixV0: family.prefix_v0,
        VllmSpecDecoding: family.spec_decoding,
        EngineFact: family.fact,
    }
