"""The replay summary hands each event to the gatherings its source's engine calls for."""

from __future__ import annotations

from kvwatch.engines.lmcache.events import LmcacheLookup, LmcacheTransfer
from kvwatch.engines.lmcache.report import Figures
from kvwatch.engines.vllm.events import VllmStats
from kvwatch.model import SourceCounts
from kvwatch.output.summary import Summary

T0 = 1_787_000_000.0


def test_a_layers_events_go_to_the_layers_the_sources_engine_carries_and_nowhere_else() -> None:
    """LMCache's events reach its gathering in a vLLM source, an SGLang source (both carry it) and in an
    LMCache one, each event once; in a source whose engine carries no layer they are dropped (its times
    still count)."""
    summary = Summary()
    for source, engine in (("v", "vllm"), ("m", "lmcache"), ("g", "sglang"), ("s", "llamacpp")):
        summary.declare(source, engine, "plain", SourceCounts())
    for source in ("v", "m", "g", "s"):
        for n in range(3):  # (the second and third events of a type go the way the first found)
            summary.observe(LmcacheLookup(source, T0 + n, 512, 256, 256))
            summary.observe(LmcacheTransfer(source, T0 + n, "tp0", True, 128))
    summary.observe(VllmStats("v", T0 - 5, "0", 1.0, 2.0, 1, 0, 0.5))
    for source in ("v", "m", "g"):
        figures = summary.sources[source].parts["lmcache"]
        assert isinstance(figures, Figures)
        worker = figures.workers["tp0"]
        assert (3, 768, 3, 384) == (figures.lookups, figures.hit, worker.retrieves, worker.retrieved)
    assert {"vllm", "lmcache"} == set(summary.sources["v"].parts)
    assert {} == summary.sources["s"].parts
    assert (T0, T0 + 2) == (summary.sources["s"].first, summary.sources["s"].last)
