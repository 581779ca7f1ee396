"""systemd's notify protocol in the process, without a dependency: one datagram per message.

`$NOTIFY_SOCKET` names an AF_UNIX datagram socket, a path or an abstract name written `@name`.
Without it every call is a no-op, so the daemon runs the same under systemd and anywhere else.
`$WATCHDOG_USEC` (and `$WATCHDOG_PID`, when it names another process) sets the watchdog period.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger(__name__)


class SystemdNotifier:
    """Sends `READY=1`, `WATCHDOG=1`, `STATUS=...` and the like to systemd, if it listens."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        """Read `$NOTIFY_SOCKET` and `$WATCHDOG_USEC` from `env` (default: the process's)."""
        env = os.environ if env is None else env
        address = env.get("NOTIFY_SOCKET", "")
        # An abstract socket's name starts with a NUL byte; systemd writes it as '@'.
        self.address = "\0" + address[1:] if address.startswith("@") else address
        self.watchdog_usec = _watchdog_usec(env)
        self._sock: socket.socket | None = None
        self._failed = False

    @property
    def enabled(self) -> bool:
        """Whether there is a socket to notify."""
        return bool(self.address)

    def watchdog_interval(self) -> float | None:
        """Seconds between `WATCHDOG=1` pings (half the watchdog timeout), None without a watchdog."""
        return self.watchdog_usec / 2e6 if self.watchdog_usec else None

    def notify(self, *fields: str) -> bool:
        """Send `fields` (e.g. "READY=1", "STATUS=...") as one datagram; True if sent."""
        if not self.address:
            return False
        message = "\n".join(f.replace("\n", " ") for f in fields).encode("utf-8", "replace")
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._sock.sendto(message, self.address)
        except OSError as exc:
            if not self._failed:  # once: a missing socket must not flood the log
                log.warning("cannot notify systemd at %s: %s", self.address.replace("\0", "@"), exc)
            self._failed = True
            return False
        self._failed = False
        return True

    def close(self) -> None:
        """Close the socket."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _watchdog_usec(env: Mapping[str, str]) -> int:
    """`$WATCHDOG_USEC` when it is meant for this process, else 0."""
    pid = env.get("WATCHDOG_PID", "")
    if pid.isdigit() and int(pid) != os.getpid():
        return 0
    usec = env.get("WATCHDOG_USEC", "")
    return int(usec) if usec.isdigit() else 0
