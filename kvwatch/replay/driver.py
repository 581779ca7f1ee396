"""`kvwatch replay`: drive the pipeline over whole files on event time; also the golden-test harness.

A log's rotated files (`x.log.2`, `x.log.1.gz`, `x.log` in one directory) are read in turn, oldest
first, with one parser, as the daemon follows a rotation; every other file has a parser of its own.
The logs' events are merged by event time before they reach metrics and detectors, so several files
replay as one timeline. Detectors tick on event time at every `tick_every` seconds of log time and
once at the end, as the daemon's scheduler would.

A big file's child (see kvwatch.replay.forked) starts reading as soon as its parser is made, before
the pipeline's own modules (prometheus_client, the detectors) are imported: they load meanwhile.
"""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from kvwatch.engines import FALLBACK, make_parser
from kvwatch.model import Alert, Event, SourceCounts
from kvwatch.parsers.base import EntriesParser, Parser, ParserSettings
from kvwatch.parsers.run import SourceRun
from kvwatch.replay import forked
from kvwatch.replay.files import detect_file, sniff_file, source_name
from kvwatch.replay.forked import FramedFile
from kvwatch.replay.speedups import Speedups, chosen, uncompiled
from kvwatch.sources.framing import Batch, Framer, Framing
from kvwatch.sources.linecap import LINE_CAP

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kvwatch.detectors import DetectorSettings
    from kvwatch.metrics import Metrics
    from kvwatch.output.summary import Summary

MAX_LINE = LINE_CAP  # (one cap, live and in replay: kvwatch/sources/linecap.py)
_CONTAINER_LOG = re.compile(r"^([0-9a-f]{64})-json\.log(?:\.\d+)?(?:\.gz)?$")
_ROTATED = re.compile(r"\.(\d+)(?:\.gz)?$")

#: Children a replay starts at most, unless told (`jobs`), or one per core where there are more.
CHILDREN = 4

#: What reading a file added to its source's counts (SourceCounts.parsed()), the lines truncated, damage
#: (why a compressed file ended early), and the parser as the file left it when a child parsed the file
#: (None: the replay's own parser did).
Outcome = tuple[tuple[int, int, int], int, str | None, Parser | None]

#: One file's events, a read at a time (closing it ends the file's child, if it has one); then the
#: parser as the file left it, when a child parsed the file (None: the replay's own parser did).
_Stream = Generator[list[Event], None, Parser | None]


@dataclass
class ReplayInput:
    """One file to replay and the source name and engine it gets."""

    path: str
    source: str
    engine: str


#: A file to replay, told its framing and given its source's run (parser and counts).
_Prepared = tuple[ReplayInput, Framing, SourceRun]
#: An entry kept with its input while files are grouped into logs.
_E = TypeVar("_E")


@dataclass
class ReplayResult:
    """What a replay produced."""

    registry: CollectorRegistry
    metrics: Metrics
    summary: Summary
    alerts: list[Alert] = field(default_factory=list)
    unrecognised: list[str] = field(default_factory=list)  # the files of which no line was recognised
    damaged: list[str] = field(default_factory=list)  # "path: what was wrong" for damaged gzip files
    lines: dict[str, int] = field(default_factory=dict)  # lines read, per file
    #: the alerts firing at the end as the alert book holds them (summary and evidence of the last tick)
    firing: list[Alert] = field(default_factory=list)
    slower: str | None = None  # why this replay ran slower than this machine could (a loop not compiled)


@dataclass
class _Notes:
    """What each file's read came to: its own line counts (its source's may hold other files' too),
    and "path: what was wrong" for damaged gzip files."""

    read: dict[str, SourceCounts] = field(default_factory=dict)
    damaged: list[str] = field(default_factory=list)


