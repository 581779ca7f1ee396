"""`kvwatch replay`: drive the pipeline over whole files on event time; also the golden-test harness.

Each file is its own source with its own parser; their events are merged by event time before they
reach metrics and detectors, so several files replay as one timeline. Detectors tick on event time at
every `tick_every` seconds of log time and once at the end, as the daemon's scheduler would.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain

from prometheus_client import CollectorRegistry

from kvwatch.detectors import DetectorSettings
from kvwatch.metrics import Metrics
from kvwatch.model import Alert, Event
from kvwatch.parsers import detect_engine, make_parser
from kvwatch.parsers.base import ParserSettings
from kvwatch.pipeline import TICK, Pipeline, SourceRun
from kvwatch.report.summary import Summary
from kvwatch.sources.forked import FramedFile, in_child
from kvwatch.sources.framing import Framer
from kvwatch.sources.wholefile import sniff_file, source_name

MAX_LINE = 1 << 20

#: What parsing a file added to its source's (lines, recognized, errors); lines truncated; damage (see
#: FramedFile).
_Outcome = tuple[tuple[int, int, int], int, str | None]


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


def _events(item: ReplayInput, run: SourceRun, framer: Framer, damaged: list[str]) -> Iterator[list[Event]]:
    framed = FramedFile(item.path, framer, MAX_LINE)
    if framed.parse_ahead:  # a child frames and parses; only its events and counts come here
        # The child counts on its copy of the source's counts; what it added is added here (a source's
        # counts may be shared: a log and its rotated predecessor replayed together).
        added, truncated, damage = yield from in_child(lambda: _parsed(framed, run), "kvwatch-parser")
        counts = run.counts
        counts.lines += added[0]
        counts.recognized += added[1]
        counts.errors += added[2]
    else:
        _, truncated, damage = yield from _parsed(framed, run)
    run.counts.truncated += truncated
    if damage is not None:
        damaged.append(f"{item.path}: {damage}")


def _parsed(framed: FramedFile, run: SourceRun) -> Generator[list[Event], None, _Outcome]:
    """One file's events per read, then the parser's flush; returns what it added to the line counts."""
    counts = run.counts
    before = counts.lines, counts.recognized, counts.errors
    for group in framed.batches():
        yield run.take_many(group)
    yield run.parser.flush()
    added = counts.lines - before[0], counts.recognized - before[1], counts.errors - before[2]
    return added, framed.truncated, framed.damage


def replay(
    inputs: Sequence[ReplayInput],
    settings: ParserSettings,
    detectors: DetectorSettings | None = None,
    tick_every: float = TICK,
) -> ReplayResult:
    """Replay files through a fresh pipeline; raises OSError for a missing or unreadable file."""
    registry = CollectorRegistry(auto_describe=True)
    metrics = Metrics(registry)
    summary = Summary()
    pipeline = Pipeline(metrics, settings=detectors, observers=[summary.observe], tick_every=tick_every)
    streams = []
    damaged: list[str] = []
    for item in inputs:
        framing, _ = sniff_file(item.path)
        parser = make_parser(item.engine, item.source, settings)
        run = SourceRun(item.source, parser, metrics.sources.of(item.source))
        summary.declare(item.source, item.engine, framing, run.counts)
        framer = Framer(item.source, framing, parser.markers, MAX_LINE)
        streams.append(_events(item, run, framer, damaged))
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
    unrecognised = [item.path for item in inputs if summary.counts[item.source].recognized == 0]
    return ReplayResult(registry, metrics, summary, alerts, unrecognised, damaged)
