"""`kvwatch report LOG... -o report.html`: replay the logs (as `kvwatch replay` does, with its engine
detection) and write the forensic report, one self-contained HTML file."""

from __future__ import annotations

import argparse
import gc
import math
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kvwatch.engines import choices
from kvwatch.parsers.base import DEFAULT_START, ParserSettings

#: The exit status when some FILE had no line any engine recognised (as `kvwatch replay`'s).
UNRECOGNISED = 3

_EXAMPLES = """examples:
  kvwatch report vllm.log -o report.html
  kvwatch report --year 2025 vllm.log.2.gz vllm.log.1 vllm.log -o vllm-incident.html
  kvwatch report usage.log --source usage --since 2026-03-01T09:00:00Z --until 2026-03-01T18:00:00Z
  kvwatch report --engine llamacpp --start 2026-03-01T09:00:00Z llama-server.log -o llama.html

The file holds its charts' library and data: it makes no request when opened, and holds no prompt
text. docs/report.md says how to read it.

exit status:
  0    the report was written
  2    a bad argument, a FILE missing or unreadable, or the report could not be written
  3    the report was written, but some FILE had no line that any engine recognised (said on stderr)
  130  interrupted (Ctrl-C)
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """`kvwatch report`'s parser, added to the command line's subparsers."""
    from kvwatch import cli  # (its argument types: the same values as replay's)

    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="replay log files into a forensic report: one self-contained HTML file of charts",
        description="Replay log files (as `kvwatch replay`) and write the forensic report: what kvwatch "
        "concluded, and charts of prompt vs cached length, hit rates, offload and cached lengths.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="a log file: plain, docker json-file or gzip; `-`: standard input; a log's rotated files are "
        "read in turn, oldest first (required, one or more)",
    )
    parser.add_argument(
        "-o",
        "--output",
        default="kvwatch-report.html",
        metavar="PATH",
        help="where the HTML report is written; `-`: standard output (default: kvwatch-report.html)",
    )
    parser.add_argument(
        "--engine",
        choices=choices(),
        default="auto",
        help="the engine that wrote the files; auto: told by each file's first 64 KiB (default: auto)",
    )
    parser.add_argument(
        "--since",
        type=cli._start,
        metavar="TIME",
        help="chart only events from TIME, RFC 3339 or epoch SECONDS (alerts are still judged on the "
        "whole log) (default: the first event)",
    )
    parser.add_argument(
        "--until",
        type=cli._start,
        metavar="TIME",
        help="chart only events up to TIME, RFC 3339 or epoch SECONDS (default: the last event)",
    )
    parser.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="NAME",
        help="report only the source NAME (a file's name, or its container's); repeat it for several "
        "(default: every source)",
    )
    parser.add_argument(
        "--label",
        metavar="NAME",
        help="source name for every FILE, as `kvwatch replay --source` (default: each file's name, or "
        "its container's)",
    )
    parser.add_argument(
        "--year",
        type=cli._year,
        metavar="YEAR",
        help="YEAR of year-less timestamps (vLLM's) (default: a container log's own timestamps' year, "
        "else this year)",
    )
    parser.add_argument(
        "--tz",
        type=cli._tz,
        default="UTC",
        metavar="ZONE",
        help="time zone of the logs' timestamps that carry none (default: UTC)",
    )
    parser.add_argument(
        "--start",
        type=cli._start,
        default=DEFAULT_START,
        metavar="TIME",
        help="anchor of relative timestamps (llama.cpp's), RFC 3339 or epoch SECONDS (default: as replay's)",
    )
    parser.add_argument(
        "--jobs",
        type=cli._jobs,
        metavar="PROCESSES",
        help="child PROCESSES that read big files, 1 to 64 (default: as replay's)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    """Write the report; the exit status."""
    from kvwatch.sources.wholefile import spooled

    if args.since is not None and args.until is not None and args.since > args.until:
        print("kvwatch report: --since is after --until: nothing to report", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kvwatch-report-") as spool:
        try:
            paths = spooled(args.files, spool)
        except OSError as err:
            print(f"kvwatch: cannot read {err.filename}: {err.strerror or err}", file=sys.stderr)
            return 2
        try:
            return _report(args, paths, dict(zip(paths, args.files, strict=True)))
        except KeyboardInterrupt:
            print("kvwatch: interrupted", file=sys.stderr)
            return 130


def _report(args: argparse.Namespace, paths: list[str], named: dict[str, str]) -> int:
    from kvwatch.forensic.collect import EventCollector
    from kvwatch.replay import plan, replay

    settings = ParserSettings(
        year=args.year, now_year=datetime.now(timezone.utc).year, tz=args.tz, start=args.start
    )
    try:
        inputs = plan(paths, args.engine, args.label)
    except OSError as err:
        print(
            f"kvwatch: cannot read {named.get(err.filename, err.filename)}: {err.strerror or err}",
            file=sys.stderr,
        )
        return 2
    known = sorted({item.source for item in inputs})
    unknown = [name for name in args.source if name not in known]
    if unknown:
        print(
            f"kvwatch report: no source named {', '.join(unknown)} (the files' sources: {', '.join(known)})",
            file=sys.stderr,
        )
        return 2
    collector = EventCollector(
        -math.inf if args.since is None else args.since, math.inf if args.until is None else args.until
    )
    gc.freeze()  # (as replay: the modules live to the exit)
    try:
        result = replay(inputs, settings, jobs=args.jobs, report=False, observers=[collector.observe])
    except OSError as err:
        print(f"kvwatch: cannot read {err.filename}: {err.strerror or err}", file=sys.stderr)
        return 2
    html = _page(args, result, collector, named, known)
    try:
        if args.output == "-":
            sys.stdout.write(html)
        else:
            from kvwatch.atomic import write_atomic

            if not Path(args.output).parent.is_dir():  # (as a shell's `>`: no folder is made)
                raise FileNotFoundError(2, "no such directory")
            write_atomic(Path(args.output), html)
            umask = os.umask(0o022)  # (a report is for sharing: the mode of a file `>` writes)
            os.umask(umask)
            os.chmod(args.output, 0o666 & ~umask)
    except OSError as err:
        print(f"kvwatch report: cannot write {args.output}: {err.strerror or err}", file=sys.stderr)
        return 2
    for path in result.unrecognised:
        print(f"kvwatch: no known engine recognised a line of {named[path]}", file=sys.stderr)
    if args.output != "-":
        size = len(html.encode("utf-8"))
        print(f"kvwatch: wrote {args.output} ({size / 1e6:.1f} MB)", file=sys.stderr)
    return UNRECOGNISED if result.unrecognised else 0


def _page(
    args: argparse.Namespace, result: Any, collector: Any, named: dict[str, str], known: list[str]
) -> str:
    from kvwatch.forensic.assemble import SourceFacts, narrowing, page
    from kvwatch.forensic.page import render

    data = collector.data
    chosen = args.source or known
    sources = []
    for name in chosen:
        view = result.summary.sources[name]
        first, last = data.periods.get(name, (None, None))
        sources.append(SourceFacts(name, view.engine, view.counts, first, last))
    files = [f"{named[path]}: no known engine recognised any of its lines." for path in result.unrecognised]
    files += [f"{note}" for note in result.damaged]
    alerts = overlapping(result.alerts, args.since, args.until)
    names = ", ".join(os.path.basename(named[path]) for path in named)
    report = page(
        data,
        alerts,
        sources,
        title=f"kvwatch report: {names if len(names) < 90 else names[:87] + '...'}",
        made=f"kvwatch report of {len(named)} file{'' if len(named) == 1 else 's'}",
        files=files,
        narrowed=narrowing(args.since, args.until, args.source),
        firing=result.firing if args.until is None else [],  # (its words are the log's end's)
    )
    return render(report)


def overlapping(alerts: list[Any], since: float | None, until: float | None) -> list[Any]:
    """The transitions of the alerts that fired within [since, until] or were firing across it."""
    low = -math.inf if since is None else since
    high = math.inf if until is None else until
    spans: dict[str, list[float]] = {}  # fingerprint -> [first firing, last resolved or inf]
    for alert in alerts:
        span = spans.setdefault(alert.fingerprint(), [math.inf, math.inf])
        if alert.state == "firing":
            span[0] = min(span[0], alert.at)
            span[1] = math.inf
        else:
            span[1] = alert.at
    kept = {key for key, (fired, resolved) in spans.items() if fired <= high and resolved >= low}
    return [alert for alert in alerts if alert.fingerprint() in kept]
