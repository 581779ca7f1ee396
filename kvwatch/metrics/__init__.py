"""Owns every kvwatch_* metric: one family class per engine, and `Metrics.apply(event)` to feed them.

Everything is registered on a registry passed in, so tests and replays use a fresh one. Counters'
wall-clock `_created` series are switched off: replays must be deterministic.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, disable_created_metrics

from kvwatch.metrics.llamacpp import LlamacppMetrics
from kvwatch.metrics.sources import SourceCounts, SourceCountsCollector
from kvwatch.metrics.usage import UsageMetrics
from kvwatch.metrics.vllm import VllmMetrics
from kvwatch.model import (
    EngineFact,
    Event,
    LlamaRequest,
    UsageRecord,
    UsageSkipped,
    VllmKvTransfer,
    VllmPrefixV0,
    VllmSpecDecoding,
    VllmStats,
)

disable_created_metrics()  # type: ignore[no-untyped-call]

__all__ = ["Metrics", "SourceCounts"]


class Metrics:
    """The metrics of one kvwatch process (or one replay)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.vllm = VllmMetrics(registry)
        self.llamacpp = LlamacppMetrics(registry)
        self.usage = UsageMetrics(registry)
        self.sources = SourceCountsCollector()
        registry.register(self.sources)

    def apply(self, event: Event) -> None:
        """Update the metrics an event touches."""
        if isinstance(event, VllmStats):
            self.vllm.stats(event)
        elif isinstance(event, VllmKvTransfer):
            self.vllm.kv_transfer(event)
        elif isinstance(event, VllmPrefixV0):
            self.vllm.prefix_v0(event)
        elif isinstance(event, VllmSpecDecoding):
            self.vllm.spec_decoding(event)
        elif isinstance(event, EngineFact):
            self.vllm.fact(event)
        elif isinstance(event, LlamaRequest):
            self.llamacpp.apply(event)
        elif isinstance(event, UsageRecord):
            self.usage.apply(event)
        elif isinstance(event, UsageSkipped):
            self.usage.skipped_row(event)
