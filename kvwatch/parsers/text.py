"""Text clean-up every parser needs first: ANSI colour, carriage returns, safe numbers."""

from __future__ import annotations

import math
import re

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (vLLM 0.8-0.11 colour every prefix, even off a TTY)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def holds_any(text: str, words: tuple[str, ...]) -> bool:
    """Whether `text` holds one of `words`: `any()` over a generator, written as a loop, which on the
    per-line path (every line's markers) takes a third of the time."""
    for word in words:  # noqa: SIM110 - the loop is the point (see above)
        if word in text:
            return True
    return False


def segments(text: str) -> list[str]:
    """Split a physical line on lone carriage returns (tqdm bars); drop empty pieces."""
    if "\r" not in text:
        return [text]
    return [piece for piece in text.split("\r") if piece]


def finite(text: str) -> float | None:
    """Parse a float; None for nan, inf, overflow (1e400) or garbage."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def count(text: str) -> int | None:
    """Parse a non-negative integer; None for anything else."""
    text = text.strip().replace(",", "")
    return int(text) if text.isdigit() else None


def percent(text: str) -> float | None:
    """Parse `12.3` (a percentage) into a ratio 0-1; None when outside 0-100 or not finite."""
    value = finite(text)
    if value is None or not 0.0 <= value <= 100.0:
        return None
    return round(value / 100.0, 6)  # the log prints %.1f/%.2f: keep 0.869, not 0.8690000000000001
