"""Cells of the engines' report sections' tables (`replay --format text`): a ratio as a percentage, a
byte count with its unit, a request's token cells."""

from __future__ import annotations

from collections.abc import Sequence


def pct(ratio: float | None) -> str:
    """A 0-1 ratio as `12.3%`; `-` when unknown."""
    return "-" if ratio is None else f"{ratio * 100:.1f}%"


def tokens(prompt: int, cached: int) -> tuple[str, str, str, str]:
    """A request's prompt, cached and new tokens and its hit rate (`-` for an empty prompt)."""
    return str(prompt), str(cached), str(prompt - cached), pct(cached / prompt) if prompt else "-"


def size(count: int) -> str:
    """A byte count in decimal units (`12.3 MB`)."""
    value = float(count)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{count} B"


def table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]], left: frozenset[str]) -> list[str]:
    """Rows under their header, columns padded to their widest cell; `left` columns align left."""
    every = [header, *rows]
    widths = [max(len(row[i]) for row in every) for i in range(len(header))]
    return [
        "  ".join(
            cell.ljust(width) if name in left else cell.rjust(width)
            for name, cell, width in zip(header, row, widths, strict=True)
        ).rstrip()
        for row in every
    ]
