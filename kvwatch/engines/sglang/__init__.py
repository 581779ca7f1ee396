"""SGLang, 0.1.14 to 0.5.23: batch lines, request records, HiCache lines, startup facts (parser, metrics,
report, advice)."""

from __future__ import annotations

from kvwatch.engines.base import Engine, Later
from kvwatch.engines.sglang.advice import ADVICE
from kvwatch.engines.sglang.events import SglangDecode, SglangHicacheError, SglangPrefill, SglangRequest
from kvwatch.model import CachePrefetch


def _hint(head: str) -> bool:
    """parser.looks_like, but for the prefix it asks of a head that names sglang."""
    return (
        any(text in head for text in ("server_args=ServerArgs(", "server_args={", "Prefill batch"))
        or any(text in head for text in ("Decode batch", "new fill batch. #seq:"))
        or "sglang" in head.lower()
    )


class Sglang(Engine):
    """SGLang's optional capabilities (kvwatch.engines.capabilities): Hints, Reports,
    ForgetsOnRestart, Advises, CarriesLayers."""

    hint = staticmethod(_hint)
    section = Later("kvwatch.engines.sglang.report:section")
    gather = Later("kvwatch.engines.sglang.report:Figures")
    restart_forgets = ("prefix_cache", "cache_storage_backend", "cache_prefetch_policy", "prefetch_logged")
    advice = ADVICE
    layers = ("lmcache",)  # SGLang's LMCache adapter logs through LMCache's own logger


ENGINE = Sglang(
    name="sglang",
    display="SGLang",
    home="kvwatch.engines.sglang.parser",
    parser=Later("kvwatch.engines.sglang.parser:make_parser"),
    sniff_rank=1,
    events=(SglangPrefill, SglangDecode, SglangRequest, SglangHicacheError, CachePrefetch),
    signals=frozenset({"server_requests", "derived_requests"}),
    metrics=Later("kvwatch.engines.sglang.metrics:handlers"),
)
