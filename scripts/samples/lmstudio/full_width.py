"""Makes samples/lmstudio-2025-09-full-width.log (+ .golden): mlx-engine's trims under full-width framing."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from scripts.samples.made import Made

# The framing and the first three records are the real lines of ml-explore/mlx-lm#480's description
# (hkanyeeee, 2025-09-18: LM Studio, Qwen3-Coder MLX, driven by Cline/Roo Code), pasted from a CJK locale:
# `2025-09-18 07:03:24 【DEBUG】`, then the message with full-width brackets and without its leading
# space, `【cache_wrapper】【INFO】: Trimmed 74 tokens from the prompt cache` (74, 2020, 3094 at 07:03:24,
# 07:03:56, 07:04:50). The message is mlx-engine's cache_wrapper.py INFO `Trimmed {n} tokens from the
# prompt cache` (2025-08 .. 2026-04, see trimming.py). The records after them are the same shape: the
# session goes on, each agent turn trimming what its re-rendered prompt no longer shares with the cache.
REAL = ((datetime(2025, 9, 18, 7, 3, 24), 74), (datetime(2025, 9, 18, 7, 3, 56), 2020),
        (datetime(2025, 9, 18, 7, 4, 50), 3094))  # fmt: skip


def record(when: datetime, trimmed: int) -> str:
    """One two-line record as the paste shows it."""
    message = f"【cache_wrapper】【INFO】: Trimmed {trimmed} tokens from the prompt cache"
    return f"{when:%Y-%m-%d %H:%M:%S} 【DEBUG】\n{message}"


def make_log() -> str:
    """The thread's three records, then nine more turns of the same session."""
    rng = random.Random(480)
    out = [record(when, n) for when, n in REAL]
    when = REAL[-1][0]
    for _ in range(9):
        when += timedelta(seconds=rng.randint(18, 75))
        out.append(record(when, rng.choice((rng.randint(40, 160), rng.randint(1200, 4200)))))
    return "\n".join(out) + "\n"


def make() -> list[Made]:
    """The sample."""
    return [Made("lmstudio-2025-09-full-width.log", make_log().encode())]
