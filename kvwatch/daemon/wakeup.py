"""Waking the main thread from a signal or another thread, with no lock taken in a signal handler.

A Python signal handler runs on the main thread between two of its bytecodes. A handler that sets a
`threading.Event` takes the Event's lock, so it hangs for good when the code it interrupted holds that
lock: the main loop inside its own `wait()` or `clear()`, or a first handler inside `set()` when a
second signal arrives (SIGINT from a terminal's Ctrl-C and SIGTERM from `kvwatch demo` or timeout(1),
each sent to the whole process group). The daemon's handlers only set attributes; the C-level handler
writes a byte to a socket (`signal.set_wakeup_fd`) that `Wakeup.wait()` selects on, so the main thread
still wakes at once, and other threads wake it through the same socket.
"""

from __future__ import annotations

import contextlib
import select
import signal
import socket


class Wakeup:
    """A socket the main thread sleeps on: signals and `poke()` from other threads end the sleep."""

    def __init__(self) -> None:
        self._read, self._write = socket.socketpair()
        self._read.setblocking(False)
        self._write.setblocking(False)
        self._previous: int | None = None

    def install(self) -> None:
        """From now on every signal with a Python handler wakes `wait()` (main thread only)."""
        self._previous = signal.set_wakeup_fd(self._write.fileno(), warn_on_full_buffer=False)

    def poke(self) -> None:
        """Wake `wait()` (from any thread)."""
        # (BlockingIOError is an OSError: a full buffer wakes it already; a closed one has no sleeper)
        with contextlib.suppress(OSError):
            self._write.send(b"\0")

    def wait(self, timeout: float) -> None:
        """Sleep until a signal, a poke or `timeout` seconds."""
        select.select([self._read], [], [], timeout)
        with contextlib.suppress(BlockingIOError):
            while self._read.recv(4096):
                pass

    def close(self) -> None:
        """Give the wakeup fd back (to what it was before `install`) and close the socket."""
        if self._previous is not None:
            signal.set_wakeup_fd(self._previous)
            self._previous = None
        self._read.close()
        self._write.close()
