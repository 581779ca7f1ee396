"""Makes samples/lmstudio-2025-09-not-trimmable.log (+ .golden): older mlx-engine trims, then clears a cache it cannot trim."""

# Log lines are built whole from their format strings, however long.
# ruff: noqa: E501

from __future__ import annotations

from datetime import datetime, timedelta

from scripts.samples.lmstudio.lines import mlx, two_line
from scripts.samples.made import Made

# mlx_engine/cache_wrapper.py (2a4108f .. ef77245, 2025-08 .. 2026-04): INFO `Trimmed {n} tokens from the
# prompt cache`; WARNING `Tried to trim '{n}' tokens from the prompt cache, but could not: Cache is not
# trimmable. Clearing the cache instead.`. Framing and messages: the 2025-09-23 LM Studio paste in
# ml-explore/mlx-lm#480 (GPT-oss-20B, MLX), `2025-09-23 01:57:01 [DEBUG]` then ` [cache_wrapper][INFO]: ...`.
# The clears: hybrid/rotating caches (lmstudio-bug-tracker#1285, Qwen3 Next).


def make_log() -> str:
    """A chat whose first follow-ups trim the cache, then a model whose cache cannot be trimmed."""
    t = datetime(2025, 9, 23, 1, 57, 0)
    out = []
    trims = (41, 388, 127)
    for n in trims:
        for _ in range(2):
            out.append(two_line(t, "DEBUG", "Prompt successfully formatted with Harmony."))
        out.append(
            two_line(t, "DEBUG", mlx("cache_wrapper", "INFO", f"Trimmed {n} tokens from the prompt cache"))
        )
        t += timedelta(seconds=6)
    for n in (71, 140, 96, 212):
        out.append(two_line(t, "DEBUG", "Prompt successfully formatted with Harmony."))
        message = (
            f"Tried to trim '{n}' tokens from the prompt cache, but could not: Cache is not trimmable. "
            "Clearing the cache instead."
        )
        out.append(two_line(t, "DEBUG", mlx("cache_wrapper", "WARNING", message)))
        t += timedelta(seconds=35)
    return "\n".join(out) + "\n"


def make() -> list[Made]:
    """The sample."""
    return [Made("lmstudio-2025-09-not-trimmable.log", make_log().encode())]
