"""`kvwatch report LOG... -o report.html`: replay the logs (as `kvwatch replay` does, with its engine
detection) and write the forensic report, one self-contained HTML file. Its options are declared in
kvwatch/cli/report.py, with the other subcommands'."""

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

from kvwatch.parsers.base import ParserSettings

#: The exit status when some FILE had no line any engine recognised (as `kvwatch replay`'s).
UNRECOGNISED = 3


def run(args: argparse.Namespace) -> int:
    """Write the report; the exit status."""
    from kvwatch.replay.files import spooled

    if args.since is not None and args.until is not None and args.since > args.until:
        print("kvwatch report: --since is after --until: nothing to report", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kvwatch-report-") as spool:
        try:
            paths = spooled(args.files, spool)
        except OSError as err:
            print(f"kvwatch: cannot read {err.filename}: {err.strerror or err}", file=sys.stderr)
            return 2
        return _report(args, paths, dict(zip(paths, args.files, strict=True)))


def _report(args: argparse.Namespace, paths: list[str], named: dict[str, str]) -> int:
    from kvwatch.forensic.collect import EventCollector
    from kvwatch.replay import plan, replay

    settings = ParserSettings(
        year=args.year, now_year=datetime.now(timezone.utc).year, tz=args.tz, start=args.start
    )
    from kvwatch.config.replay import config_detectors

    detectors, problem = config_detectors(args.config)
    if problem:
        print(problem, file=sys.stderr)
        return 2
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
        result = replay(
            inputs, settings, detectors, jobs=args.jobs, report=False, observers=[collector.observe]
        )
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
