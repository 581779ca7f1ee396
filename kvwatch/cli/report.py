"""`kvwatch report`: replay log files into the forensic report (kvwatch.forensic), one HTML file."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from kvwatch.cli.options import command, jobs, start_time, time_zone, year
from kvwatch.cli.replay import TerminatedError, _sigterm_ends_it
from kvwatch.engines import choices
from kvwatch.parsers.base import DEFAULT_START

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
  130  interrupted (Ctrl-C); 143: terminated (SIGTERM)
"""


def add(subparsers: Any) -> argparse.ArgumentParser:
    """`kvwatch report`'s parser (its handler `run`), added to the command line's subparsers."""
    parser = command(
        subparsers,
        "report",
        "replay log files into a forensic report: one self-contained HTML file of charts",
        "Replay log files (as `kvwatch replay`) and write the forensic report: what kvwatch concluded, "
        "and charts of prompt vs cached length, hit rates, offload and cached lengths.",
        _EXAMPLES,
    )
    parser.set_defaults(handler=cmd_report)
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
        "--config",
        metavar="PATH",
        help="a config file whose [[engine]] tables define engines to read the files with, and whose "
        "[detectors] settings the report judges by (default: none)",
    )
    parser.add_argument(
        "--since",
        type=start_time,
        metavar="TIME",
        help="chart only events from TIME, RFC 3339 or epoch SECONDS (alerts are still judged on the "
        "whole log) (default: the first event)",
    )
    parser.add_argument(
        "--until",
        type=start_time,
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
        type=year,
        metavar="YEAR",
        help="YEAR of year-less timestamps (vLLM's) (default: a container log's own timestamps' year, "
        "else this year)",
    )
    parser.add_argument(
        "--tz",
        type=time_zone,
        default="UTC",
        metavar="ZONE",
        help="time zone of the logs' timestamps that carry none (default: UTC)",
    )
    parser.add_argument(
        "--start",
        type=start_time,
        default=DEFAULT_START,
        metavar="TIME",
        help="anchor of relative timestamps (llama.cpp's), RFC 3339 or epoch SECONDS (default: as replay's)",
    )
    parser.add_argument(
        "--jobs",
        type=jobs,
        metavar="PROCESSES",
        help="child PROCESSES that read big files, 1 to 64 (default: as replay's)",
    )
    return parser


def cmd_report(args: argparse.Namespace) -> int:
    """Write the report (kvwatch.forensic.command.run); Ctrl-C and SIGTERM end it as they end a replay
    (its children stopped, the shell's status, no traceback)."""
    from kvwatch.forensic.command import run

    try:
        with _sigterm_ends_it():
            return run(args)
    except KeyboardInterrupt:
        print("kvwatch: interrupted", file=sys.stderr)
        return 130
    except TerminatedError:
        print("kvwatch: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
