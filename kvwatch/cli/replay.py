"""`kvwatch replay`: replay log files on their own time and print their metrics and alerts."""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import json
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from types import FrameType
from typing import Any

from kvwatch.cli.options import command, jobs, start_time, time_zone, year
from kvwatch.engines import choices, names
from kvwatch.parsers.base import DEFAULT_START, ParserSettings
from kvwatch.times import iso

FORMATS = ("text", "prom", "json", "golden")
#: `kvwatch replay`'s exit status when a FILE had no line any engine tried recognised.
UNRECOGNISED = 3
#: `kvwatch replay`'s exit status when a compressed FILE was cut short or corrupt (its lines before the
#: damage replayed); it wins over UNRECOGNISED, which a file damaged before its first line would be too.
DAMAGED = 4

_REPLAY_EXAMPLES = """examples:
  kvwatch replay vllm.log                         # a summary per source, for a human
  kvwatch replay --format prom --year 2025 vllm.log.2.gz vllm.log.1 vllm.log
  kvwatch replay --engine llamacpp --start 2026-03-01T09:00:00Z llama-server.log
  kvwatch replay --format golden --year 2026 samples/vllm-docker.log
  zcat old.log.gz | kvwatch replay --source gpu0 -

exit status:
  0    every FILE had a line that an engine recognised
  1    standard output was closed before the end (`| head`)
  2    a bad argument, or a FILE missing or unreadable (nothing on stdout)
  3    some FILE had no line that any engine tried recognised: each such FILE is
       said on stderr, the others are reported as usual
  4    a compressed FILE was cut short or is corrupt: the complete lines before the
       damage are replayed, and stderr names the file and the byte where it stops
  130  interrupted (Ctrl-C); 143: terminated (SIGTERM)
"""


def add(sub: Any) -> None:
    """`kvwatch replay`: its options."""
    rep = command(
        sub,
        "replay",
        "replay log files and print the metrics (and alerts)",
        "Replay log files on their own time; print their metrics and alerts (the golden-test harness too).",
        _REPLAY_EXAMPLES,
    )
    rep.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="a log file: plain, docker json-file or gzip; `-`: standard input; a log's rotated files are "
        "read in turn, oldest first (required, one or more)",
    )
    rep.add_argument(
        "--engine",
        choices=choices(),
        default="auto",
        help="the engine that wrote the files; auto: told by each file's first 64 KiB (default: auto)",
    )
    rep.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: a summary per source; prom: the Prometheus exposition; json: metrics and alerts; "
        "golden: the sorted samples, then the alert transitions (default: text)",
    )
    rep.add_argument(
        "--year",
        type=year,
        metavar="YEAR",
        help="YEAR of year-less timestamps (vLLM's) (default: a container log's own timestamps' year, "
        "else this year)",
    )
    rep.add_argument(
        "--tz",
        type=time_zone,
        default="UTC",
        metavar="ZONE",
        help="time zone of the logs' timestamps that carry none, e.g. Europe/Berlin (default: UTC)",
    )
    rep.add_argument(
        "--source",
        metavar="NAME",
        help="source label for every FILE (default: each file's name, or its container's)",
    )
    rep.add_argument(
        "--start",
        type=start_time,
        default=DEFAULT_START,
        metavar="TIME",
        help="anchor of relative timestamps (llama.cpp's), RFC 3339 or epoch SECONDS "
        f"(default: {iso(DEFAULT_START)})",
    )
    rep.add_argument(
        "--jobs",
        type=jobs,
        metavar="PROCESSES",
        help="child PROCESSES that read big files, one each, 1 to 64; the files past them are read "
        "inline (default: one per core and at least 4)",
    )
    rep.add_argument(
        "--config",
        metavar="PATH",
        help="a config file whose [[engine]] tables define engines to read the files with, and whose "
        "[detectors] settings the replay judges by (default: none)",
    )
    rep.set_defaults(handler=cmd_replay)


