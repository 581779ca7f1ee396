"""LM Studio's line shapes, from the public pastes and mlx-engine's source (samples/README.lmstudio.md).

- two-line records (0.3.31, 0.4.x, the 2025-09 pastes): `YYYY-MM-DD HH:MM:SS` then the level in
  brackets right-aligned in 7 characters (`  [INFO]`, ` [DEBUG]`), newline, ` message`; LM Studio's own
  messages start `[model-id] `;
- one-line records (0.3.15, 0.3.18): `[YYYY-MM-DD HH:MM:SS][LEVEL] message`, a long message going on in
  untimestamped lines;
- mlx-engine (lmstudio-ai/mlx-engine mlx_engine/utils/logger.py, since 2a4108f):
  `[%(module)s][%(levelname)s]: %(message)s`, shown by LM Studio as a DEBUG record.
"""

from __future__ import annotations

import random
from datetime import datetime


def two_line(when: datetime, level: str, message: str) -> str:
    """One record of LM Studio >= 0.3.31 (two physical lines)."""
    return f"{when:%Y-%m-%d %H:%M:%S} {'[' + level + ']':>7}\n {message}"


def one_line(when: datetime, level: str, message: str) -> str:
    """One record of LM Studio 0.3.x (continuation lines, if any, are part of `message`)."""
    glue = "" if message.startswith("[") else " "  # `[INFO][LM STUDIO SERVER] ...`, `[DEBUG] Sampling ...`
    return f"[{when:%Y-%m-%d %H:%M:%S}][{level}]{glue}{message}"


def mlx(module: str, level: str, message: str) -> str:
    """An mlx-engine logging record as LM Studio shows it."""
    return f"[{module}][{level}]: {message}"


def turns(first: int, count: int, seed: int, grow: tuple[int, int] = (300, 1800)) -> list[tuple[int, int]]:
    """An agent conversation: (prompt tokens, generated tokens) per turn, each prompt holding the last."""
    rng = random.Random(seed)
    out, prompt = [], first
    for _ in range(count):
        generated = rng.randint(40, 600)
        out.append((prompt, generated))
        prompt += generated + rng.randint(*grow)
    return out
