"""PipelineLoop: the one thread that owns parsers, metrics, windows, the AlertBook and saved positions.

It takes queue items in order: `Lines` are parsed and applied, a `Mark` records a position that is
now fully processed (saved to disk at the next sync), `Closed` saves at once (and at end of input
flushes the parser), a `Call` runs a function on this thread (reloads), `WAKE` only wakes it.

Detector time. Events tick the detectors on replay's grid (`Pipeline.advance`: every 10 s of event
time, idle gaps capped), so a backlog read after a restart reaches the verdicts replay would. The
scheduler's wall-clock tick only advances time while no event arrived since the previous one: then
the detectors run at max(newest event time, wall clock), so silence is seen (no_signal) even when every
source is quiet.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvwatch.daemon.feed import Closed, Feeder, Lines, Mark
from kvwatch.daemon.live_alerts import LiveAlerts
from kvwatch.daemon.sources import AutoParser, drained, live_parser, parser_settings, parser_state
from kvwatch.model import Alert, Event, Finding
from kvwatch.parsers.base import Parser, Resumable
from kvwatch.parsers.run import SourceRun
from kvwatch.parsers.skips import SkipLog
from kvwatch.pipeline import Pipeline
from kvwatch.sources.positions import PositionStore

log = logging.getLogger("kvwatch.pipeline")

WAKE = object()
STOP = object()


@dataclass(frozen=True, slots=True)
class Call:
    """Run `fn` on the pipeline thread, then set `done`."""

    fn: Callable[[], None]
    done: threading.Event


class PipelineLoop:
    """Consumes the queue; everything here runs on its thread (or before it starts)."""

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        alerts: LiveAlerts,
        store: PositionStore | None,
        items: queue.Queue[object],
        lock: threading.Lock,
        heartbeat: Callable[[], None],
        ended: Callable[[str], None],
    ) -> None:
        """`store` None keeps no positions (stdin without a config); `ended(name)` at end of input."""
        self.pipeline, self.alerts, self.store, self.items, self.lock = pipeline, alerts, store, items, lock
        self.heartbeat, self.ended = heartbeat, ended
        self.runs: dict[Feeder, SourceRun] = {}
        self.marks: dict[str, tuple[Feeder, Any]] = {}
        self.tick_due = threading.Event()
        self.sync_due = threading.Event()
        self.applied = 0  # events since the last wall-clock tick
        self.firing = 0
        self.thread = threading.Thread(target=self._run, name="kvwatch-pipeline", daemon=True)

    def _run(self) -> None:
        """Take items until STOP; a failing item is logged, the loop goes on."""
        while True:
            item = self.items.get()
            with self.lock:
                try:
                    if item is STOP:
                        self._sync()
                        self.alerts.save()
                        return
                    self._handle(item)
                    self._due()
                except Exception:
                    log.exception("pipeline: failed on %s", type(item).__name__)
            self.heartbeat()

    def _handle(self, item: object) -> None:
        """Dispatch one queue item."""
        if isinstance(item, Lines):
            run = self._run_of(item.feeder)
            if item.raw:
                for event in run.feed_raw(item.lines, item.read_at):  # type: ignore[arg-type]
                    self._apply(event)
            else:
                for line in item.lines:
                    for event in run.feed(line):  # type: ignore[arg-type]
                        self._apply(event)
            self._settle(item.feeder, run)
            run.counts.truncated = item.feeder.count("truncated_long_lines")
        elif isinstance(item, Mark):
            self.marks[item.feeder.name] = (item.feeder, self._with_state(item))
        elif isinstance(item, Closed):
            self._closed(item)
        elif isinstance(item, Call):
            try:
                item.fn()
            finally:
                item.done.set()

    def _due(self) -> None:
        """Run what the scheduler asked for since the last item."""
        if self.tick_due.is_set():
            self.tick_due.clear()
            if self.applied == 0:
                last = self.pipeline.last_time or 0.0
                self._tick(max(last, time.time()))
            self.applied = 0
        if self.sync_due.is_set():
            self.sync_due.clear()
            # Sums a parser holds back (LMCache's, per stretch of log time) reach the metrics now, so
            # a counter lags its lines by one sync at most, even when the log falls silent, and a saved
            # position never lies beyond lines whose sums were not applied.
            for feeder, run in self.runs.items():
                for event in drained(run.parser):  # (an auto parser of a quiet log decides now)
                    self._apply(event)
                self._settle(feeder, run)
            self._sync()

    def _settle(self, feeder: Feeder, run: SourceRun) -> None:
        """Count the lines an auto parser held, once the engine is chosen; give the feeder its markers.
        An auto parser whose provisional choice the detection rule overturned starts the source over:
        what the first choice made of it is dropped, and every line read is parsed again."""
        parser = run.parser
        if not isinstance(parser, AutoParser):
            return
        if parser.again is not None:
            log.info(
                "source %s: its lines are %s's, not %s's: read again",
                feeder.name,
                parser.again,
                parser.engine,
            )
            self.pipeline.forget(feeder.name)
            self.alerts.forget(feeder.name)
            self.pipeline.metrics.sources.adopt(feeder.name, run.counts)
            for event in parser.redo():
                self._apply(event)
            if self.pipeline.last_time is not None:
                # (the lines read again lie behind the event-time grid, which ticks only as time moves
                # on: judge them now, not when the next line or two scheduled ticks come)
                self._tick(self.pipeline.last_time)
        run.counts.add(parser.settle())
        if parser.inner is not None and not parser.provisional and feeder.markers is None:
            feeder.markers = parser.markers  # (the feeder hands them to its source)

    def hold(self, key: str, findings: list[Finding]) -> None:
        """(On this thread) Replace the findings held under `key`; tick at once so they take effect now."""
        self.pipeline.held[key] = findings
        self._tick(max(self.pipeline.last_time or 0.0, time.time()))

    def _run_of(self, feeder: Feeder) -> SourceRun:
        """The feeder's parser and counts, made on its first lines."""
        run = self.runs.get(feeder)
        if run is None:
            parser = live_parser(feeder.config, parser_settings(feeder.config))
            self._resume(feeder, parser)
            counts = self.pipeline.metrics.sources.of(feeder.name)
            skips = SkipLog.when_enabled(feeder.name, time.monotonic)
            run = self.runs[feeder] = SourceRun(feeder.name, parser, counts, skips)
        return run

    def _resume(self, feeder: Feeder, parser: Parser) -> None:
        """Give a new parser the state saved with the position its source was opened at."""
        state, feeder.parser_state = feeder.parser_state, None
        if not isinstance(state, dict) or not isinstance(parser, Resumable):
            return
        try:
            parser.restore(state)
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("source %s: ignoring the saved parser state (%r): records in progress at the "
                        "last save are lost", feeder.name, exc)  # fmt: skip

    def _with_state(self, mark: Mark) -> Any:
        """The mark's position and the state of the parser that read the lines before it (see
        parser_state): both are saved together, so a restart goes on from one consistent point."""
        position = mark.position
        if self.store is None or not isinstance(position, dict) or not position:
            return position
        run = self.runs.get(mark.feeder)
        state = parser_state(run.parser) if run is not None else mark.feeder.parser_state
        return {**position, "parser": state} if state is not None else position

    def _apply(self, event: Event) -> None:
        """Tick on the event-time grid (the same as replay's), then apply the event."""
        due = self.pipeline.next_tick
        transitions = self.pipeline.advance(event.time)
        # (the alert side looks at every firing alert for repeats: after a tick, not after every event,
        # which with many sources' alerts firing cost more than all their parsing)
        if transitions or self.pipeline.next_tick != due:
            self._notify(transitions)
        self.pipeline.apply(event)
        self.applied += 1

    def _tick(self, now: float) -> None:
        """Run the detectors at `now`; notify what the transitions call for."""
        self._notify(self.pipeline.tick(now))

    def _notify(self, transitions: list[Alert]) -> None:
        """Hand alert transitions to the live alert side."""
        self.alerts.handle(transitions)
        self.firing = len(self.pipeline.book.firing())

    def _closed(self, item: Closed) -> None:
        """A feeder ended: flush its parser at end of input, save its position now."""
        run = self.runs.pop(item.feeder, None)
        if item.eof and run is not None:
            for event in run.parser.flush():
                self._apply(event)
            self._settle(item.feeder, run)
            if self.pipeline.last_time is not None:
                self._tick(self.pipeline.last_time)
        self._sync(only=item.feeder.name, parser=run.parser if run else None)
        if item.eof:
            self.ended(item.feeder.name)

    def _sync(self, only: str | None = None, parser: object = None) -> None:
        """Save the positions of processed lines (skipping sources whose auto parser holds lines)."""
        for name, (feeder, position) in list(self.marks.items()):
            if only is not None and name != only:
                continue
            run_parser = parser if only is not None else getattr(self.runs.get(feeder), "parser", None)
            if isinstance(run_parser, AutoParser) and run_parser.holding:
                continue
            del self.marks[name]
            if self.store is not None and position:
                try:
                    self.store.save(name, position)
                except (OSError, ValueError) as exc:
                    log.error("cannot save the position of %s: %s", name, exc)
