"""`format_drift` (info): a source's lines of a known kind carry fields or a shape kvwatch does not know.

An engine upgrade that renames, adds or reshapes what a known line prints is read for what kvwatch still
knows, and told here rather than left to silence (kvwatch.parsers.drift): one finding per source, naming
the engine, each sanitised shape (numbers masked, no values) and how many lines had it. It fires at the
first such line (the next tick of event time) and holds from then on: a shape seen once stays a fact
of the source. Info, not warning: the figures kvwatch reads stay right; those it does
not know are missing until a kvwatch that knows them.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.model import Finding
from kvwatch.parsers.drift import read_fact
from kvwatch.windows.window import Windows, ordered

CAUSE = (
    "Lines of a kind kvwatch reads carry fields or a shape it does not know: the engine was likely "
    "upgraded. kvwatch still reads the fields it knows from these lines; the new ones are not read."
)
FIX = (
    "Check the engine's version against the versions kvwatch names for it (docs/metrics.md), and upgrade "
    "kvwatch or report the shape (it holds no values) so the new fields are read. Until then, figures of "
    "the new fields are missing; the others stay right."
)


@dataclass(frozen=True)
class Settings:
    """Lines of drifted shapes before the alert (1: the first tells it)."""

    enabled: bool = True
    min_lines: int = 1


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """One finding per source with drifted shapes."""
    if not cfg.enabled:
        return []
    findings = []
    for source, win in ordered(windows.sources):
        shapes: dict[str, int] = {}
        engines: set[str] = set()
        for key, value in win.facts.items():
            drifted = read_fact(key)
            if drifted is not None and value.isdigit():
                engines.add(drifted[0])
                shapes[drifted[1]] = shapes.get(drifted[1], 0) + int(value)
        total = sum(shapes.values())
        if not shapes or total < cfg.min_lines:
            continue
        engine = ", ".join(sorted(engines))  # (the parser's engine that read the lines: a layer's own)
        listed = "; ".join(f"{shape} ({count})" for shape, count in sorted(shapes.items()))
        findings.append(
            Finding(
                alert="format_drift",
                labels=(("source", source),),
                severity="info",
                summary=f"{engine} lines kvwatch does not fully know: {len(shapes)} shape(s), "
                f"{total}+ line(s): {listed}"[:300],
                cause=CAUSE,
                fix=FIX,
                evidence={"engine": engine, "shapes": shapes, "lines_at_least": total},
            )
        )
    return findings
