"""llama.cpp's llama-server: slot and srv lines joined into request records (parser, metrics, report)."""

from __future__ import annotations

from kvwatch.engines.base import Engine, Later
from kvwatch.engines.llamacpp.events import LlamaRequest

#: parser.MARKERS (a test holds them equal): the parser, which imports much, is not needed to know a log
#: holds none.
SNIFF_MARKERS: tuple[str, ...] = ("slot ", "srv ", "eval time", "total time", "initializing", "listening")
SNIFF_MARKERS += ('{"type"', " | tid=", "timestamp=", "kv cache rm")
# (lifecycle.MARKERS: its start and death)
SNIFF_MARKERS += ("model loaded", "failed to", "exiting due", "error loading", "error:")
SNIFF_MARKERS += ("unable to load model",)


def _hint(head: str) -> bool:
    """parser.looks_like reads lines that hold one of its markers."""
    return any(marker in head for marker in SNIFF_MARKERS)


class Llamacpp(Engine):
    """llama.cpp's optional capabilities (kvwatch.engines.capabilities): Hints, Reports,
    ConvertsRequests."""

    hint = staticmethod(_hint)
    section = Later("kvwatch.engines.llamacpp.report:section")
    gather = Later("kvwatch.engines.llamacpp.report:Figures")
    requests = Later("kvwatch.engines.llamacpp.records:Requests")


ENGINE = Llamacpp(
    name="llamacpp",
    display="llama.cpp",
    home="kvwatch.engines.llamacpp.parser",
    parser=Later("kvwatch.engines.llamacpp.parser:make_parser"),
    sniff_rank=1,
    events=(LlamaRequest,),
    signals=frozenset({"server_requests", "derived_requests"}),
    metrics=Later("kvwatch.engines.llamacpp.metrics:handlers"),
)