def plan(paths: Sequence[str], engine: str, source: str | None) -> list[ReplayInput]:
    """Name each file's source (a container's log after the container) and choose its engine (`auto`:
    by its first lines, with the rule the live daemon follows, kvwatch.engines.detect). A log's
    rotated files are one log of one engine: the first of them, oldest first, whose head an engine
    recognises decides for all (a live file cut after the start-up lines may hold none that tell)."""
    chosen = {path: engine for path in paths}
    if engine == "auto":
        logs: dict[tuple[str, str], list[str]] = {}
        for path in paths:
            logs.setdefault((os.path.dirname(os.path.abspath(path)), source_name(path)), []).append(path)
        for files in logs.values():
            found = None
            for path in sorted(files, key=age):
                found = detect_file(path)
                if found is not None:
                    break
            for path in files:
                chosen[path] = found or FALLBACK
    return [
        ReplayInput(path, source or container_name(path) or source_name(path), chosen[path]) for path in paths
    ]


def container_name(path: str) -> str | None:
    """The name of the container whose json-file log this is (`<root>/containers/<id>/<id>-json.log`,
    rotated or not), from its config.v2.json, as `docker ps` shows it; None for any other file, or
    when the config cannot be read."""
    log = Path(path)
    found = _CONTAINER_LOG.match(log.name)
    if found is None or log.parent.name != found.group(1):
        return None
    from kvwatch.sources.docker import load_container  # (only for such a file: start-up stays lean)

    container = load_container(log.parent)
    return container.name if container is not None and container.name else None


@dataclass
class _Children:
    """How many more children a replay may start: each big file's framing or parsing child. Files past
    that are read inline, so that fifty rotated logs are fifty streams, not fifty processes."""

    left: int
    speedups: Speedups  # which accelerators the replay uses

    def take(self, wanted: int) -> int:
        """Up to `wanted` of them (0: none left)."""
        got = min(wanted, self.left)
        self.left -= got
        return got


def _events(
    item: ReplayInput,
    run: SourceRun,
    framing: Framing,
    notes: _Notes,
    children: _Children,
    *,
    flush: bool = True,
) -> _Stream:
    """One file's events per read; a big file's child is started now, if one may be.

    The stream returns the parser as the file left it when a child parsed the file (None: `run`'s
    own did); without `flush` the parser is not flushed at the end (the log goes on in another file).
    """
    speedups = children.speedups
    framed = FramedFile(item.path, _framer(item, framing, run, speedups), MAX_LINE, speedups)
    if framed.forks:
        framed.fork = bool(children.take(1))  # (one child frames it, or parses it too; none left: inline)
    if framed.parse_ahead:  # a child frames and parses; only its events and counts come here
        return _outcome(
            forked.in_child(
                lambda: _parsed(framed.batches(), framed, run, flush, child=True), "kvwatch-parser"
            ),
            item,
            run,
            notes,
            child=True,
        )
    return _outcome(_parsed(framed.batches(), framed, run, flush, child=False), item, run, notes, child=False)


def _outcome(
    work: Generator[list[Event], None, Outcome],
    item: ReplayInput,
    run: SourceRun,
    notes: _Notes,
    *,
    child: bool,
) -> _Stream:
    """`work`'s events; then what it came to, in the counts (which a child made on its own copy)."""
    counts = run.counts
    try:
        while True:
            # What the file's own steps add to its source's counts is the file's: other files of the
            # source are read between them (merged by time), never during one.
            before = counts.parsed()
            try:
                events = next(work)
            except StopIteration as end:
                outcome: Outcome = end.value
                added, truncated, damage, parser = outcome
                break
            finally:
                _tally(notes, item.path, before, counts.parsed())
            yield events
    finally:
        work.close()  # (a child not read to its end is ended)
    if child:  # (added to, not set: a source's counts may be shared by a log and its rotated predecessor)
        counts.add(added)
        _tally(notes, item.path, (0, 0, 0), added)
    counts.truncated += truncated
    if damage is not None:
        notes.damaged.append(f"{item.path}: {damage}")
    return parser


def _tally(notes: _Notes, path: str, before: tuple[int, int, int], after: tuple[int, int, int]) -> None:
    """Count for the file at `path` what its source's counts went from `before` to `after` by."""
    notes.read.setdefault(path, SourceCounts()).add(
        (after[0] - before[0], after[1] - before[1], after[2] - before[2])
    )


