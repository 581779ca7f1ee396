"""SGLang's start and death, as 0.5.23's `srt/entrypoints/http_server.py`, `srt/entrypoints/engine.py`
and `srt/managers/scheduler.py` log them.

Ready: `The server is fired up and ready to roll!` (after the warmup request). Failed: `Scheduler hit an
exception: <traceback>` (the scheduler process; the traceback's lines follow the record, unprefixed, and
its last exception line is the cause), `Received sigquit from a child process. It usually means the
child failed.` (the launcher, during startup), `SIGQUIT received. ... It usually means one child
failed.` (after), `Rank N scheduler died during initialization`.
"""

from __future__ import annotations

from kvwatch.parsers.lifecycle import Lifecycle

READY = ("The server is fired up and ready to roll",)
FAILED = (
    "Scheduler hit an exception",
    "crashed with exit code",
    "Received sigquit from a child process",
    "It usually means one child failed",
    "scheduler died during initialization",
)
#: A shutdown it was told to do: the SIGQUIT its children's exit then triggers is no failure (a real
#: 0.5.23 log: `SIGTERM received. ... Draining requests and shutting down...`, then `Subprocess
#: scheduler_0 (pid=N) crashed with exit code -15. Triggering SIGQUIT for cleanup...`, `SIGQUIT received`).
STOPPING = ("SIGTERM received", "shutting down")
#: Substrings of every line read here (the parser's markers add them).
MARKERS = (
    "fired up and ready", "Scheduler hit an exception", "sigquit", "SIGQUIT", "scheduler died",
    "crashed with exit code", "SIGTERM received", "shutting down",
    "Error", "Exception",
)  # fmt: skip


def lifecycle(source: str) -> Lifecycle:
    """An SGLang server run's lifecycle."""
    return Lifecycle(source, "SGLang", READY, FAILED, stopping=STOPPING)
