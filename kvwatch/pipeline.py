"""The synchronous core shared by the daemon and replay: batches in, events to metrics and observers.

No threads, no clock, no I/O: `SourceRun.take(batch)` turns framed lines into events and counts them;
`Pipeline.apply(event)` feeds metrics and observers (detectors, the replay summary) in event-time order;
`Pipeline.tick(now)` is where detectors run on event time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kvwatch.alerts import AlertBook
from kvwatch.detectors import DetectorSettings, detect_all
from kvwatch.metrics import Metrics, SourceCounts
from kvwatch.metrics.derived import AlertCollector, PinnedCollector
from kvwatch.model import Alert, Event, LogLine
from kvwatch.parsers.base import BlockResult, ParseError, Parser, tally
from kvwatch.sources.framing import Batch, Block, Malformed
from kvwatch.sources.scanner import LineFilter
from kvwatch.window import Windows

Observer = Callable[[Event], None]

#: Seconds of event time between detector runs (the daemon's scheduler ticks as often on the clock).
TICK = 10.0


class SourceRun:
    """One source's parser and line counts."""

    def __init__(self, source: str, parser: Parser, counts: SourceCounts) -> None:
        self.source = source
        self.parser = parser
        self.counts = counts
        self._filter: LineFilter | None = None

    def take(self, batch: Batch) -> list[Event]:
        """Count a batch and parse it when it is a line."""
        counts = self.counts
        if isinstance(batch, int):
            counts.lines += batch
            return []
        if isinstance(batch, Block):
            return self._take_block(batch.texts)
        counts.lines += 1
        if isinstance(batch, Malformed):
            counts.errors += 1
            return []
        result = self.parser.parse(batch)
        if isinstance(result, list):
            counts.recognized += 1
            return result
        if isinstance(result, ParseError):
            counts.errors += 1
        return []

    def _take_block(self, texts: list[str]) -> list[Event]:
        # The same counting as take(), in one loop (or in the parser's own): a block is thousands of lines.
        block: Callable[[list[str]], BlockResult] | None = getattr(self.parser, "parse_block", None)
        if block is not None:
            events, recognized, errors = block(texts)
        else:
            source = self.source
            events, recognized, errors = tally(
                map(self.parser.parse, [LogLine(source, t, None) for t in texts])
            )
        counts = self.counts
        counts.lines += len(texts)
        counts.recognized += recognized
        counts.errors += errors
        return events

    def take_many(self, batches: list[Batch]) -> list[Event]:
        """Events of a read's batches, in order."""
        events: list[Event] = []
        counts, parse, take = self.counts, self.parser.parse, self.take
        for batch in batches:
            if type(batch) is LogLine:  # take() of the commonest batch written out: a call fewer per line
                counts.lines += 1
                result = parse(batch)
                if isinstance(result, list):
                    counts.recognized += 1
                    events += result
                elif isinstance(result, ParseError):
                    counts.errors += 1
                continue
            out = take(batch)
            if out:
                events += out
        return events

    def feed_raw(self, lines: list[bytes], when: float | None = None) -> list[Event]:
        """Undecoded lines of a plain-text source read at `when`: only those holding a marker are parsed."""
        if self._filter is None:
            self._filter = LineFilter(self.parser.markers)
        chosen = self._filter.select(lines)
        self.counts.lines += len(lines) - len(chosen)
        events: list[Event] = []
        for index in chosen:
            events += self.take(LogLine(self.source, lines[index].decode("utf-8", "replace"), when))
        return events

    def feed(self, line: LogLine) -> list[Event]:
        """One decoded line (for sources that decode themselves): prefilter, then parse."""
        if not any(marker in line.text for marker in self.parser.markers) and self.parser.markers:
            return self.take(1)
        return self.take(line)


class Pipeline:
    """Events to metrics, windows and observers; detectors and alerts tick on event time."""

    def __init__(
        self,
        metrics: Metrics,
        settings: DetectorSettings | None = None,
        observers: Iterable[Observer] = (),
        resolve_after: float = 120.0,
        tick_every: float = TICK,
    ) -> None:
        self.metrics = metrics
        self.settings = settings or DetectorSettings()
        self.observers = list(observers)
        self.windows = Windows()
        self.book = AlertBook(resolve_after)
        self.last_time: float | None = None
        self.tick_every = tick_every
        self.next_tick: float | None = None
        metrics.registry.register(AlertCollector(self.book))
        metrics.registry.register(PinnedCollector(self.windows, lambda: self.settings.pinned_cache_length))

    def apply(self, event: Event) -> None:
        """Apply one event."""
        self.metrics.apply(event)
        self.windows.observe(event)
        for observe in self.observers:
            observe(event)
        if self.last_time is None or event.time > self.last_time:
            self.last_time = event.time

    def advance(self, time: float) -> list[Alert]:
        """Run the detectors on every grid point up to `time`; call it before applying an event at `time`.

        The grid is every `tick_every` seconds of event time, as the daemon's scheduler ticks on the clock.
        Across a gap with no events, only time-dependent verdicts can change (resolve hysteresis,
        no_signal's silence), so after enough idle ticks to cover the longest of those the grid jumps to
        the event: a replay across months of silence costs a few ticks, not millions.
        """
        if self.next_tick is None:
            # The grid sits on whole multiples of tick_every, so alert times read :00, :10, ...
            self.next_tick = (time // self.tick_every + 1) * self.tick_every
            return []
        if time < self.next_tick:  # nearly every event (replay calls this per event): no tick is due
            return []
        limit = max(self.book.resolve_after, self.settings.no_signal.silence) / self.tick_every + 2
        alerts: list[Alert] = []
        idle = 0
        while time >= self.next_tick:
            if idle > limit:
                self.next_tick += (time - self.next_tick) // self.tick_every * self.tick_every
            alerts.extend(self.tick(self.next_tick))
            self.next_tick += self.tick_every
            idle += 1
        return alerts

    def tick(self, now: float) -> list[Alert]:
        """Run the detectors at event time `now`; return the alert transitions."""
        return self.book.update(detect_all(self.windows, now, self.settings), now)
