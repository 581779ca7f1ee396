"""A big dense log parsed in segments on several cores, with the results of parsing it in one go.

Replay parses a file as one timeline: what a line means depends on the parser's state, which every
line before it made. A llama.cpp `-lv 4` log is nearly all parse (the forked child of
kvwatch.sources.forked spends its time in the parser), so where there are cores to spare the file is
cut into segments at line starts and forked workers parse them at once, taking turns: worker w parses
segments w, w + W, w + 2W, ...

A segment's true start state is the one the segment before it ends in, known only once that one is
parsed. So a worker guesses it: from the state it is in (the file's head parsed, or where its last
segment ended) it parses the stretch just before the segment (`WARM_UP` bytes) and drops what that
gives; the requests in progress then are rebuilt as they were. The parent takes the segments in order
and keeps one's results only when the guess it started from equals the true start state (the
parser's `state_key()`: every field that decides how later lines are read), or differs from it only
where the segment's lines never looked (`reconcile`: a slot idle through the whole stretch has its
last finished task from long before, which matters only to a late line of that very task), or where
a parser can put its results right (`amend`: a count that only numbers what the lines give). The
first time a guess is wrong (a request in progress since before the stretch, a server restart before
it), the workers are stopped and the rest of the file is parsed from the true state in one child, as
without segments. The results are the one-go parse's either way; only the time differs.
"""

from __future__ import annotations

import copy
import io
import os
import pickle
import sys
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
from typing import Any, BinaryIO, Protocol, runtime_checkable

from kvwatch.model import Event, SourceCounts
from kvwatch.parsers.base import Parser
from kvwatch.parsers.run import SourceRun
from kvwatch.sources.forked import in_child
from kvwatch.sources.framing import Framer
from kvwatch.sources.wholefile import batches

#: Workers at most (each parses a share of the file while the parent runs metrics and detectors).
MAX_WORKERS = 4
#: How much lower a worker's CPU priority is than the parent's (see _worker).
WORKER_NICENESS = 5
#: Segment sizes: about a quarter of the file per worker, within these bounds (memory stays flat: a
#: worker holds one segment's events until the parent takes them).
MIN_SEGMENT = 8 << 20
MAX_SEGMENT = 64 << 20
#: The first segment is this many halvings smaller than the others (see `boundaries`).
RAMP = 3
#: The stretch before a segment that a worker parses to rebuild the requests in progress: 2,000-odd
#: lines of a -lv 4 log, minutes of a busy server and more of a quiet one, 3% of an 8 MiB segment.
WARM_UP = 256 << 10
#: The head the parent parses itself first: the server's start-up lines, which every guess starts from.
HEAD = 256 << 10

#: What parsing a file added to its source's counts (SourceCounts.parsed()), the lines truncated,
#: damage (why a compressed file ended early, see kvwatch.sources.forked), and the parser as the file
#: left it when children parsed its end (None: the caller's own parser did): replay's outcome of a file.
Outcome = tuple[tuple[int, int, int], int, str | None, Parser | None]


@runtime_checkable
class Segmentable(Protocol):
    """A parser that can tell its state, and check a state guessed for lines against the true one
    (the llama.cpp engine's parser has the details)."""

    def state_key(self) -> Any:
        """What decides how later lines are read: equal keys, equal futures."""

    def forget(self) -> None:
        """Forget what lines skipped would have changed (the state's part that the stretch rebuilds)."""

    def watch(self) -> None:
        """Note from now on what the lines ask of the state's loose part."""

    def questions(self) -> Any:
        """Stop noting, and tell what they asked."""

    def may_hold(self, guess: Any, truth: Any) -> bool:
        """Whether lines parsed from `guess` can give what they give from `truth` (before the lines)."""

    def reconcile(self, guess: Any, truth: Any, asked: Any, end: Any) -> Any:
        """The true end state of lines parsed from `guess` when their results hold from `truth`, else None."""

    def adopt(self, key: Any) -> None:
        """Take the loose part of a state key."""


