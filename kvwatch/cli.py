"""The command line: `kvwatch replay ...` (more commands join as they land); `main(argv) -> int`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timezone

from kvwatch import __version__
from kvwatch.parsers.base import DEFAULT_START, ParserSettings
from kvwatch.parsers.clock import parse_rfc3339, zone

FORMATS = ("text", "prom", "json", "golden")


def _year(text: str) -> int:
    if not text.isdigit() or not 1970 <= int(text) <= 9999:
        raise argparse.ArgumentTypeError(f"not a year: {text!r}")
    return int(text)


def _tz(text: str) -> str:
    try:
        zone(text)
    except (KeyError, ValueError) as err:
        raise argparse.ArgumentTypeError(f"unknown time zone {text!r}") from err
    return text


def _start(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    stamp = parse_rfc3339(text)
    if stamp is None:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time or epoch seconds: {text!r}")
    return stamp


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="kvwatch", description=__doc__)
    parser.add_argument("--version", action="version", version=f"kvwatch {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("replay", help="replay log files and print the metrics (and alerts)")
    rep.add_argument("files", nargs="+", metavar="FILE")
    rep.add_argument("--engine", choices=("auto", "vllm", "llamacpp"), default="auto")
    rep.add_argument("--format", choices=FORMATS, default="text")
    rep.add_argument("--year", type=_year, help="year of year-less timestamps (default: this year)")
    rep.add_argument("--tz", type=_tz, default="UTC", help="zone of the log's timestamps (default UTC)")
    rep.add_argument("--source", help="source label for every FILE (default: from each file's name)")
    rep.add_argument(
        "--start",
        type=_start,
        default=DEFAULT_START,
        help="anchor of relative timestamps (llama.cpp), RFC 3339 or epoch (default 2026-01-01T00:00:00Z)",
    )
    return parser


def _unreadable(paths: Sequence[str]) -> str | None:
    for path in paths:
        try:
            with open(path, "rb") as handle:
                handle.read(1)
        except OSError as err:
            return f"kvwatch: cannot read {path}: {err.strerror or err}"
    return None


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay files and print the chosen format on stdout; humans' notes go to stderr."""
    from kvwatch.replay import plan, replay
    from kvwatch.report.exposition import alert_json, golden_lines, prom_text, samples
    from kvwatch.report.text import render

    problem = _unreadable(args.files)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    now_year = datetime.now(timezone.utc).year
    settings = ParserSettings(year=args.year, now_year=now_year, tz=args.tz, start=args.start)
    try:
        result = replay(plan(args.files, args.engine, args.source), settings)
    except OSError as err:
        print(f"kvwatch: cannot read {err.filename}: {err.strerror or err}", file=sys.stderr)
        return 2
    for path in result.unrecognised:
        print(f"kvwatch: nothing in {path} was recognised as a {args.engine} log", file=sys.stderr)
    if args.format == "prom":
        sys.stdout.write(prom_text(result.registry))
    elif args.format == "json":
        body = {
            "metrics": samples(result.registry),
            "alerts": [alert_json(a) for a in result.alerts],
        }
        sys.stdout.write(json.dumps(body, indent=1, sort_keys=True) + "\n")
    elif args.format == "golden":
        sys.stdout.write("\n".join(golden_lines(result.registry, result.alerts)) + "\n")
    else:
        sys.stdout.write(render(result.summary, result.alerts))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "replay":
            return cmd_replay(args)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return 2
