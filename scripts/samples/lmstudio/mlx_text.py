"""Makes samples/lmstudio-v0-4-mlx-healthy.log and samples/lmstudio-v0-4-mlx-zero-reuse.log (+ .golden): mlx-engine text models, `Prompt cache: using N/M`."""

# Log lines are built whole from their format strings, however long.
# ruff: noqa: E501

from __future__ import annotations

from datetime import datetime, timedelta

from scripts.samples.lmstudio.lines import mlx, turns, two_line
from scripts.samples.made import Made

# mlx_engine/cache_wrapper.py:254 (ef77245, 2026-04-10): INFO `Prompt cache: using %d/%d tokens from
# cache`. Framing: LM Studio 0.4.12 / 0.3.31 pastes. The broken case: mlx-engine#327 ("kv cache starts
# back from 0 every other turn", LM Studio 0.4.x, Anthropic-compatible API): `0/N` on follow-ups.
MODEL = "qwen/qwen3-coder-30b"


def conversation(zero_from: int | None, seed: int) -> str:
    """Ten agent turns; from turn `zero_from` on, nothing is taken from the cache."""
    t = datetime(2026, 5, 15, 14, 2, 11)
    out = []
    previous = 0
    for i, (prompt, generated) in enumerate(turns(11800, 10, seed)):
        cached = 0 if zero_from is not None and i >= zero_from else previous
        out.append(
            two_line(
                t, "INFO", f"[{MODEL}] Running chat completion on conversation with {3 + 2 * i} messages."
            )
        )
        out.append(two_line(t, "INFO", f"[{MODEL}] Streaming response..."))
        out.append(
            two_line(
                t,
                "DEBUG",
                mlx("cache_wrapper", "INFO", f"Prompt cache: using {cached}/{prompt} tokens from cache"),
            )
        )
        new = prompt - cached
        for done in (0.0, 25.0, 50.0, 75.0, 100.0) if new > 2048 else (0.0, 100.0):
            out.append(two_line(t, "INFO", f"[{MODEL}] Prompt processing progress: {done:.1f}%"))
            t += timedelta(seconds=new / 900 / 4)
        t += timedelta(seconds=generated / 45)
        out.append(two_line(t, "INFO", "Finished streaming response"))
        t += timedelta(seconds=20)
        previous = prompt + generated - 1  # the last generated token is not yet in the cache
    return "\n".join(out) + "\n"


def make() -> list[Made]:
    """The samples."""
    return [
        Made("lmstudio-v0-4-mlx-healthy.log", conversation(None, 327).encode()),
        Made("lmstudio-v0-4-mlx-zero-reuse.log", conversation(2, 327).encode()),
    ]
