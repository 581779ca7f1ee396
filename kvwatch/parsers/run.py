"""One source's parse stage: framed batches in, events and line counts out (`SourceRun`).

Shared by the daemon and replay; it needs neither metrics nor detectors, so replay can start reading a
big file in a child before those are even imported.
"""

from __future__ import annotations

from kvwatch.model import Event, LogLine, SourceCounts
from kvwatch.parsers.base import (
    BlockParser,
    EntriesParser,
    Holding,
    ParseError,
    Parser,
    ParseResult,
    TextParser,
    tally,
)
from kvwatch.parsers.skips import SkipLog
from kvwatch.parsers.text import holds_any
from kvwatch.sources.framing import Batch, Block, Entries, Malformed
from kvwatch.sources.scanner import LineFilter


class SourceRun:
    """One source's parser and line counts; with `skips` (the daemon's, when `kvwatch.lines` logs
    DEBUG), a sampled log of the lines it did not use (parsers/skips.py)."""

    def __init__(
        self, source: str, parser: Parser, counts: SourceCounts, skips: SkipLog | None = None
    ) -> None:
        self.source = source
        self.parser = parser
        self.counts = counts
        self._filter: LineFilter | None = None
        self._markers: tuple[str, ...] = ()
        self.skips = skips

    def _unused(self, result: ParseResult, text: str) -> None:
        """Tell the skip log about a line that gave no events (a recognised one gave a list)."""
        assert self.skips is not None
        if result is None and isinstance(self.parser, Holding) and self.parser.holding:
            return  # (an auto parser holding its first lines until it knows the engine)
        if result is None:
            self.skips.line("not_recognised", text)
        elif isinstance(result, ParseError):
            self.skips.line(f"error: {result.reason}", text)

    def take(self, batch: Batch) -> list[Event]:
        """Count a batch and parse it when it is a line."""
        counts = self.counts
        if isinstance(batch, int):
            counts.lines += batch
            if self.skips is not None:
                self.skips.no_marker(batch)
            return []
        if isinstance(batch, Block):
            return self._take_block(batch)
        if isinstance(batch, Entries):
            return self._take_entries(batch)
        counts.lines += 1
        if isinstance(batch, Malformed):
            counts.errors += 1
            if self.skips is not None:
                self.skips.line(f"malformed: {batch.reason}", None)
            return []
        result = self.parser.parse(batch)
        if isinstance(result, list):
            counts.recognized += 1
            return result
        if isinstance(result, ParseError):
            counts.errors += 1
        if self.skips is not None:
            self._unused(result, batch.text)
        return []

    def _take_block(self, block: Block) -> list[Event]:
        # The same counting as take(), in one loop (or in the parser's own): a block is thousands of lines.
        if self.skips is not None:  # each line's verdict is wanted: no block parser, whose are summed
            events: list[Event] = []
            for text in block.texts:
                events += self.take(LogLine(self.source, text, None))
            return events
        parser = self.parser
        if isinstance(parser, TextParser):
            events, recognized, errors = parser.parse_text(block.text)
            lines = block.text.count("\n")
        else:
            texts = block.texts
            if isinstance(parser, BlockParser):
                events, recognized, errors = parser.parse_block(texts)
            else:
                source = self.source
                events, recognized, errors = tally(
                    map(self.parser.parse, [LogLine(source, t, None) for t in texts])
                )
            lines = len(texts)
        counts = self.counts
        counts.lines += lines
        counts.recognized += recognized
        counts.errors += errors
        return events

    def _take_entries(self, entries: Entries) -> list[Event]:
        # (only a parser with a raw marker, an EntriesParser, is handed them: replay's)
        assert isinstance(self.parser, EntriesParser)
        events, recognized, errors = self.parser.parse_entries(entries)
        counts = self.counts
        counts.lines += entries.lines
        counts.recognized += recognized
        counts.errors += errors
        return events

    def take_many(self, batches: list[Batch]) -> list[Event]:
        """Events of a read's batches, in order."""
        events: list[Event] = []
        for batch in batches:
            events += self.take(batch)
        return events

    def feed_raw(self, lines: list[bytes], when: float | None = None) -> list[Event]:
        """Undecoded lines of a plain-text source read at `when`: only those holding a marker are parsed."""
        markers = self.parser.markers
        if self._filter is None or markers is not self._markers:  # (an auto parser chose its engine)
            self._filter, self._markers = LineFilter(markers), markers
        chosen = self._filter.select(lines)
        self.counts.lines += len(lines) - len(chosen)
        if self.skips is not None:
            self.skips.no_marker(len(lines) - len(chosen))
        events: list[Event] = []
        for index in chosen:
            events += self.take(LogLine(self.source, lines[index].decode("utf-8", "replace"), when))
        return events

    def feed(self, line: LogLine | int) -> list[Event]:
        """One decoded line (for sources that decode themselves): prefilter, then parse; or a count of
        lines the source skipped (they hold no marker)."""
        if type(line) is int:
            return self.take(line)
        assert isinstance(line, LogLine)
        markers = self.parser.markers
        if markers and not holds_any(line.text, markers):
            return self.take(1)
        return self.take(line)
