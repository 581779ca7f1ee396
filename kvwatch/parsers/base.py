"""What every parser is: a per-source object turning LogLines into Events, with a cheap prefilter.

A parser holds the state its format needs across lines (the engine of the last stats line, a
llama.cpp slot's request in progress, the year of the last timestamp) but does no I/O and never reads
the clock: times come from the lines, from the transport, or from the settings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from kvwatch.model import Event, LogLine

if TYPE_CHECKING:
    from kvwatch.sources.framing import Entries

#: The fixed default anchor for relative timestamps in replay (llama.cpp): 2026-01-01T00:00:00Z.
DEFAULT_START = 1767225600.0


@dataclass(frozen=True, slots=True)
class ParseError:
    """A line of a known shape whose values cannot be trusted (garbage numbers, torn record)."""

    reason: str


#: `parse` returns the events of a recognised line (possibly none), a ParseError, or None (not ours).
ParseResult = list[Event] | ParseError | None


class BlockResult(NamedTuple):
    """What `parse` made of each line of a block, added up (a parser's optional `parse_block`)."""

    events: list[Event]
    recognized: int
    errors: int


def tally(results: Iterable[ParseResult]) -> BlockResult:
    """Parse results of many lines added up: their events in order, lines recognised, lines in error."""
    events: list[Event] = []
    recognized = errors = 0
    for result in results:
        if result is None:
            continue
        if isinstance(result, list):
            recognized += 1
            if result:
                events += result
        else:
            errors += 1
    return BlockResult(events, recognized, errors)


@dataclass(frozen=True, slots=True)
class ParserSettings:
    """What a parser may not guess: the year and zone of year-less timestamps, the relative-time anchor."""

    year: int | None = None  # None: the year of the transport time, else of `now_year`
    now_year: int = 2026
    tz: str = "UTC"
    start: float = DEFAULT_START  # where relative timestamps (llama.cpp) begin
    #: A parser may read its commonest lines a quicker way, with the same result; False: every line the
    #: general way (replay's `KVWATCH_REPLAY_PLAIN=1`, see kvwatch.replay.speedups).
    fast_paths: bool = True


class Parser(Protocol):
    """The seam between lines and events."""

    #: A line containing none of these (as ASCII bytes/str) cannot yield anything: parse() returns None
    #: for it. Callers may skip such lines without calling parse(); the counts come out the same.
    markers: tuple[str, ...]

    def parse(self, line: LogLine) -> ParseResult:
        """Turn one line into events."""
        ...

    def flush(self) -> list[Event]:
        """At end of input: the events still held back (requests cut mid-way are dropped, not guessed)."""
        ...


# What a parser may also be, each a small capability its callers test with isinstance.


@runtime_checkable
class TextParser(Protocol):
    """Reads a dense plain read whole (replay's `kvwatch.sources.framing.Block`)."""

    def parse_text(self, text: str) -> BlockResult:
        """Exactly `parse` over the lines of `text` (each ending in `\\n`, no transport time), counted up."""
        ...


@runtime_checkable
class BlockParser(Protocol):
    """Reads many lines of a plain read in one call (replay's Block, for a parser without parse_text)."""

    def parse_block(self, texts: list[str]) -> BlockResult:
        """Exactly `parse` over LogLine(source, text, None) for each text in order, counted up."""
        ...


@runtime_checkable
class EntriesParser(Protocol):
    """Reads some json-file lines from their bytes (replay's `kvwatch.sources.framing.Entries`)."""

    @property
    def raw_marker(self) -> str | None:
        """The marker whose json-file lines it reads from their bytes (None: none, for now)."""
        ...

    def parse_entries(self, entries: Entries) -> BlockResult:
        """Exactly `parse` over the read's marker lines, decoded or (the raw marker's) in runs of bytes."""
        ...


@runtime_checkable
class Holding(Protocol):
    """Holds lines back until it knows what they are (the daemon's auto parser, before it picks an engine)."""

    @property
    def holding(self) -> bool:
        """Whether lines are held, not yet parsed."""
        ...


@runtime_checkable
class Draining(Protocol):
    """Holds events back only to hand them on in bulk (sums per stretch of log time)."""

    def drain(self) -> list[Event]:
        """The events held back, handed on now (the daemon asks before each position sync)."""
        ...


@runtime_checkable
class Resumable(Protocol):
    """Carries state across lines that a restart should not lose (a request in progress)."""

    def snapshot(self) -> dict[str, Any] | None:
        """Its state as JSON naming its `engine` (None: none to keep), saved with a position."""
        ...

    def restore(self, state: Mapping[str, Any]) -> None:
        """Go on from a `snapshot()`; KeyError, TypeError or ValueError when it is not one."""
        ...
