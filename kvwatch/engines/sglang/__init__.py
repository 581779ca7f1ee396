"""SGLang, 0.1.14 to 0.5.23: batch lines, request records, HiCache lines, startup facts (parser, metrics)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kvwatch.engines.base import Engine, Gathering
from kvwatch.engines.sglang.advice import ADVICE
from kvwatch.model import (
    CachePrefetch,
    SglangDecode,
    SglangHicacheError,
    SglangPrefill,
    SglangRequest,
)
from kvwatch.parsers.base import Parser, ParserSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kvwatch.report.summary import SourceView


def _parser(source: str, settings: ParserSettings, options: Any) -> Parser:
    from kvwatch.engines import layer_parsers
    from kvwatch.engines.sglang.parser import SglangParser

    return SglangParser(source, settings, layer_parsers(ENGINE.name, source, settings))


def _metrics(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    from kvwatch.engines.sglang.metrics import SglangMetrics

    family = SglangMetrics(registry)
    return {
        SglangPrefill: family.prefill,
        SglangDecode: family.decode,
        SglangRequest: family.request,
        CachePrefetch: family.prefetch,
        SglangHicacheError: family.error,
    }


def _report(view: SourceView) -> list[str] | None:
    from kvwatch.engines.sglang.report import section

    return section(view)


def _gather() -> Gathering:
    from kvwatch.engines.sglang.report import Figures

    return Figures()


def _hint(head: str) -> bool:
    """parser.looks_like, but for the prefix it asks of a head that names sglang."""
    return (
        any(text in head for text in ("server_args=ServerArgs(", "server_args={", "Prefill batch"))
        or any(text in head for text in ("Decode batch", "new fill batch. #seq:"))
        or "sglang" in head.lower()
    )


ENGINE = Engine(
    name="sglang",
    display="SGLang",
    home="kvwatch.engines.sglang.parser",
    parser=_parser,
    sniff_rank=1,
    sniff_hint=_hint,
    events=(SglangPrefill, SglangDecode, SglangRequest, SglangHicacheError, CachePrefetch),
    signals=frozenset({"server_requests", "derived_requests"}),
    metrics=_metrics,
    report=_report,
    gather=_gather,
    restart_forgets=("prefix_cache", "cache_storage_backend", "cache_prefetch_policy", "prefetch_logged"),
    advice=ADVICE,
    layers=("lmcache",),  # SGLang's LMCache adapter logs through LMCache's own logger
)
