"""Feeder: one reader thread per source, handing lines and positions to the pipeline's queue.

The loop: poll the source, take `position()` right after the poll, put the lines (in batches) and
then a `Mark` with that position on the queue. `put` blocks while the queue is full: that is the
backpressure, nothing is dropped. The pipeline thread saves a Mark's position only after it has
processed the lines queued before it, so a saved position never claims an unprocessed line.
A source that cannot be opened, or raises, is reopened with exponential backoff (`restarts`), and
each change between up and down is logged once.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any, cast

from kvwatch.daemon.sources import Source, open_source
from kvwatch.model import LogLine
from kvwatch.sources.file import FileSource
from kvwatch.sources.fileframing import Framed
from kvwatch.sources.settings import SourceConfig
from kvwatch.sources.watch import FileWatcher

log = logging.getLogger("kvwatch.source")

#: Lines per queue item.
BATCH = 512
_OWN_RESTARTS = "source restarts"  # key in the retired counters of closed sources
#: Seconds between polls when nothing wakes the reader (the fallback when inotify misses a change).
POLL_INTERVAL = 1.0
BACKOFF_MAX = 30.0


@dataclass(frozen=True, slots=True)
class Lines:
    """Lines one feeder read, in order; `raw`: undecoded bytes of a plain-text file, else LogLines."""

    feeder: Feeder
    lines: list[LogLine] | list[bytes]
    raw: bool = False
    read_at: float | None = None  # the transport time of raw lines: when they were read


@dataclass(frozen=True, slots=True)
class Mark:
    """The source's position once every line queued before this mark is processed."""

    feeder: Feeder
    position: Any


@dataclass(frozen=True, slots=True)
class Closed:
    """The feeder stopped; `eof` when its input ended (stdin) rather than being stopped."""

    feeder: Feeder
    eof: bool


