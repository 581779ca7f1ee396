"""The stage after parsing alone: parse one log into a list of events first, then time only what
`kvwatch replay` does with them (Pipeline.apply: metrics, windows, the summary; Pipeline.advance: the
detector ticks and the alert book); prints events, ticks, alerts and CPU seconds.

    python bench/apply_stage.py lmstudio-20mb.log --repeat 3   # (a log bench/lmstudio.py wrote)
    python bench/apply_stage.py FILE --profile 30   # the 30 costliest functions (cProfile, cumulative)

The digest covers every alert transition and the Prometheus exposition: equal digests, equal results.
"ticks" counts the detector ticks run (Pipeline.advance leaves out those that would change nothing).
The parsed events are frozen out of the garbage collector's sight before timing: a replay streams them
and never holds them all, and a collector walking them all would bill this stage for the list.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import os
import pstats
import sys
import time
from dataclasses import asdict

from prometheus_client import CollectorRegistry, generate_latest

from kvwatch.engines import FALLBACK, detect_engine, make_parser
from kvwatch.metrics import Metrics
from kvwatch.model import Alert, Event, SourceCounts
from kvwatch.output.summary import Summary
from kvwatch.parsers.base import ParserSettings
from kvwatch.parsers.run import SourceRun
from kvwatch.pipeline import Pipeline
from kvwatch.replay import MAX_LINE
from kvwatch.replay.files import batches, open_log, sniff_file
from kvwatch.sources.framing import Framer


def parse(path: str, engine: str, year: int) -> tuple[str, str, list[Event], SourceCounts]:
    """The file's engine, framing, events and line counts."""
    framing, head = sniff_file(path)
    engine = engine if engine != "auto" else detect_engine(head) or FALLBACK
    run = SourceRun("bench", make_parser(engine, "bench", ParserSettings(year=year)), SourceCounts())
    framer = Framer("bench", framing, run.parser.markers, MAX_LINE)
    events: list[Event] = []
    with open_log(path) as stream:
        for group in batches(stream, framer, MAX_LINE):
            events.extend(run.take_many(group))
    events.extend(run.parser.flush())
    return engine, framing, events, run.counts


def apply_all(engine: str, framing: str, events: list[Event], counts: SourceCounts) -> tuple[int, str]:
    """Replay's loop over `events` on a fresh pipeline; its ticks and a digest of alerts and metrics."""
    registry = CollectorRegistry(auto_describe=True)
    metrics = Metrics(registry)
    summary = Summary()
    metrics.sources.adopt("bench", counts)
    summary.declare("bench", engine, framing, counts)
    pipeline = Pipeline(metrics, observers=[summary.observe])
    ticks = 0
    tick = pipeline.tick

    def counted(now: float) -> list[Alert]:
        nonlocal ticks
        ticks += 1
        return tick(now)

    pipeline.tick = counted  # type: ignore[method-assign]
    alerts = pipeline.feed(events)
    if pipeline.last_time is not None:
        alerts.extend(pipeline.tick(pipeline.last_time))
    digest = hashlib.sha256(repr([asdict(a) for a in alerts]).encode())
    digest.update(generate_latest(registry))
    digest.update(repr({k: (v.first, v.last, sorted(v.parts)) for k, v in summary.sources.items()}).encode())
    return ticks, f"{len(alerts)} alerts, digest {digest.hexdigest()[:12]}"


def main() -> int:
    """Parse the file, then time the apply/advance half (or profile it)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file")
    parser.add_argument("--engine", default="auto")
    parser.add_argument("--year", type=int, default=2026)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print the N costliest functions")
    args = parser.parse_args()
    engine, framing, events, counts = parse(args.file, args.engine, args.year)
    gc.collect()
    gc.freeze()
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        apply_all(engine, framing, events, counts)
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(args.profile)
        return 0
    rounds = []
    for _ in range(args.repeat):
        start = time.process_time()
        ticks, outcome = apply_all(engine, framing, events, counts)
        rounds.append(time.process_time() - start)
    load = os.getloadavg()[0]
    print(
        f"{engine} ({framing}): {len(events)} events, {ticks} ticks, {outcome}; apply stage "
        f"{min(rounds):.2f} CPU s (rounds {', '.join(f'{r:.2f}' for r in rounds)}; load {load:.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
