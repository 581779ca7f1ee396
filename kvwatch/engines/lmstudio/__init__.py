"""LM Studio: its server log's records, mlx-engine's prompt-cache lines and its llama.cpp runtime's
`Cache reuse summary`."""

from __future__ import annotations

import re

from kvwatch.engines.base import Engine, Later
from kvwatch.engines.lmstudio.advice import ADVICE
from kvwatch.engines.lmstudio.blind import blindness
from kvwatch.engines.lmstudio.events import (
    LmstudioCacheEvent,
    LmstudioCompletion,
    LmstudioDiskUsage,
    LmstudioRequest,
)

#: How a record header of LM Studio's (lines.HEADER) starts.
_HEADER_START = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +\[")


def _hint(head: str) -> bool:
    """parser.looks_like reads `[stamp][LEVEL]`, `[cache_wrapper][`, `Cache reuse summary: `, `Prompt
    tokens to decode: ` or a header line (lines.ONE_LINE, lines.HEADER)."""
    if "][" in head or "Cache reuse summary: " in head or "【" in head or "Prompt cache" in head:
        return True
    if "Prompt tokens to decode: " in head:
        return True
    return any(_HEADER_START.match(text) for text in head.splitlines())


class Lmstudio(Engine):
    """LM Studio's optional capabilities (kvwatch.engines.capabilities): Hints, Reports,
    JudgesBlindness, Advises."""

    hint = staticmethod(_hint)
    section = Later("kvwatch.engines.lmstudio.report:section")
    gather = Later("kvwatch.engines.lmstudio.report:Figures")
    blindness = staticmethod(blindness)
    advice = ADVICE


ENGINE = Lmstudio(
    name="lmstudio",
    display="LM Studio",
    home="kvwatch.engines.lmstudio.parser",
    parser=Later("kvwatch.engines.lmstudio.parser:make_parser"),
    sniff_rank=0,
    events=(LmstudioRequest, LmstudioCompletion, LmstudioCacheEvent, LmstudioDiskUsage),
    signals=frozenset({"server_requests"}),
    metrics=Later("kvwatch.engines.lmstudio.metrics:handlers"),
)
