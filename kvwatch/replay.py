"""`kvwatch replay`: drive the pipeline over whole files on event time; also the golden-test harness.

Each file is its own source with its own parser; their events are merged by event time before they
reach metrics and detectors, so several files replay as one timeline. Detectors tick on event time at
every `tick_every` seconds of log time and once at the end, as the daemon's scheduler would.

A big file's child (see kvwatch.sources.forked) starts reading as soon as its parser is made, before
the pipeline's own modules (prometheus_client, the detectors) are imported: they load meanwhile.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING

from kvwatch import segmented
from kvwatch.model import Alert, Event, SourceCounts
from kvwatch.parsers import detect_engine, make_parser
from kvwatch.parsers.base import ParserSettings
from kvwatch.parsers.run import SourceRun
from kvwatch.segmented import Outcome
from kvwatch.sources.forked import FramedFile, in_child
from kvwatch.sources.framing import Batch, Framer, Framing
from kvwatch.sources.wholefile import sniff_file, source_name

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kvwatch.detectors import DetectorSettings
    from kvwatch.metrics import Metrics
    from kvwatch.report.summary import Summary

MAX_LINE = 1 << 20

#: One file's events, a read at a time (closing it ends the file's child, if it has one).
_Stream = Generator[list[Event], None, None]


@dataclass
class ReplayInput:
    """One file to replay and the source name and engine it gets."""

    path: str
    source: str
    engine: str


@dataclass
class ReplayResult:
    """What a replay produced."""

    registry: CollectorRegistry
    metrics: Metrics
    summary: Summary
    alerts: list[Alert] = field(default_factory=list)
    unrecognised: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)  # "path: what was wrong" for damaged gzip files


def plan(paths: Sequence[str], engine: str, source: str | None) -> list[ReplayInput]:
    """Name each file's source and choose its engine (`auto`: by its first 64 KiB)."""
    inputs = []
    for path in paths:
        chosen = engine
        if engine == "auto":
            _, text = sniff_file(path)
            chosen = detect_engine(text) or "vllm"
        inputs.append(ReplayInput(path, source or source_name(path), chosen))
    return inputs


@dataclass
class _Children:
    """How many more children a replay may start: each big file's framing or parsing child, or its
    workers. Files past that are read inline, so that fifty rotated logs are fifty streams, not fifty
    processes."""

    left: int
    workers: int  # a big dense log's workers at most

    def take(self, wanted: int) -> int:
        """Up to `wanted` of them (0: none left)."""
        got = min(wanted, self.left)
        self.left -= got
        return got


def _events(
    item: ReplayInput, run: SourceRun, framer: Framer, damaged: list[str], children: _Children
) -> _Stream:
    """One file's events per read; a big file's child (or workers) is started now, if one may be."""
    framed = FramedFile(item.path, framer, MAX_LINE)
    if framed.forks:
        limit = min(children.left, children.workers)
        if framed.parse_ahead and (
            workers := children.take(segmented.workers_for(item.path, run.parser, limit))
        ):
            # a big dense file with cores to spare: parsed in segments by several children
            return _outcome(
                segmented.parse(item.path, run, workers, MAX_LINE), item, run, damaged, child=False
            )
        framed.fork = bool(children.take(1))  # (one child frames it, or parses it too; none left: inline)
    if framed.parse_ahead:  # a child frames and parses; only its events and counts come here
        return _outcome(
            in_child(lambda: _parsed(framed.batches(), framed, run), "kvwatch-parser"),
            item,
            run,
            damaged,
            child=True,
        )
    return _outcome(_parsed(framed.batches(), framed, run), item, run, damaged, child=False)


def _outcome(
    work: Generator[list[Event], None, Outcome],
    item: ReplayInput,
    run: SourceRun,
    damaged: list[str],
    *,
    child: bool,
) -> _Stream:
    """`work`'s events; then what it came to, in the counts (which a child made on its own copy)."""
    added, truncated, damage = yield from work
    counts = run.counts
    if child:  # (added to, not set: a source's counts may be shared by a log and its rotated predecessor)
        counts.add(added)
    counts.truncated += truncated
    if damage is not None:
        damaged.append(f"{item.path}: {damage}")


