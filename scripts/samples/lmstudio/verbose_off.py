"""Makes samples/lmstudio-v0-4-verbose-off.log (+ .golden): LM Studio with Verbose Logging off, no DEBUG record at all."""

# Log lines are built whole from their format strings, however long.
# ruff: noqa: E501

from __future__ import annotations

from datetime import datetime, timedelta

from scripts.samples.lmstudio.lines import turns, two_line
from scripts.samples.made import Made

# LM Studio 0.4.12 (lmstudio-bug-tracker#1826, Windows, 2026-04-19) and 0.3.31 (#1143) INFO records:
# `[model] Running chat completion on conversation with N messages.`, `Streaming response...`, `Prompt
# processing progress: x%`. The runtimes' cache lines are DEBUG records, absent here.
MODEL = "google/gemma-4-e4b"


def make_log() -> str:
    """Five chat completions, INFO records only."""
    t = datetime(2026, 4, 19, 13, 20, 0)
    out = []
    for i, (prompt, generated) in enumerate(turns(2400, 5, seed=1826)):
        out.append(
            two_line(
                t, "INFO", f"[{MODEL}] Running chat completion on conversation with {2 + 2 * i} messages."
            )
        )
        out.append(two_line(t, "INFO", f"[{MODEL}] Streaming response..."))
        for done in (0.0, 100.0):
            out.append(two_line(t, "INFO", f"[{MODEL}] Prompt processing progress: {done:.1f}%"))
            t += timedelta(seconds=prompt / 2000)
        t += timedelta(seconds=generated / 50)
        out.append(two_line(t, "INFO", "Finished streaming response"))
        t += timedelta(seconds=40)
    return "\n".join(out) + "\n"


def make() -> list[Made]:
    """The sample."""
    return [Made("lmstudio-v0-4-verbose-off.log", make_log().encode())]
