"""A log parsed in one go and in segments (kvwatch.replay.segmented), for the engines whose parsers tell their
state: what each gives, events and (lines, recognized, errors)."""

from __future__ import annotations

from pathlib import Path

from kvwatch.engines import make_parser
from kvwatch.model import Event, SourceCounts
from kvwatch.parsers.base import ParserSettings
from kvwatch.parsers.run import SourceRun
from kvwatch.replay import segmented
from kvwatch.replay.files import batches, open_log
from kvwatch.sources.framing import Framer

MAX_LINE = 4096
Outcome = tuple[list[Event], tuple[int, int, int]]


def one_go(engine: str, path: Path, settings: ParserSettings) -> Outcome:
    """The file parsed in one pass, as replay's single child parses it."""
    parser = make_parser(engine, "src", settings)
    run = SourceRun("src", parser, SourceCounts())
    events: list[Event] = []
    with open_log(str(path)) as stream:
        for group in batches(stream, Framer("src", "plain", parser.markers, MAX_LINE), MAX_LINE):
            events += run.take_many(group)
    events += parser.flush()
    return events, run.counts.parsed()


def in_segments(engine: str, path: Path, settings: ParserSettings, workers: int = 2) -> Outcome:
    """The file parsed by segmented.parse with `workers` workers."""
    run = SourceRun("src", make_parser(engine, "src", settings), SourceCounts())
    events: list[Event] = []
    work = segmented.parse(str(path), run, workers, MAX_LINE)
    while True:
        try:
            events += next(work)
        except StopIteration as end:
            assert end.value[0] == (0, 0, 0) and end.value[3] is not None
            break
    return events, run.counts.parsed()
