"""What a parser hands on when a line of a shape it knows carries what it does not (format drift).

An engine upgrade that adds a field, or changes a known line, must show, not go silent: each such line
gives an `UnreadFields` event (counted per engine and sanitised shape by `kvwatch_unknown_fields_total`),
and the first one of a shape, then its 10th, 100th, ... give the source's fact `unread:<shape>` (the
count so far), which `format_drift` reads. A shape holds names and punctuation only: digits are masked
and it is cut short, so no number and no prompt text leaves the parser through it.
"""

from __future__ import annotations

import re

from kvwatch.model import EngineFact, Event, UnreadFields

#: The fact key prefix of a drifted shape (its value: the lines counted so far).
FACT = "unread:"
#: Distinct shapes noted per source; later ones are counted as "other".
MAX_SHAPES = 16
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_CUT = 120


def sanitise(text: str) -> str:
    """A line's shape: numbers masked as N, cut at 120 characters."""
    return _DIGITS.sub("N", text)[:_CUT]


class Drift:
    """One source's drifted shapes and their counts."""

    def __init__(self, source: str, engine: str) -> None:
        self.source, self.engine = source, engine
        self.counts: dict[str, int] = {}

    def seen(self, when: float, shape: str) -> list[Event]:
        """One more line of a drifted `shape` (already sanitised): its events."""
        counts = self.counts
        if shape not in counts and len(counts) >= MAX_SHAPES:
            shape = "other"
        count = counts[shape] = counts.get(shape, 0) + 1
        events: list[Event] = [UnreadFields(self.source, when, self.engine, shape)]
        if _power_of_ten(count):
            events.append(EngineFact(self.source, when, FACT + shape, str(count)))
        return events


def _power_of_ten(n: int) -> bool:
    while n % 10 == 0:
        n //= 10
    return n == 1