@dataclass
class _Start:
    """A worker starts a segment (sent before it parses it, so that a wrong guess is caught early)."""

    index: int
    guess: object  # the start state it assumed (None: the exact one, for the first segment)


@dataclass
class _Segment:
    """What a worker made of one segment."""

    index: int
    asked: object  # what its lines asked of the state's loose part (Segmentable.questions)
    events: list[Event]
    counts: tuple[int, int, int]  # lines, recognized, errors
    truncated: int
    end: object  # its end state's key
    state: bytes  # the parser at the end, pickled: where the rest goes on from after a wrong guess


class _Range(io.RawIOBase):
    """bytes [start, stop) of a file, read as a stream."""

    def __init__(self, path: str, start: int, stop: int) -> None:
        self._file: BinaryIO = open(path, "rb")  # noqa: SIM115  (closed with the range)
        self._file.seek(start)
        self._left = stop - start

    def read(self, size: int = -1) -> bytes:
        want = self._left if size < 0 else min(size, self._left)
        data = self._file.read(want)
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._file.close()
        super().close()


def workers_for(path: str, parser: Parser, jobs: int | None = None) -> int:
    """How many workers to parse this file with (0: not in segments): one per core, at most `jobs`
    (default MAX_WORKERS).

    A plain (uncompressed) file of at least two segments, a parser that tells its state, fork, and at
    least two workers: the parent and the workers share the cores.
    """
    if not sys.platform.startswith("linux") or not isinstance(parser, Segmentable):
        return 0
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as head:
            if head.read(2) == b"\x1f\x8b":
                return 0
    except OSError:
        return 0
    workers = min(cores(), MAX_WORKERS if jobs is None else jobs)
    return workers if workers >= 2 and size >= 2 * MIN_SEGMENT else 0


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))


