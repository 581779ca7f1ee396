"""The debug log of the lines a source did not use: why, sampled, and never the line's text.

A log line may hold prompt text (vLLM's request lines, llama.cpp's verbose prompt dumps, a gateway's
request body), and the daemon's log may leave the host through a log shipper. So a skipped or
unrecognised line is described without its content: the reason, its length, the first 12 hex digits
of its SHA-256 (the same line gives the same digest, so a repeated shape is seen as one) and its
`shape`, the first 32 characters with letters as `a`/`A` and digits as `9` (`9999-99-99 99:99:99 AAAA`
shows the timestamp a parser did not expect, and not one word). The first LIMIT lines per source per
PERIOD seconds are logged; after that, one line per period says how many more there were, by reason.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

#: The logger's name. (logging and hashlib load only when a line is to be logged: a replay, whose
#: start-up runs before its children read, sets no logger up, and hashlib loads OpenSSL, ~10 ms.)
LOGGER = "kvwatch.lines"
LIMIT = 5
PERIOD = 60.0
SHAPE_CHARS = 32
_SHAPE = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "a" * 26 + "A" * 26 + "9" * 10,
)


def shape(text: str) -> str:
    """The first SHAPE_CHARS characters with ASCII letters and digits masked; other letters as `a`."""
    head = text[:SHAPE_CHARS].translate(_SHAPE)
    return "".join("a" if c.isalpha() and c not in "aA" else c for c in head)


def describe(text: str) -> str:
    """What may be logged of a line: `length=N sha256=… shape="…"`."""
    import hashlib

    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]
    return f"length={len(text)} sha256={digest} shape={shape(text)!r}"


def _log() -> logging.Logger:
    import logging

    return logging.getLogger(LOGGER)


class SkipLog:
    """One source's sampled debug log of the lines it did not use."""

    def __init__(
        self, source: str, clock: Callable[[], float], limit: int = LIMIT, period: float = PERIOD
    ) -> None:
        """Log at most `limit` lines of `source` per `period` seconds of `clock`, then count."""
        self.source, self.limit, self.period, self.clock = source, limit, period, clock
        self._start = clock()
        self._logged = 0
        self._more: Counter[str] = Counter()

    @classmethod
    def when_enabled(cls, source: str, clock: Callable[[], float]) -> SkipLog | None:
        """A SkipLog if the `kvwatch.lines` logger logs DEBUG (else None: the hot path stays as is)."""
        logging = sys.modules.get("logging")  # (not loaded: nothing has set a logger up, none logs DEBUG)
        return cls(source, clock) if logging is not None and _log().isEnabledFor(logging.DEBUG) else None

    def _roll(self) -> None:
        """Start a new period, first saying how many lines the last one held back."""
        now = self.clock()
        if now - self._start < self.period:
            return
        if self._more:
            reasons = " ".join(f"{reason}={n}" for reason, n in sorted(self._more.items()))
            total = sum(self._more.values())
            text = "source %s: %d more lines not used in the last %.0f s: %s"
            _log().debug(text, self.source, total, self.period, reasons)
        self._start, self._logged, self._more = now, 0, Counter()

    def line(self, reason: str, text: str | None) -> None:
        """A line that was not used: `not_recognised`, `error: <why>` or `malformed: <why>` (no text)."""
        self._roll()
        if self._logged < self.limit:
            self._logged += 1
            what = "" if text is None else f": {describe(text)}"
            _log().debug("source %s: line %s%s", self.source, reason, what)
        else:
            self._more[reason.partition(":")[0]] += 1

    def no_marker(self, count: int) -> None:
        """`count` lines skipped unparsed: they hold none of the parser's markers (counted, not logged)."""
        self._roll()
        if count:
            self._more["no_marker"] += count
