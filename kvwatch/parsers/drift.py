"""Format drift, one mechanism for every engine: what a parser hands on when a line of a kind it reads
carries keys it does not know, or no longer has any shape it knows.

An engine upgrade that adds a field, renames one or rewords a known line must show, not go silent.
Each engine declares, in its own package, the `Shapes` of its lines: the markers of the lines of the
kinds it reads (a vLLM stats line's `loggers.py:` header, an Ollama record's `msg="cache `), and the
shapes it knows of them, read or passed over on purpose. A parser keeps one `Drift` per source and asks
it about the lines it could not read (`line`) and the keys it does not know on the lines it read
(`keys`): each such line gives an `UnreadFields` event (counted per engine and sanitised shape by
`kvwatch_unknown_fields_total`), and the first one of a shape, then its 10th, 100th, ... give the
source's fact `unread:<engine>:<shape>` (the count so far), which `format_drift` reads. A shape holds
names and punctuation only: words holding a digit and quoted text are masked and it is cut short, so
no number, id or prompt text leaves the parser through it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from kvwatch.model import EngineFact, Event, UnreadFields
from kvwatch.parsers.text import holds_any

#: The fact key prefix of a drifted shape, `unread:<engine>:<shape>` (its value: the lines counted so far).
FACT = "unread:"
#: Distinct shapes noted per source; later ones are counted as "other".
MAX_SHAPES = 16
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
# a word holding a digit (a number, an id, a date, a rank tag) is masked whole: no request id or value
# makes shapes of one kind of line many
_WORDS = re.compile(r"[\w.-]*\d[\w.-]*")
_QUOTED = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")
_CUT = 120
_NAME_CUT = 40


def sanitise(text: str) -> str:
    """A line's shape: quoted text masked as "…", each word holding a digit (a number, an id) as N, runs
    of spaces as one (padding), cut at 120 characters."""
    if '"' in text or "'" in text:
        text = _QUOTED.sub('"…"', text)
    return _WORDS.sub("N", " ".join(text.split()))[:_CUT]


def key_shape(kind: str, keys: Iterable[str]) -> str:
    """The sanitised shape of a line's keys (`kind +a,b`): names only, sorted, numbers masked, bounded."""
    names = sorted({_DIGITS.sub("N", key)[:_NAME_CUT] for key in keys})
    return f"{kind} +" + ",".join(names)[: _CUT - len(kind) - 2]


@dataclass(frozen=True)
class Shapes:
    """An engine's lines of the kinds it reads: `markers` (a line holding one is such a line) and
    `known`, the shapes it knows of them that it does not read (passed over on purpose); a marked line
    its parser could not read and `known` does not match is drift."""

    markers: tuple[str, ...]
    known: re.Pattern[str] | None = None

    def marked(self, text: str) -> bool:
        """Whether `text` holds one of the markers (a parser asks it of lines it passes over, the bulk of a
        log: a few substring tests cost a third of one regex search over them)."""
        return holds_any(text, self.markers)

    def drifted(self, text: str) -> bool:
        """Whether an unread line is one of the engine's kinds, in no shape it knows."""
        return self.marked(text) and (self.known is None or self.known.search(text) is None)


@dataclass
class Drift:
    """One source's drifted shapes and their counts (the engine's `shapes`: which unread lines are drift)."""

    source: str
    engine: str
    shapes: Shapes | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def seen(self, when: float, shape: str, told: bool = True) -> list[Event]:
        """One more line of a drifted `shape` (already sanitised): its events. `told`: False for keys
        that are counted and listed but are no drift (a plugin's own, which no release of the engine
        printed): no fact, so no `format_drift`."""
        counts = self.counts
        if shape not in counts and len(counts) >= MAX_SHAPES:
            shape = "other"
        count = counts[shape] = counts.get(shape, 0) + 1
        events: list[Event] = [UnreadFields(self.source, when, self.engine, shape)]
        if told and _power_of_ten(count):
            events.append(EngineFact(self.source, when, f"{FACT}{self.engine}:{shape}", str(count)))
        return events

    def line(self, when: float | None, text: str, message: str | None = None) -> list[Event] | None:
        """A line the parser could not read: its drift events when it is of the engine's kinds (then
        it counts as read: what it says is told), else None (not the engine's: left alone). The shape
        is of `message` (the line without its envelope, where the parser has it), else of `text`."""
        shapes = self.shapes
        if shapes is None or when is None or not shapes.drifted(text):
            return None
        return self.seen(when, sanitise(text if message is None else message))

    def keys(
        self, when: float, kind: str, keys: Iterable[str], known: frozenset[str], told: bool = True
    ) -> list[Event]:
        """The keys of a line read by key that kvwatch does not know: their drift events ([]: none)."""
        extra = [key for key in keys if key not in known]
        return self.seen(when, key_shape(kind, extra), told) if extra else []


def is_fact(key: str) -> bool:
    """Whether a fact's key is a drifted shape's."""
    return key.startswith(FACT)


def read_fact(key: str) -> tuple[str, str] | None:
    """(engine, shape) of a drifted shape's fact key, else None (another fact)."""
    if not key.startswith(FACT):
        return None
    engine, _, shape = key[len(FACT) :].partition(":")
    return engine, shape


def _power_of_ten(n: int) -> bool:
    while n % 10 == 0:
        n //= 10
    return n == 1