def _parsed(
    batches: Iterator[list[Batch]], framed: FramedFile, run: SourceRun
) -> Generator[list[Event], None, Outcome]:
    """One file's events per read, then the parser's flush; returns what it added to the line counts."""
    counts = run.counts
    before = counts.parsed()
    for group in batches:
        yield run.take_many(group)
    yield run.parser.flush()
    after = counts.parsed()
    return (after[0] - before[0], after[1] - before[1], after[2] - before[2]), framed.truncated, framed.damage


def replay(
    inputs: Sequence[ReplayInput],
    settings: ParserSettings,
    detectors: DetectorSettings | None = None,
    tick_every: float | None = None,
    jobs: int | None = None,
) -> ReplayResult:
    """Replay files through a fresh pipeline (ticks every kvwatch.pipeline.TICK seconds of log time
    unless `tick_every` says otherwise); raises OSError for a missing or unreadable file.

    Big files are read by children: `jobs` of them at most (default one per core, and at least
    kvwatch.segmented.MAX_WORKERS), a big dense log by up to that many workers (by default one per
    core, at most MAX_WORKERS)."""
    # Every file opened and its parser made, then the streams started (a big file's child begins
    # reading), then the pipeline built while they read.
    counts: dict[str, SourceCounts] = {}
    prepared: list[tuple[ReplayInput, Framing, SourceRun]] = []
    for item in inputs:
        framing, _ = sniff_file(item.path)
        parser = make_parser(item.engine, item.source, settings)
        prepared.append(
            (item, framing, SourceRun(item.source, parser, counts.setdefault(item.source, SourceCounts())))
        )
    damaged: list[str] = []
    streams: list[_Stream] = []
    children = _Children(jobs or max(segmented.MAX_WORKERS, segmented.cores()), jobs or segmented.MAX_WORKERS)
    try:
        for item, framing, run in prepared:
            framer = Framer(item.source, framing, run.parser.markers, MAX_LINE)
            streams.append(_events(item, run, framer, damaged, children))
        return _replay(prepared, streams, damaged, detectors, tick_every)
    finally:
        for stream in streams:
            stream.close()  # a child not read to its end (after an error) is ended


def _replay(
    prepared: list[tuple[ReplayInput, Framing, SourceRun]],
    streams: list[_Stream],
    damaged: list[str],
    detectors: DetectorSettings | None,
    tick_every: float | None,
) -> ReplayResult:
    """The pipeline over the started streams, their events merged by time."""
    # Imported here, not at the top: a big file's child is already reading while these load.
    from prometheus_client import CollectorRegistry

    from kvwatch.metrics import Metrics
    from kvwatch.pipeline import TICK, Pipeline
    from kvwatch.report.summary import Summary

    registry = CollectorRegistry(auto_describe=True)
    metrics = Metrics(registry)
    summary = Summary()
    for item, framing, run in prepared:
        metrics.sources.adopt(item.source, run.counts)  # (one object for the files of one source)
        summary.declare(item.source, item.engine, framing, run.counts)
    every = TICK if tick_every is None else tick_every
    pipeline = Pipeline(metrics, settings=detectors, observers=[summary.observe], tick_every=every)
    alerts: list[Alert] = []
    groups: Iterable[list[Event]] = streams[0]
    if len(streams) > 1:
        merged = heapq.merge(*(chain.from_iterable(s) for s in streams), key=lambda ev: ev.time)
        groups = ([event] for event in merged)
    advance, apply = pipeline.advance, pipeline.apply
    for events in groups:
        for event in events:
            alerts.extend(advance(event.time))
            apply(event)
    if pipeline.last_time is not None:
        alerts.extend(pipeline.tick(pipeline.last_time))
    unrecognised = [item.path for item, _, _ in prepared if summary.counts[item.source].recognized == 0]
    return ReplayResult(registry, metrics, summary, alerts, unrecognised, damaged)
