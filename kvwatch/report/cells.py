"""Cells of the text report's tables: a ratio as a percentage, a byte count with its unit."""

from __future__ import annotations


def pct(ratio: float | None) -> str:
    """A 0-1 ratio as `12.3%`; `-` when unknown."""
    return "-" if ratio is None else f"{ratio * 100:.1f}%"


def size(count: int) -> str:
    """A byte count in decimal units (`12.3 MB`)."""
    value = float(count)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{count} B"
