"""Signals reach the daemon's (and the demo's) main loop without a lock taken in a signal handler.

A handler that set a threading.Event hung the daemon for good when a second signal arrived inside it
(Ctrl-C's SIGINT and the demo's SIGTERM, both sent to the process group): the second handler waited
for the Event's lock, which the first one, under it on the same thread, held.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType, SimpleNamespace
from typing import Any

import pytest
from daemon_helpers import Kvwatch, file_source, write_config

from kvwatch.daemon import Daemon
from kvwatch.daemon.wakeup import Wakeup
from kvwatch.demo import Demo


@pytest.fixture
def wakeup() -> Iterator[tuple[Wakeup, list[int]]]:
    """A Wakeup installed on this (the main) thread; SIGUSR1 with a handler, and what it saw."""
    seen: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: seen.append(signum))
    waker = Wakeup()
    waker.install()
    try:
        yield waker, seen
    finally:
        waker.close()
        signal.signal(signal.SIGUSR1, previous)


def later(action: Callable[[], object], delay: float = 0.2) -> threading.Thread:
    """Run `action` on another thread after `delay` seconds."""
    thread = threading.Timer(delay, action)
    thread.start()
    return thread


def test_a_signal_from_another_thread_wakes_the_sleeper_at_once(wakeup: tuple[Wakeup, list[int]]) -> None:
    """wait() ends when a signal arrives, long before its timeout, and the handler has run."""
    waker, seen = wakeup
    thread = later(lambda: os.kill(os.getpid(), signal.SIGUSR1))
    start = time.monotonic()
    waker.wait(30.0)
    woke = time.monotonic() - start
    thread.join()
    assert [signal.SIGUSR1] == seen
    assert 0.1 < woke < 10.0


def test_a_poke_from_another_thread_wakes_the_sleeper_at_once(wakeup: tuple[Wakeup, list[int]]) -> None:
    """poke() from any thread ends a wait(); the bytes are drained, so the next wait() sleeps."""
    waker, seen = wakeup
    thread = later(waker.poke)
    start = time.monotonic()
    waker.wait(30.0)
    woke = time.monotonic() - start
    thread.join()
    assert 0.1 < woke < 10.0 and [] == seen
    start = time.monotonic()
    waker.wait(0.3)
    assert time.monotonic() - start >= 0.25


def wakeup_fd() -> int:
    """The process's wakeup fd now (left as it is)."""
    fd = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(fd)
    return fd


def test_install_and_close_set_the_wakeup_fd_and_give_it_back() -> None:
    """install() points the process's wakeup fd at the socket; close() gives back the one before."""
    before = wakeup_fd()
    waker = Wakeup()
    waker.install()
    installed = wakeup_fd()
    waker.close()
    assert installed not in (before, -1) and wakeup_fd() == before
    waker.poke()  # (closed: nothing to wake, and no error)


def calls_made(handler: Callable[[], None]) -> list[str]:
    """What `handler()` calls: Python functions by file:name, C functions by name."""
    calls: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            calls.append(f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}")
        elif event == "c_call":
            calls.append(getattr(arg, "__qualname__", repr(arg)))

    sys.setprofile(profile)
    try:
        handler()
    finally:
        sys.setprofile(None)
    return calls


def test_the_signal_handlers_take_no_lock() -> None:
    """The daemon's and the demo's handlers set a flag and call nothing (so nothing that locks)."""
    daemon = SimpleNamespace(stopping=False, reloading=False)
    demo = SimpleNamespace(signalled=False)
    handlers = [
        lambda: Daemon.on_stop(daemon, signal.SIGTERM, None),  # type: ignore[arg-type]
        lambda: Daemon.on_reload(daemon, signal.SIGHUP, None),  # type: ignore[arg-type]
        lambda: Demo.on_signal(demo, signal.SIGINT, None),  # type: ignore[arg-type]
    ]
    names = ["daemon.py:on_stop", "daemon.py:on_reload", "demo.py:on_signal"]
    for handler, name in zip(handlers, names, strict=True):
        assert ["test_wakeup.py:<lambda>", name, "setprofile"] == calls_made(handler)
    assert daemon.stopping and daemon.reloading and demo.signalled


@pytest.mark.slow
def test_the_daemon_stops_on_sigint_and_sigterm_at_once(tmp_path: Path) -> None:
    """Ctrl-C in a terminal and a supervisor's SIGTERM together: a clean stop, the drain logged."""
    log = tmp_path / "a.log"
    log.write_text("")
    config = write_config(tmp_path / "kvwatch.toml", file_source("a", log))
    for _ in range(3):
        kv = Kvwatch(["--config", str(config)], tmp_path / "err.log")
        os.kill(kv.proc.pid, signal.SIGINT)
        os.kill(kv.proc.pid, signal.SIGTERM)
        assert 0 == kv.stop(signal.SIGTERM, timeout=20.0)
    assert 3 == (tmp_path / "err.log").read_text().count("stopping: draining")
