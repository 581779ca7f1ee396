"""sd_notify: datagrams reach a real AF_UNIX receiver, from the class and from the running daemon."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from pathlib import Path

import pytest
from daemon_helpers import Kvwatch, file_source, wait_until, write_config

from kvwatch.daemon.sdnotify import SystemdNotifier


def receiver(address: str) -> socket.socket:
    """A bound datagram socket (`@name`: abstract)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + address[1:] if address.startswith("@") else address)
    sock.settimeout(5.0)
    return sock


def test_notify_reaches_a_path_socket(tmp_path: Path) -> None:
    """READY=1 and STATUS arrive as one datagram at a filesystem socket."""
    path = str(tmp_path / "notify.sock")
    with receiver(path) as sock:
        notifier = SystemdNotifier({"NOTIFY_SOCKET": path})
        assert notifier.notify("READY=1", "STATUS=reading 2 sources")
        assert b"READY=1\nSTATUS=reading 2 sources" == sock.recv(4096)
        notifier.close()


def test_notify_reaches_an_abstract_socket() -> None:
    """An `@name` address is an abstract socket."""
    address = f"@kvwatch-test-{os.getpid()}"
    with receiver(address) as sock:
        assert SystemdNotifier({"NOTIFY_SOCKET": address}).notify("WATCHDOG=1")
        assert b"WATCHDOG=1" == sock.recv(4096)


def test_without_a_socket_nothing_is_sent_and_the_watchdog_is_off() -> None:
    """No $NOTIFY_SOCKET: notify is a no-op; no $WATCHDOG_USEC: no interval."""
    notifier = SystemdNotifier({})
    assert (False, None) == (notifier.notify("READY=1"), notifier.watchdog_interval())


def test_watchdog_interval_is_half_the_timeout_and_only_for_this_pid() -> None:
    """WATCHDOG_USEC=4000000 pings every 2 s; a WATCHDOG_PID of another process turns it off."""
    mine = SystemdNotifier({"WATCHDOG_USEC": "4000000", "WATCHDOG_PID": str(os.getpid())})
    other = SystemdNotifier({"WATCHDOG_USEC": "4000000", "WATCHDOG_PID": "1"})
    assert (2.0, None) == (mine.watchdog_interval(), other.watchdog_interval())


@pytest.mark.slow
def test_the_daemon_notifies_ready_watchdog_status_reloading_and_stopping(tmp_path: Path) -> None:
    """The daemon sends READY=1, WATCHDOG=1 pings, STATUS=, RELOADING=1 on SIGHUP and STOPPING=1."""
    path = str(tmp_path / "notify.sock")
    (tmp_path / "a.log").write_text("a line\n")
    cfg = write_config(tmp_path / "kv.toml", file_source("a", tmp_path / "a.log"))
    got: list[str] = []
    with receiver(path) as sock:
        env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1000000"}
        kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv.err", env=env)

        def seen(field: str) -> bool:
            with contextlib.suppress(TimeoutError):
                got.extend(sock.recv(4096).decode().split("\n"))
            return any(line.startswith(field) for line in got)

        wait_until(lambda: seen("READY=1"), what="READY=1")
        wait_until(lambda: seen("WATCHDOG=1"), what="WATCHDOG=1")
        assert any(line.startswith("STATUS=1/1 sources up") for line in got)
        kv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: seen("RELOADING=1"), what="RELOADING=1")
        assert 0 == kv.stop()
        wait_until(lambda: seen("STOPPING=1"), what="STOPPING=1")
