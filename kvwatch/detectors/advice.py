"""Each finding's cause and fix in the words of its source's engine, where the engine has its own.

A detector words its cause and fix for the engine whose incident it was built from (llama-server's
flags in `prefix_reuse_broken`'s); an engine whose users act elsewhere (Ollama, LM Studio, SGLang)
declares its own by alert name (it Advises: kvwatch.engines.capabilities), and the finding is
reworded here.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvwatch.engines import advice_of
from kvwatch.model import Finding
from kvwatch.windows.window import Windows


def advised(findings: Sequence[Finding], windows: Windows) -> list[Finding]:
    """`findings`, each reworded by its source's engine where that engine advises on its alert."""
    out = list(findings)
    for i, finding in enumerate(out):
        source = next((value for key, value in finding.labels if key == "source"), None)
        window = windows.sources.get(source) if source is not None else None
        advise = advice_of(window.kind).get(finding.alert) if window is not None and window.kind else None
        if advise is not None:
            out[i] = advise(finding)
    return out
