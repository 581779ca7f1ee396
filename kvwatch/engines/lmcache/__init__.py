"""LMCache, 0.3.0 to 0.5.6: the KV cache layer vLLM carries (`LMCacheConnectorV1`), read inside vLLM's
log (the vllm engine's `layers`), or alone in its MP-mode server's log (`engine = "lmcache"`)."""

from __future__ import annotations

from kvwatch.engines.base import Engine, Later
from kvwatch.engines.lmcache.blind import blindness


def _hint(head: str) -> bool:
    """parser.looks_like, but only its marker (lines.MARKER): detection asks it of a vLLM log's first
    lines too, before vLLM's sniff takes them (kvwatch.engines.detect)."""
    return "] LMCache " in head


class Lmcache(Engine):
    """LMCache's optional capabilities (kvwatch.engines.capabilities): Hints, Reports, JudgesBlindness."""

    hint = staticmethod(_hint)
    section = Later("kvwatch.engines.lmcache.report:section")
    gather = Later("kvwatch.engines.lmcache.report:Figures")
    blindness = staticmethod(
        blindness
    )  # (judged for the sources of the engines that carry it: see no_signal)


ENGINE = Lmcache(
    name="lmcache",
    display="LMCache",
    home="kvwatch.engines.lmcache.parser",
    parser=Later("kvwatch.engines.lmcache.parser:make_parser"),
    sniff_rank=5,  # after every engine that may carry its lines (vLLM)
    # A layer's events belong to the source's engine (vLLM's, when it carries them): they never decide
    # which engine a source is.
    events=(),
    signals=frozenset({"offload"}),
    metrics=Later("kvwatch.engines.lmcache.metrics:handlers"),
)