def preload_engines(argv: Sequence[str]) -> None:
    """The engines a `--config` defines, registered before the options are parsed (`--engine` takes
    their names); a config that cannot be read is reported by the command that reads it."""
    if not argv or argv[0] not in ("replay", "report"):
        return
    for i, arg in enumerate(argv):
        path = argv[i + 1] if arg == "--config" and i + 1 < len(argv) else arg.partition("=")[2]
        if arg == "--config" or arg.startswith("--config="):
            from kvwatch.config import ConfigError
            from kvwatch.config.engines import load_engines

            with contextlib.suppress(ConfigError):
                load_engines(path)
            return


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay the files, with Ctrl-C and SIGTERM ending it with the shell's status and no traceback."""
    try:
        with _sigterm_ends_it():
            return _replay(args)
    except KeyboardInterrupt:  # Ctrl-C on a long replay: no traceback, the shell's status
        print("kvwatch: interrupted", file=sys.stderr)
        return 130
    except TerminatedError:
        print("kvwatch: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM


def _unreadable(paths: Sequence[str]) -> str | None:
    for path in paths:
        try:
            with open(path, "rb") as handle:
                handle.read(1)
        except OSError as err:
            return f"kvwatch: cannot read {path}: {err.strerror or err}"
    return None


def _replay(args: argparse.Namespace) -> int:
    """Replay files and print the chosen format on stdout; humans' notes go to stderr."""
    from kvwatch.replay.files import spooled

    with tempfile.TemporaryDirectory(prefix="kvwatch-replay-") as spool:
        try:
            paths = spooled(args.files, spool)
        except OSError as err:
            print(f"kvwatch: cannot read {err.filename}: {err.strerror or err}", file=sys.stderr)
            return 2
        return _replay_files(args, paths, dict(zip(paths, args.files, strict=True)))


def _open_files_for(files: int) -> None:
    """Raise the soft limit on open files towards the hard one when `files` may need more: a replay
    merges its files by time, so each file bigger than a read stays open until its last event is
    taken (a smaller one is closed after its read); the soft limit is often 1024."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = files + 64  # (and the pipes, sockets and modules of the rest)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))


def _replay_files(args: argparse.Namespace, paths: list[str], named: dict[str, str]) -> int:
    """_replay of the files at `paths` (streams copied to files already), named as given."""
    from kvwatch.replay import plan, replay

    problem = _unreadable(paths)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    _open_files_for(len(paths))
    from kvwatch.config.replay import config_detectors

    detectors, problem = config_detectors(args.config)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    now_year = datetime.now(timezone.utc).year
    settings = ParserSettings(year=args.year, now_year=now_year, tz=args.tz, start=args.start)
    try:
        report = args.format == "text"
        # A replay is the process's last work: what is loaded by now (the modules) lives to its exit,
        # whose collections then need not walk it (~20M instructions, ~10 ms, less per replay).
        gc.freeze()
        result = replay(
            plan(paths, args.engine, args.source), settings, detectors, jobs=args.jobs, report=report
        )
    except OSError as err:
        hint = ""
        if err.errno == errno.EMFILE:
            hint = f" (the {len(paths)} files are read at once, merged by time: raise `ulimit -n`)"
        print(f"kvwatch: cannot read {err.filename}: {err.strerror or err}{hint}", file=sys.stderr)
        return 2
    # (imported after the replay, which has a big file read while the pipeline's modules load)
    from kvwatch.notify.payload import alert_to_json
    from kvwatch.output.exposition import golden_lines, prom_text, samples
    from kvwatch.output.text import render

    damaged = dict(note.partition(": ")[::2] for note in result.damaged)  # ("path: what was wrong")
    for path in result.unrecognised:
        if result.lines[path] or path not in damaged:  # (damaged before its first line: said below)
            print(_unrecognised(named[path], result.lines[path], args.engine), file=sys.stderr)
    for path, damage in damaged.items():
        print(f"kvwatch: {named.get(path, path)}: {damage}", file=sys.stderr)
    if result.slower:
        print(f"kvwatch: {result.slower}", file=sys.stderr)
    if args.format == "prom":
        sys.stdout.write(prom_text(result.registry))
    elif args.format == "json":
        body = {
            "metrics": samples(result.registry),
            "alerts": [alert_to_json(a) for a in result.alerts],
        }
        sys.stdout.write(json.dumps(body, indent=1, sort_keys=True) + "\n")
    elif args.format == "golden":
        sys.stdout.write("\n".join(golden_lines(result.registry, result.alerts)) + "\n")
    else:
        sys.stdout.write(render(result.summary, result.alerts))
    return DAMAGED if damaged else UNRECOGNISED if result.unrecognised else 0


def _unrecognised(name: str, lines: int, engine: str) -> str:
    """What replay says of a file of which no line was recognised (`engine`: as --engine gave it)."""
    count = "1 line" if lines == 1 else f"{lines} lines"
    if engine == "auto":
        return f"kvwatch: no known engine recognised the {count} of {name} (tried: {', '.join(names())})"
    return f"kvwatch: no line of {name} was recognised as {engine} output ({count})"


class TerminatedError(BaseException):
    """SIGTERM during a replay (a BaseException, as KeyboardInterrupt: no `except Exception` keeps it)."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise TerminatedError


@contextlib.contextmanager
def _sigterm_ends_it() -> Iterator[None]:
    """SIGTERM raises TerminatedError meanwhile, as Ctrl-C raises KeyboardInterrupt: the replay's children
    are stopped on the way out (by default the process would end at once and leave them running)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