def _parsed(
    batches: Iterator[list[Batch]], framed: FramedFile, run: SourceRun, flush: bool, *, child: bool
) -> Generator[list[Event], None, Outcome]:
    """One file's events per read, then the parser's flush; returns what it added to the line counts
    (and, in a child, the parser as the file left it)."""
    counts = run.counts
    before = counts.parsed()
    for group in batches:
        yield run.take_many(group)
    if flush:
        yield run.parser.flush()
    after = counts.parsed()
    added = (after[0] - before[0], after[1] - before[1], after[2] - before[2])
    return added, framed.truncated, framed.damage, run.parser if child else None


def rotations(inputs: Sequence[ReplayInput]) -> list[list[ReplayInput]]:
    """The files grouped into logs: the rotations of one log (same directory, same name without
    rotation and compression suffixes, same source and engine) oldest first (`x.log.2`, `x.log.1`,
    `x.log`); every other file a log of its own. In the order the logs are first named."""
    return _grouped(inputs, lambda item: item)


def _grouped(entries: Sequence[_E], item_of: Callable[[_E], ReplayInput]) -> list[list[_E]]:
    """`rotations` of the entries' inputs, each entry kept with its input."""
    logs: dict[tuple[str, str, str, str], list[_E]] = {}
    for entry in entries:
        item = item_of(entry)
        key = (os.path.dirname(os.path.abspath(item.path)), source_name(item.path), item.source, item.engine)
        logs.setdefault(key, []).append(entry)
    return [sorted(files, key=lambda entry: age(item_of(entry).path)) for files in logs.values()]


def age(path: str) -> int:
    """A rotated file's place, oldest first: `x.log.N` (or `x.log.N.gz`) before `x.log.N-1`, the live
    `x.log` last (0; `x.log.N`: -N)."""
    found = _ROTATED.search(os.path.basename(path))
    return -int(found.group(1)) if found else 0


def _log_events(files: list[_Prepared], notes: _Notes, children: _Children) -> _Stream:
    """One log's events: its files in turn, as the daemon follows a rotation, one parser carried
    from each file to the next (a request in progress at a rotation is not lost). The first file's
    child, if it gets one, is started now; the next file's when the one before is read."""
    item, framing, run = files[0]
    left = children.left
    first = _events(item, run, framing, notes, children, flush=len(files) == 1)
    if len(files) == 1:
        return first
    return _chained(first, left - children.left, files, notes, children)


def _chained(
    first: _Stream, taken: int, files: list[_Prepared], notes: _Notes, children: _Children
) -> _Stream:
    """_log_events' generator: each file's events, the parser handed on; a file's children, ended
    with it, go back to the budget for the next file."""
    run = files[0][2]
    parser = yield from first
    for index, (item, framing, _) in enumerate(files[1:], start=2):
        children.left += taken
        if parser is not None:  # (a child parsed the file before: its parser goes on)
            run.parser = parser
        left = children.left
        stream = _events(item, run, framing, notes, children, flush=index == len(files))
        taken = left - children.left
        parser = yield from stream
    return parser


def _in_runs(framing: Framing, parser: Parser) -> bool:
    """Whether a file's lines may be read in runs (a json-file log whose parser reads some raw)."""
    return framing == "docker-json" and isinstance(parser, EntriesParser) and parser.raw_marker is not None


def _framer(item: ReplayInput, framing: Framing, run: SourceRun, speedups: Speedups) -> Framer:
    """A file's framer, with its parser's markers (and the one whose json-file lines it reads raw, if any
    and the replay reads raw runs)."""
    parser = run.parser
    raw_marker = parser.raw_marker if speedups.raw_runs and isinstance(parser, EntriesParser) else None
    return Framer(
        item.source, framing, run.parser.markers, MAX_LINE, raw_marker=raw_marker, blocks=speedups.blocks
    )