class Feeder:
    """Reads one source on its own thread into `put` (a blocking queue put)."""

    def __init__(
        self,
        config: SourceConfig,
        saved: Callable[[], Mapping[str, Any] | None],
        put: Callable[[object], None],
        opener: Callable[[SourceConfig, Mapping[str, Any] | None], Source] = open_source,
    ) -> None:
        """Prepare; `saved()` gives the last saved position each time the source is (re)opened."""
        self.config = config
        self.name = config.name
        self.source: Source | None = None
        self.error: str | None = "not opened yet"
        self.restarts = 0
        self.last_line_time: float | None = None
        self.opened = threading.Event()  # set after the first attempt to open, success or not
        self._saved, self._put, self._opener = saved, put, opener
        self._retired: dict[str, int] = {}
        self._stop = threading.Event()
        self._watcher: FileWatcher | None = None
        self._watched: list[str] = []  # the patterns the watcher was started on
        # The parser's markers once an auto parser chose its engine: set by the pipeline thread, handed
        # to the source by this one (before a poll), so that the source skips lines as it would with
        # the engine named in the config.
        self.markers: tuple[str, ...] | None = None
        self._given: tuple[str, ...] | None = None
        # The parser state saved with the position the source was opened at (the pipeline thread
        # takes it when it makes the source's parser): a restart finishes the records in progress.
        self.parser_state: Any = None
        self._thread = threading.Thread(target=self._run, name=f"kvwatch-source-{self.name}", daemon=True)

    @property
    def watcher(self) -> FileWatcher | None:
        """What wakes the reader when what the source reads changes (None: nothing watched)."""
        return self._watcher

    @property
    def up(self) -> bool:
        """Whether the source is open and reports no error."""
        return self.source is not None and self.error is None

    def start(self) -> None:
        """Start reading."""
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to finish after its current poll (it then queues `Closed`)."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.event.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True if it ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        """Open, poll, hand over, wait; until stopped or the input ends."""
        failures, eof = 0, False
        try:
            while not self._stop.is_set():
                if self.source is None and not self.open():
                    failures += 1
                    self._stop.wait(_backoff(failures))
                    continue
                busy, eof = self.step()
                if eof:
                    break
                failures = failures + 1 if self.error and not busy else 0
                if failures:
                    self._pause(_backoff(failures))
                elif not busy:
                    self._wait()
        finally:
            self.close()
            self._put(Closed(self, eof))

    def open(self) -> bool:
        """Open the source; log and keep the error on failure (the reader thread's first step; a test's,
        which then calls `step` and `close` instead of starting the thread)."""
        try:
            saved = self._saved()
            source = self._opener(self.config, saved)
        except Exception as exc:
            self._report(f"{type(exc).__name__}: {exc}")
            self.opened.set()
            return False
        self.source = source
        self.parser_state = saved.get("parser") if saved is not None else None
        self._watch()
        # A first position at once: a first start at the end of a file is remembered even if
        # no line arrives before the next restart.
        self._put(Mark(self, source.position()))
        self._report(source.error or _missing(source))  # (not "up" before "no file": a missing file)
        self.opened.set()
        return True

    def step(self) -> tuple[bool, bool]:
        """One poll, its lines queued; (whether lines came, whether the input ended)."""
        assert self.source is not None
        if self._watcher is not None:
            self._watcher.event.clear()  # before the poll: a change during it wakes the next wait
        self._hand_markers()
        # File, docker and stdin sources hand plain text over undecoded (the pipeline decodes only
        # the lines holding one of the parser's markers, found in one scan), docker's framings decoded.
        poll_raw: Callable[[], list[Framed]] | None = getattr(self.source, "poll_raw", None)
        try:
            lines = poll_raw() if poll_raw is not None else self.source.poll()
            position = self.source.position()
        except Exception as exc:  # a source bug must not kill the reader: reopen it
            self._report(f"{type(exc).__name__}: {exc}")
            self.close()
            self.restarts += 1
            return False, False
        read_at = time.time()
        # A line with no transport time (plain files, stdin) is stamped with when it was read: the
        # live stand-in for "when it was written" (llama.cpp anchors its relative clock on it).
        for run, raw in runs_by_kind(lines, read_at):
            for start in range(0, len(run), BATCH):
                self._put(Lines(self, run[start : start + BATCH], raw=raw, read_at=read_at))
        if lines:
            self._put(Mark(self, position))
            self.last_line_time = read_at
        self._report(self.source.error or _missing(self.source))
        self._watch()
        return bool(lines), bool(getattr(self.source, "done", False))

    def _hand_markers(self) -> None:
        """Give the source the parser's markers once an auto parser chose its engine (see markers)."""
        markers = self.markers
        if markers is not self._given:
            set_markers = getattr(self.source, "set_markers", None)
            if callable(set_markers):
                set_markers(markers)
            self._given = markers

    def _watch(self) -> None:
        """Watch the directories of what the source reads (`watched()`: a file source's pattern, a
        container's log), so that a write wakes the reader at once; again when that changed (the
        container was re-created)."""
        watched = getattr(self.source, "watched", None)
        patterns = watched() if callable(watched) else []
        if patterns == self._watched:
            return
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        if patterns:
            self._watcher = FileWatcher(patterns, POLL_INTERVAL)
            self._watcher.start()
        self._watched = patterns

    def _wait(self) -> None:
        """Sleep until the source may have data: its own wait, the file watcher, or a timer."""
        wait = getattr(self.source, "wait", None)
        if callable(wait):
            wait(min(POLL_INTERVAL, 0.5))
        elif self._watcher is not None:
            self._watcher.event.wait(POLL_INTERVAL)
        else:
            self._stop.wait(POLL_INTERVAL)

    def _pause(self, seconds: float) -> None:
        """Back off; a file source still wakes early on a change in its directory."""
        if self._watcher is not None:
            self._watcher.event.wait(seconds)
        else:
            self._stop.wait(seconds)

    def count(self, name: str) -> int:
        """A cumulative source counter (FileCounters field), over every reopening of the source."""
        current = getattr(getattr(self.source, "counters", None), name, 0)
        return self._retired.get(name, 0) + (current if isinstance(current, int) else 0)

    def restarts_total(self) -> int:
        """Reopenings after a failure, plus the source's own restarts (container recreated, journalctl)."""
        return self.restarts + self._own_restarts()

    def _own_restarts(self) -> int:
        """The source's own restart count, over every reopening of the source."""
        current = getattr(self.source, "restarts", 0)
        return self._retired.get(_OWN_RESTARTS, 0) + (current if isinstance(current, int) else 0)

    def _report(self, error: str | None) -> None:
        """Keep the error; log only when up/down or the error text changes."""
        if error != self.error:
            if error is None:
                log.info("source %s: up", self.name)
            elif error.startswith(NO_FILE):  # (said once, and what it means: not an error to retry)
                log.warning(
                    "source %s: waiting for %s: no file there yet; once one appears it is read from"
                    " its first line",
                    self.name,
                    error.removeprefix(NO_FILE),
                )
            else:
                log.warning("source %s: down: %s (retrying)", self.name, error)
        self.error = error

    def close(self) -> None:
        """Stop watching and close the source (its counts are kept for the next opening)."""
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        # (a source opened again is watched again, and handed the markers again)
        self._watched, self._given = [], None
        counters = getattr(self.source, "counters", None)
        for field in dataclasses.fields(counters) if dataclasses.is_dataclass(counters) else ():
            value = getattr(counters, field.name)
            self._retired[field.name] = self._retired.get(field.name, 0) + value
        self._retired[_OWN_RESTARTS] = self._own_restarts()
        close = getattr(self.source, "close", None)
        if callable(close):
            close()
        self.source = None


def runs_by_kind(lines: Sequence[Framed], read_at: float) -> Iterator[tuple[list[Any], bool]]:
    """The items in runs of one kind, in order: (undecoded bytes, True), or (LogLines and counts of
    lines skipped, False) with `read_at` as the time of the LogLines that have none."""
    for undecoded, run in groupby(lines, _is_bytes):
        if undecoded:
            yield list(run), True
        else:
            items = cast("Iterator[LogLine | int]", run)
            yield [_stamped(x, read_at) if type(x) is LogLine and x.time is None else x for x in items], False


def _is_bytes(item: Framed) -> bool:
    return type(item) is bytes


def _stamped(line: LogLine, read_at: float) -> LogLine:
    """The line with `read_at` as its transport time."""
    return LogLine(line.source, line.text, read_at)


def _backoff(failures: int) -> float:
    """Seconds to wait after `failures` failures in a row: 1, 2, 4 ... BACKOFF_MAX."""
    return min(BACKOFF_MAX, 2.0 ** min(failures - 1, 10))


#: The start of a file source's error while no file matches its path (see _missing).
NO_FILE = "no file at "


def _missing(source: Source) -> str | None:
    """For a file source, why nothing is open (no file matches), else None."""
    if isinstance(source, FileSource) and all(tail.idle() for tail in source.tails.values()):
        return f"{NO_FILE}{source.pattern}"
    return None
