"""The `kvwatch_vllm_*` metrics: what vLLM's stats, KV Transfer and startup lines say, per engine.

Gauges hold the last logged value; counters sum per-interval deltas. Series appear only once their
lines have been seen: no KV line for an engine means no offload counters (unknown, not zero).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from kvwatch.model import EngineFact, VllmKvTransfer, VllmPrefixV0, VllmSpecDecoding, VllmStats

_SE = ("source", "engine")


@dataclass(frozen=True, slots=True)
class _EngineSeries:
    """The always-present children of one (source, engine)."""

    lines: Counter
    prompt_tps: Gauge
    gen_tps: Gauge
    running: Gauge
    waiting: Gauge
    preemptions: Counter
    last_stats: Gauge


class VllmMetrics:
    """Owns every kvwatch_vllm_* metric."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def gauge(name: str, doc: str, labels: tuple[str, ...] = _SE) -> Gauge:
            return Gauge(name, doc, labels, registry=registry)

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, _SE, registry=registry)

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
        self._series: dict[tuple[str, str], _EngineSeries] = {}
        self._children: dict[tuple[int, tuple[str, str]], Gauge | Counter] = {}

    def _engine(self, labels: tuple[str, str]) -> _EngineSeries:
        # labels() takes a lock and hashes every call; an engine's children are looked up once.
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = _EngineSeries(
                self.stats_lines.labels(*labels),
                self.prompt_tps.labels(*labels),
                self.gen_tps.labels(*labels),
                self.running.labels(*labels),
                self.waiting.labels(*labels),
                self.preemptions.labels(*labels),
                self.last_stats.labels(*labels),
            )
        return series

    def _child(self, metric: Any, labels: tuple[str, str]) -> Any:
        # A series appears only once set, as with labels() on the spot; looked up once after that.
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def stats(self, ev: VllmStats) -> None:
        """Apply one stats line."""
        labels = (ev.source, ev.engine)
        series = self._engine(labels)
        series.lines.inc()
        if ev.prefix_hit is not None:
            self._child(self.prefix, labels).set(ev.prefix_hit)
        if ev.external_hit is not None:
            self._child(self.external, labels).set(ev.external_hit)
        if ev.kv_cache_usage is not None:
            self._child(self.kv_usage, labels).set(ev.kv_cache_usage)
        series.prompt_tps.set(ev.prompt_throughput)
        series.gen_tps.set(ev.generation_throughput)
        series.running.set(ev.running)
        series.waiting.set(ev.waiting)
        if ev.preemptions:
            series.preemptions.inc(ev.preemptions)
        series.last_stats.set(ev.time)

    def prefix_v0(self, ev: VllmPrefixV0) -> None:
        """Apply V0's separate prefix line (its CPU figure is swap space and is not exported)."""
        self.prefix.labels(ev.source, ev.engine).set(ev.gpu_hit)

    def kv_transfer(self, ev: VllmKvTransfer) -> None:
        """Apply one KV Transfer line's per-interval deltas."""
        labels = (ev.source, ev.engine)
        if ev.store_bytes is not None and ev.load_bytes is not None:
            self._child(self.store, labels).inc(ev.store_bytes)
            self._child(self.load, labels).inc(ev.load_bytes)
        if ev.lookups is not None:
            self._child(self.lookups, labels).inc(ev.lookups)

    def spec_decoding(self, ev: VllmSpecDecoding) -> None:
        """Apply one SpecDecoding line."""
        self.accepted.labels(ev.source, ev.engine).inc(ev.accepted_tokens)
        self.drafted.labels(ev.source, ev.engine).inc(ev.drafted_tokens)

    def fact(self, ev: EngineFact) -> None:
        """Apply a startup fact: capacity per engine, version and connector per source."""
        if ev.key == "kv_capacity_tokens":
            self.capacity.labels(ev.source, ev.engine).set(float(ev.value))
        elif ev.key in ("version", "connector"):
            version, connector = self._info.get(ev.source, ("unknown", "none"))
            if ev.key == "version":
                version = ev.value
            else:
                connector = ev.value
            old = self._info.get(ev.source)
            if old is not None and old != (version, connector):
                self.info.remove(ev.source, *old)
            self._info[ev.source] = (version, connector)
            self.info.labels(ev.source, version, connector).set(1)
