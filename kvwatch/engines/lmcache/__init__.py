"""LMCache, 0.3.0 to 0.5.6: the KV cache layer vLLM carries (`LMCacheConnectorV1`), read inside vLLM's
log (the vllm engine's `layers`), or alone in its MP-mode server's log (`engine = "lmcache"`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kvwatch.engines.base import AS_LAYER, Engine, Gathering
from kvwatch.engines.lmcache.blind import blindness
from kvwatch.model import LmcacheFailure, LmcacheLookup, LmcachePrefetch, LmcacheStoreRequest, LmcacheTransfer
from kvwatch.parsers.base import Parser, ParserSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kvwatch.output.summary import SourceView


def _parser(source: str, settings: ParserSettings, options: Any) -> Parser:
    # Inside vLLM's log the sums are held for a stretch (vLLM's next line hands them on); alone, in an
    # MP-mode server's log that may fall silent, each line's are handed on at once.
    from kvwatch.engines.lmcache.parser import LmcacheLayer

    return LmcacheLayer(source, settings, hold=options == AS_LAYER)


def _metrics(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    from kvwatch.engines.lmcache.metrics import LmcacheMetrics

    family = LmcacheMetrics(registry)
    return {
        LmcacheLookup: family.lookup,
        LmcacheTransfer: family.transfer,
        LmcacheStoreRequest: family.store_request,
        LmcacheFailure: family.failure,
        LmcachePrefetch: family.prefetch,
    }


def _report(view: SourceView) -> list[str] | None:
    from kvwatch.engines.lmcache.report import section

    return section(view)


def _gather() -> Gathering:
    from kvwatch.engines.lmcache.report import Figures

    return Figures()


ENGINE = Engine(
    name="lmcache",
    display="LMCache",
    home="kvwatch.engines.lmcache.parser",
    parser=_parser,
    sniff_rank=5,  # after every engine that may carry its lines (vLLM)
    # A layer's events belong to the source's engine (vLLM's, when it carries them): they never decide
    # which engine a source is.
    events=(),
    signals=frozenset({"offload"}),
    metrics=_metrics,
    report=_report,
    gather=_gather,
    blindness=blindness,  # (judged for the sources of the engines that carry it: see no_signal)
)
