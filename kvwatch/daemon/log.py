"""The daemon's logging: stderr, journald-friendly, rate-limited.

Under systemd (`$JOURNAL_STREAM` set) each line starts with a `<N>` syslog priority, which journald
turns into the entry's priority, and carries no timestamp (journald adds its own). Elsewhere lines
carry an ISO time and the level name. A message template logged more than BURST times in PERIOD
seconds is held back; the next one let through says how many were suppressed.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable

#: syslog priorities of the logging levels.
_PRIORITY = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3, logging.CRITICAL: 2}
BURST = 10
PERIOD = 60.0


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


#: `--log.level`'s names, the exporter toolkit's, and their logging levels.
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}
#: `--log.format`'s names.
FORMATS = ("logfmt", "json")


def setup_logging(level: str = "info", fmt: str | None = None, env: dict[str, str] | None = None) -> None:
    """Send kvwatch's logs at `level` (a LEVELS name) and above to stderr in the right shape (`fmt`, one
    of FORMATS, or None: the journal's under systemd, else a plain line); replaces earlier handlers."""
    env = dict(os.environ) if env is None else env
    handler = logging.StreamHandler(sys.stderr)
    if env.get("JOURNAL_STREAM"):
        handler.setFormatter(JournalFormatter("%(name)s: %(message)s"))
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RateLimit())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(LEVELS[level])
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # it logs every job run at INFO