def boundaries(path: str, start: int, workers: int) -> list[tuple[int, int]]:
    """[start, size) cut into segments at line starts, about a quarter of it per worker; the first ones
    smaller, from an eighth of that size doubling up to it (the parent takes the segments in order:
    it applies the first one's records while the workers parse on; on the LM Studio bench's log it
    waited ~0.25 s for an 8 MiB first segment, ~0.1 s with the ramp); those of the last `workers`
    segments' worth at half that size (the parent applies the last segment's records after the
    workers are done, and they finish closer together: ~0.03 s sooner of ~1.2 s on the llama.cpp
    bench's log)."""
    size = os.path.getsize(path)
    target = min(MAX_SEGMENT, max(MIN_SEGMENT, (size - start) // (4 * workers)))
    step = max(target >> RAMP, 1)
    cuts = [start]
    with open(path, "rb") as stream:
        at = start + step
        while at < size:
            stream.seek(at)
            newline = stream.read(1 << 20).find(b"\n")
            if newline < 0:
                break  # (a line over 1 MiB: the segment goes on)
            cut = at + newline + 1
            if cut < size:
                cuts.append(cut)
            step = min(2 * step, target)
            at = cut + (step if size - cut > workers * target else min(step, target // 2))
    cuts.append(size)
    return list(pairwise(cuts))


def _line_start(path: str, at: int, floor: int) -> int:
    """The first line start at or after `at` (`floor`, itself a line start, when `at` is not past it
    or no line starts within 1 MiB of it)."""
    if at <= floor:
        return floor
    with open(path, "rb") as stream:
        stream.seek(at - 1)
        newline = stream.read(1 << 20).find(b"\n")
    return floor if newline < 0 else at + newline


def _segmentable(parser: Parser) -> Segmentable:
    """The parser, as one that tells its state (workers_for checked that)."""
    assert isinstance(parser, Segmentable)
    return parser


def _key(parser: Segmentable) -> object:
    """The parser's state_key() (what decides how its later lines are read), as a deep copy: the key
    holds the parser's own request objects, which it goes on changing."""
    return copy.deepcopy(parser.state_key())


def _parse_range(
    path: str, run: SourceRun, start: int, stop: int, max_line: int
) -> Iterator[tuple[list[Event], Framer]]:
    """The events of each read of [start, stop) (whole lines), and the framer (for its truncations)."""
    parser = run.parser
    framer = Framer(run.source, "plain", parser.markers, max_line)
    with _Range(path, start, stop) as stream:
        for group in batches(stream, framer, max_line):
            yield run.take_many(group), framer


def _worker(
    path: str, run: SourceRun, segments: list[tuple[int, int]], mine: range, max_line: int, *, flush: bool
) -> Generator[_Start | _Segment, None, None]:
    """(In a worker) its segments, each parsed from a guessed start state (the first one: the true one)."""
    # The parent applies every event in order, the one stage that cannot be split: where it is the
    # slower (a log with few lines a request), workers that share its cores slow the replay down, so
    # they yield to it (where they are the slower, the parent waits on them and leaves them the cores).
    os.nice(WORKER_NICENESS)
    parser, state = run.parser, _segmentable(run.parser)
    last = len(segments) - 1
    at = segments[0][0]  # where the parser's state is: after the head, then after its last segment
    for index in mine:
        start, stop = segments[index]
        guess = None
        if index > 0:  # (the stretch never goes back past `at`: no line is read twice)
            warm = _line_start(path, max(at, start - WARM_UP), at)
            if warm > at:
                state.forget()  # (what it knew of the slots is from before the lines it skips)
            for _ in _parse_range(path, SourceRun(run.source, parser, SourceCounts()), warm, start, max_line):
                pass  # (what the stretch gives is the segment before's to give)
            guess = _key(state)
        yield _Start(index, guess)
        counts = SourceCounts()
        events: list[Event] = []
        truncated = 0
        state.watch()
        for made, framer in _parse_range(path, SourceRun(run.source, parser, counts), start, stop, max_line):
            events += made
            truncated = framer.truncated
        if index == last and flush:
            events += parser.flush()
        asked = state.questions()
        end, at = _key(state), stop
        yield _Segment(
            index,
            asked,
            events,
            counts.parsed(),
            truncated,
            end,
            pickle.dumps(parser),
        )


def _in_one_go(
    path: str, run: SourceRun, start: int, stop: int, max_line: int, *, flush: bool
) -> Generator[list[Event], None, Outcome]:
    """(In a child) [start, stop) parsed in one go from the parser's state, then its flush."""
    counts = run.counts
    truncated = 0
    for made, framer in _parse_range(path, run, start, stop, max_line):
        yield made
        truncated = framer.truncated
    if flush:
        yield run.parser.flush()
    return counts.parsed(), truncated, None, run.parser


def parse(
    path: str, run: SourceRun, workers: int, max_line: int, flush: bool = True
) -> Generator[list[Event], None, Outcome]:
    """The file's events in order, parsed in segments by `workers` forked workers (started now).

    The head is parsed here first and counted in `run.counts`, as are the segments taken; returns
    ((0, 0, 0), truncated, None, the parser as the file left it): nothing for the caller to add.
    Without `flush`, the parser is not flushed at the end (a rotated log goes on in the next file).
    """
    stop = os.path.getsize(path)
    head_end = _line_start(path, min(HEAD, stop), 0)
    job = _Job(path, run, boundaries(path, head_end, workers), max_line, workers, flush)
    for made, framer in _parse_range(path, run, 0, head_end, max_line):
        job.head.append(made)
        job.truncated = framer.truncated
    job.start()
    return job.events()


@dataclass
class _Job:
    """One file's segmented parse (or the rest of it after a wrong guess), on the parent's side."""

    path: str
    run: SourceRun
    segments: list[tuple[int, int]]
    max_line: int
    workers: int
    flush: bool = True  # the parser flushed at the file's end (not when the log goes on in another file)
    misses: int = 0  # rounds in a row before this one whose first guess was wrong (see _resume)
    head: list[list[Event]] = field(default_factory=list)
    truncated: int = 0
    started: list[Generator[_Start | _Segment, None, None]] = field(default_factory=list)

    def start(self) -> None:
        """Fork the workers: worker w of W parses segments w, w + W, ... from the parser's state now."""
        count = min(self.workers, len(self.segments))
        self.started = [
            in_child(
                partial(
                    _worker,
                    self.path,
                    self.run,
                    self.segments,
                    range(w, len(self.segments), count),
                    self.max_line,
                    flush=self.flush,
                ),
                f"kvwatch-parser-{w}",
            )
            for w in range(count)
        ]

    def events(self) -> Generator[list[Event], None, Outcome]:
        """The head's events, then each segment's whose guess holds; after a wrong one, the rest
        parsed from the true state."""
        try:
            yield from self.head
            parser, counts = _segmentable(self.run.parser), self.run.counts
            truth, state = _key(parser), pickle.dumps(parser)
            for index in range(len(self.segments)):
                worker = self.started[index % len(self.started)]
                begun = next(worker)
                assert isinstance(begun, _Start) and begun.index == index
                guess = begun.guess
                exact = guess is None or guess == truth
                if not exact and not parser.may_hold(guess, truth):
                    final = yield from self._resume(index, state, truth)  # (at once, not when it is parsed)
                    return (0, 0, 0), self.truncated, None, final
                done = next(worker)
                assert isinstance(done, _Segment) and done.index == index
                end = done.end if exact else parser.reconcile(guess, truth, done.asked, done.end)
                if end is None:
                    final = yield from self._resume(index, state, truth)
                    return (0, 0, 0), self.truncated, None, final
                yield done.events if exact else _amended(parser, done.events, guess, truth)
                counts.add(done.counts)
                self.truncated += done.truncated
                truth, state = end, done.state
            return (0, 0, 0), self.truncated, None, _restored(state, truth)
        finally:
            for worker in self.started:
                worker.close()  # (a worker still parsing is killed)

    def _resume(self, index: int, state: bytes, truth: object) -> Generator[list[Event], None, Parser]:
        """A wrong guess at segment `index`: the workers stop, and segment `index` on is parsed from
        the true state (`state`, the parser as the segment before left it, with the loose part of
        `truth`). By new workers, forked with that state: a server restart, whose new clock no
        worker can guess, costs a round of segments. In one child when one segment is left, or
        when this was the third round in a row whose first guess was wrong (a log whose state
        cannot be guessed: each round would parse one segment and waste the others). Returns the
        parser as the file left it."""
        for worker in self.started:
            worker.close()
        parser = _restored(state, truth)
        rest = self.segments[index:]
        misses = self.misses + 1 if index == 1 else 0
        if len(rest) < 2 or misses > 2:
            return (yield from self._rest(index, parser))
        run = SourceRun(self.run.source, parser, self.run.counts)
        job = _Job(self.path, run, rest, self.max_line, self.workers, self.flush, misses)
        job.start()
        _, cut, _, final = yield from job.events()
        self.truncated += cut
        assert final is not None
        return final

    def _rest(self, index: int, parser: Parser) -> Generator[list[Event], None, Parser]:
        """Segment `index` on parsed in one child by `parser`, as without segments; returns the
        parser as the file left it."""
        run = SourceRun(self.run.source, parser, SourceCounts())
        start, stop = self.segments[index][0], self.segments[-1][1]
        work = partial(_in_one_go, self.path, run, start, stop, self.max_line, flush=self.flush)
        added, cut, _, final = yield from in_child(work, "kvwatch-parser")
        self.run.counts.add(added)
        self.truncated += cut
        assert final is not None
        return final


def _amended(parser: Segmentable, events: list[Event], guess: object, truth: object) -> list[Event]:
    """The events of lines parsed from `guess` (whose `reconcile` held) as from `truth`: the parser's
    `amend(events, guess, truth)` when it has one (a count the lines read that shows in their events,
    off by what the guess missed: Ollama's conversation numbers), else the same."""
    amend = getattr(parser, "amend", None)
    return events if amend is None else list(amend(events, guess, truth))


def _restored(state: bytes, truth: object) -> Parser:
    """The parser pickled in `state`, with the loose part of the true state key `truth`."""
    parser: Parser = pickle.loads(state)
    _segmentable(parser).adopt(truth)
    return parser
