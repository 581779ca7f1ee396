"""The daemon's logging: stderr, at a level (debug, info, warn, error), in one of three formats.

`logfmt` and `json` are the Prometheus exporters' formats (go-kit/log): `ts=… level=info caller=…
msg="…" key=value`, or one JSON object per line with the same keys. Without a format, stderr gets the
journal's shape when it is the journal's stream (`$JOURNAL_STREAM` names its device:inode,
systemd.exec(5)): each line starts with a `<N>` syslog priority, which journald turns into the entry's
priority, and carries no timestamp (journald adds its own); elsewhere lines carry an ISO time and the
level name. A message template logged more than BURST times in PERIOD seconds is held back; the next
one let through says how many were suppressed.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping

#: syslog priorities of the logging levels.
_PRIORITY = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3, logging.CRITICAL: 2}
BURST = 10
PERIOD = 60.0
#: The levels as the flags and the config name them (the Prometheus exporters' names).
LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}
FORMATS = ("logfmt", "json")
#: A LogRecord's own attributes: any other one came in through `extra=` and is logged as key=value.
_RECORD_KEYS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
_LEVEL_NAMES = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error"}


class JournalFormatter(logging.Formatter):
    """`<N>logger: message`."""

    def format(self, record: logging.LogRecord) -> str:
        """Prefix the priority; keep a traceback on the same entry."""
        text = super().format(record).replace("\n", "\n  ")
        return f"<{_PRIORITY.get(record.levelno, 6)}>{text}"


class RateLimit(logging.Filter):
    """At most `burst` records per message template per `period` seconds."""

    def __init__(
        self, burst: int = BURST, period: float = PERIOD, clock: Callable[[], float] = time.monotonic
    ):
        """Count per (logger, template) in windows of `period` seconds."""
        super().__init__()
        self.burst, self.period, self.clock = burst, period, clock
        self._windows: dict[tuple[str, str], list[float]] = {}  # key -> [start, passed, suppressed]

    def filter(self, record: logging.LogRecord) -> bool:
        """Let the record through unless its template is over the limit."""
        now = self.clock()
        key = (record.name, str(record.msg))
        window = self._windows.get(key)
        if window is None or now - window[0] >= self.period:
            suppressed = int(window[2]) if window else 0
            self._windows[key] = [now, 1.0, 0.0]
            if len(self._windows) > 10_000:  # forget old templates rather than grow without end
                self._windows = {key: self._windows[key]}
            if suppressed:
                record.msg = f"{record.msg} ({suppressed} similar messages suppressed)"
            return True
        window[1] += 1
        if window[1] <= self.burst:
            return True
        window[2] += 1
        return False


def _fields(record: logging.LogRecord) -> dict[str, object]:
    """ts, level, caller, msg, then the record's `extra=` keys and its traceback as `err`."""
    when = dt.datetime.fromtimestamp(record.created, dt.timezone.utc)
    fields: dict[str, object] = {
        "ts": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "level": _LEVEL_NAMES.get(record.levelno, "error"),
        "caller": f"{record.filename}:{record.lineno}",
        "msg": record.getMessage(),
    }
    fields.update((k, v) for k, v in vars(record).items() if k not in _RECORD_KEYS and k not in fields)
    if record.exc_info:
        fields["err"] = logging.Formatter().formatException(record.exc_info)
    return fields


def _logfmt_value(value: object) -> str:
    """A logfmt value: bare when it has no space, quote, `=` or control character; else quoted."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if text and all(c > " " and c not in '"=\\' for c in text):
        return text
    return json.dumps(text, ensure_ascii=False)


class LogfmtFormatter(logging.Formatter):
    """`ts=2026-01-31T18:00:00.000Z level=info caller=daemon.py:120 msg="…" key=value`."""

    def format(self, record: logging.LogRecord) -> str:
        """One line, every value escaped (a traceback's newlines too)."""
        return " ".join(f"{k}={_logfmt_value(v)}" for k, v in _fields(record).items())


class JsonFormatter(logging.Formatter):
    """One JSON object per line with logfmt's keys."""

    def format(self, record: logging.LogRecord) -> str:
        """The fields as compact JSON."""
        return json.dumps(_fields(record), default=str, ensure_ascii=False, separators=(",", ":"))


def stderr_is_journal(env: Mapping[str, str], fd: int = 2) -> bool:
    """Whether `fd` is the stream `$JOURNAL_STREAM` names (`DEVICE:INODE`): set by systemd for a service
    whose stderr is the journal, and inherited by whatever it starts with stderr elsewhere."""
    device, _, inode = env.get("JOURNAL_STREAM", "").partition(":")
    try:
        st = os.fstat(fd)
        return (st.st_dev, st.st_ino) == (int(device), int(inode))
    except (OSError, ValueError):
        return False


def formatter(fmt: str | None, env: Mapping[str, str], fd: int = 2) -> logging.Formatter:
    """The formatter for `fmt` (logfmt, json; None: the journal's shape on its stream, else plain)."""
    if fmt == "logfmt":
        return LogfmtFormatter()
    if fmt == "json":
        return JsonFormatter()
    if fmt is not None:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)} (got {fmt!r})")
    if stderr_is_journal(env, fd):
        return JournalFormatter("%(name)s: %(message)s")
    return logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")


def setup_logging(level: str = "info", fmt: str | None = None, env: Mapping[str, str] | None = None) -> None:
    """Send kvwatch's logs to stderr at `level` in `fmt` (see formatter); replaces earlier handlers.
    ValueError names an unknown level or format."""
    if level not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)} (got {level!r})")
    handler = logging.StreamHandler(sys.stderr)
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # (io.UnsupportedOperation: a captured stderr)
        fd = -1
    handler.setFormatter(formatter(fmt, os.environ if env is None else env, fd))
    handler.addFilter(RateLimit())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(LEVELS[level])
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # it logs every job run at INFO
    logging.getLogger("watchdog").setLevel(logging.WARNING)  # every inotify event at DEBUG
    logging.getLogger("urllib3").setLevel(logging.WARNING)  # its DEBUG lines show URL paths (secrets)
