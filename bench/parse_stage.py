"""The parse stage alone: frame and parse one log as `kvwatch replay` does (one process, no metrics, no
detectors); prints its events, line counts and CPU seconds.

    python bench/parse_stage.py lmstudio-20mb.log   # (a log bench/lmstudio.py wrote)
"""

from __future__ import annotations

import argparse
import sys
import time

from kvwatch.engines import FALLBACK, detect_engine, make_parser
from kvwatch.model import SourceCounts
from kvwatch.parsers.base import EntriesParser, ParserSettings
from kvwatch.parsers.run import SourceRun
from kvwatch.replay import MAX_LINE
from kvwatch.replay.files import batches, open_log, sniff_file
from kvwatch.sources.framing import Framer


def main() -> int:
    """Parse the file; print what it gave and the CPU time it took."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file")
    parser.add_argument("--engine", default="auto")
    parser.add_argument("--year", type=int, default=2026)
    args = parser.parse_args()
    framing, head = sniff_file(args.file)
    engine = args.engine if args.engine != "auto" else detect_engine(head) or FALLBACK
    run = SourceRun("bench", make_parser(engine, "bench", ParserSettings(year=args.year)), SourceCounts())
    made = run.parser  # (its framer as replay's: kvwatch.replay.driver._framer)
    raw_marker = made.raw_marker if isinstance(made, EntriesParser) else None
    framer = Framer("bench", framing, run.parser.markers, MAX_LINE, raw_marker=raw_marker)
    start = time.process_time()
    events = 0
    with open_log(args.file) as stream:
        for group in batches(stream, framer, MAX_LINE):
            events += len(run.take_many(group))
    events += len(run.parser.flush())
    lines, recognized, errors = run.counts.parsed()
    print(
        f"{engine} ({framing}): {events} events, {lines} lines, {recognized} recognised, {errors} errors;"
        f" parse stage {time.process_time() - start:.2f} CPU s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