def replay(
    inputs: Sequence[ReplayInput],
    settings: ParserSettings,
    detectors: DetectorSettings | None = None,
    tick_every: float | None = None,
    jobs: int | None = None,
    *,
    report: bool = True,
    speedups: Speedups | None = None,
    observers: Sequence[Callable[[Event], None]] = (),
) -> ReplayResult:
    """Replay files through a fresh pipeline (ticks every kvwatch.pipeline.TICK seconds of log time
    unless `tick_every` says otherwise); raises OSError for a missing or unreadable file. Without
    `report`, the summary holds the sources' line counts only (no text report will be written).
    `observers` see every event too (the forensic report's collector).

    `speedups`: the accelerators to use (default: kvwatch.replay.speedups.chosen(), every one unless
    KVWATCH_REPLAY_PLAIN is set); the output is the same whichever.

    Big files are read by children: `jobs` of them at most (default one per core, and at least
    CHILDREN)."""
    # Every file opened and its parser made, then the streams started (a big file's child begins
    # reading), then the pipeline built while they read.
    counts: dict[str, SourceCounts] = {}
    prepared: list[_Prepared] = []
    speedups = chosen() if speedups is None else speedups
    if not speedups.parser_fast_paths:
        settings = replace(settings, fast_paths=False)
    for item in inputs:
        framing, _ = sniff_file(item.path)
        parser = make_parser(item.engine, item.source, settings)
        prepared.append(
            (item, framing, SourceRun(item.source, parser, counts.setdefault(item.source, SourceCounts())))
        )
    notes = _Notes()
    streams: list[_Stream] = []
    children = _Children(jobs or max(CHILDREN, len(os.sched_getaffinity(0))), speedups)
    try:
        for files in _grouped(prepared, lambda entry: entry[0]):
            streams.append(_log_events(files, notes, children))
        result = _replay(prepared, streams, notes, detectors, tick_every, report=report, observers=observers)
    finally:
        for stream in streams:
            stream.close()  # a child not read to its end (after an error) is ended
    if any(_in_runs(framing, run.parser) for _, framing, run in prepared):
        result.slower = uncompiled(children.speedups)  # (by a compiled loop, if this install has it)
    return result


def _replay(
    prepared: list[_Prepared],
    streams: list[_Stream],
    notes: _Notes,
    detectors: DetectorSettings | None,
    tick_every: float | None,
    *,
    report: bool,
    observers: Sequence[Callable[[Event], None]],
) -> ReplayResult:
    """The pipeline over the started streams, their events merged by time."""
    # Imported here, not at the top: a big file's child is already reading while these load.
    from prometheus_client import CollectorRegistry

    from kvwatch.metrics import Metrics
    from kvwatch.output.summary import Summary
    from kvwatch.pipeline import TICK, Pipeline

    registry = CollectorRegistry(auto_describe=True)
    metrics = Metrics(registry)
    summary = Summary()
    for item, framing, run in prepared:
        metrics.sources.adopt(item.source, run.counts)  # (one object for the files of one source)
        summary.declare(item.source, item.engine, framing, run.counts)
    every = TICK if tick_every is None else tick_every
    watching = [summary.observe] if report else []  # (what the text report shows of the events)
    pipeline = Pipeline(metrics, settings=detectors, observers=[*watching, *observers], tick_every=every)
    alerts: list[Alert] = []
    groups: Iterable[list[Event]] = streams[0]
    if len(streams) > 1:
        merged = heapq.merge(*(chain.from_iterable(s) for s in streams), key=lambda ev: ev.time)
        groups = ([event] for event in merged)
    for events in groups:
        alerts.extend(pipeline.feed(events))
    if pipeline.last_time is not None:
        alerts.extend(pipeline.tick(pipeline.last_time))
    read = {item.path: notes.read.get(item.path, SourceCounts()) for item, _, _ in prepared}
    engines: dict[str, dict[str, None]] = {item.source: {} for item, _, _ in prepared}
    for item, _, _ in prepared:
        if read[item.path].recognized:
            engines[item.source][item.engine] = None
    for source, found in engines.items():  # a source names only engines that recognised a line of it
        summary.sources[source].engine = ", ".join(found)
    unrecognised = [  # a log none of whose files had a line its engine knows (a rotated file of start-up
        # lines alone is no sign of a wrong engine when the rest of its log is read)
        entry[0].path
        for files in _grouped(prepared, lambda entry: entry[0])
        if not any(read[entry[0].path].recognized for entry in files)
        for entry in files
    ]
    lines = {path: counts.lines for path, counts in read.items()}
    firing = list(pipeline.book.firing())
    return ReplayResult(registry, metrics, summary, alerts, unrecognised, notes.damaged, lines, firing)
