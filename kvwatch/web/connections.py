"""The HTTP server's connections: one selector thread reads them all, a bounded pool of workers answers.

A connection costs no thread until its request has arrived whole: the selector thread accepts, runs
each TLS handshake step by step (non-blocking, so a client that sends half a ClientHello stalls only
itself) and buffers the request line, headers and body; then one of WORKERS threads answers it and
hands a kept-alive connection back. Deadlines: HANDSHAKE_TIMEOUT for the TLS handshake, READ_TIMEOUT
for a whole request (from the accept, the handshake, or its first byte on a kept-alive connection),
IDLE_TIMEOUT between requests, WRITE_TIMEOUT for a response. At most MAX_CONNECTIONS are open: a new
one beyond them closes the one that has waited longest without a whole request, so that a flood of
idle connections delays a scrape by nothing, where refusing the newcomer or leaving it in the listen
backlog would keep the scrape out for as long as the flood lasts.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import queue
import re
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 256
WORKERS = 16
HANDSHAKE_TIMEOUT = 5.0
READ_TIMEOUT = 5.0
IDLE_TIMEOUT = 60.0
WRITE_TIMEOUT = 10.0
#: The request line and headers together, and a body (which no endpoint reads), at most.
MAX_HEAD = 32 << 10
MAX_BODY = 32 << 10
BACKLOG = 1024
_ACCEPTS_PER_EVENT = 64
_CHECK_EVERY = 0.1
_LENGTH = re.compile(rb"\r\ncontent-length[ \t]*:[ \t]*(\d+)[ \t]*\r\n", re.IGNORECASE)
_CHUNKED = re.compile(rb"\r\ntransfer-encoding[ \t]*:", re.IGNORECASE)
_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: 28\r\nConnection: close\r\n\r\nrequest headers over 32 KiB\n"
)

#: (request bytes, the socket, the peer's address) -> whether to keep the connection open. The socket is
#: the worker's alone meanwhile, non-blocking: `send_all` writes to it with a deadline.
Answer = Callable[[bytes, socket.socket, tuple[Any, ...]], bool]


@dataclass(eq=False)
class Connection:
    """One accepted connection and where it stands."""

    sock: socket.socket
    peer: tuple[Any, ...]
    deadline: float
    handshaking: bool
    idle: bool = False  # kept alive after a response, no byte of the next request yet
    buffer: bytearray = field(default_factory=bytearray)
    request: bytes = b""  # the whole request a worker answers
    last: bool = False  # the request's body is not read: close after answering it
    ended: bool = False  # the client sent all it will (shut its side down)


def bind(address: str, port: int) -> socket.socket:
    """A listening socket; address "" is every interface, IPv6 and IPv4 where the host has IPv6
    (as Go's net.Listen(":PORT")), else IPv4's; "::" is IPv6's and IPv4's too (as Go's)."""
    if address in ("", "::") and socket.has_dualstack_ipv6():
        try:
            return socket.create_server(
                ("::", port), family=socket.AF_INET6, backlog=BACKLOG, dualstack_ipv6=True
            )
        except OSError as exc:  # (IPv6 disabled on the host: IPv4 alone; a taken port is an error)
            if address == "::" or exc.errno == errno.EADDRINUSE:
                raise
    if address == "":
        return socket.create_server(("0.0.0.0", port), backlog=BACKLOG)
    family = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)[0][0]
    return socket.create_server((address, port), family=family, backlog=BACKLOG)


class Server:
    """Serves `listeners` until `stop()`; `answer` runs on a worker thread for each whole request."""

    def __init__(
        self,
        listeners: Sequence[socket.socket],
        answer: Answer,
        context: ssl.SSLContext | None = None,
        clock: Callable[[], float] = time.monotonic,
        urgent: Callable[[bytes], bool] = lambda head: False,
    ) -> None:
        """Take the bound sockets; nothing runs before `start()`. `urgent(head)`: whether a request goes
        ahead of those waiting for a worker (a client whose password is verified already)."""
        self.listeners, self.answer, self.context, self.clock = list(listeners), answer, context, clock
        self.urgent = urgent
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._waiting: dict[Connection, None] = {}  # not with a worker, longest waiting first
        self._busy = 0
        # (lane, order, connection): lane 0 before lane 1, arrival order within a lane; a flood of
        # unverified passwords, each waiting for the one hash check, never queues a verified scrape.
        self._jobs: queue.PriorityQueue[tuple[int, int, Connection | None]] = queue.PriorityQueue()
        self._order = itertools.count()
        self._back: queue.Queue[tuple[Connection, bool]] = queue.Queue()
        self._stopping = False
        self._threads = [threading.Thread(target=self._serve, name="kvwatch-http", daemon=True)]
        self._threads += [
            threading.Thread(target=self._work, name=f"kvwatch-http-{i}", daemon=True) for i in range(WORKERS)
        ]

    @property
    def open_connections(self) -> int:
        """Connections open now (read by tests and the bench)."""
        return len(self._waiting) + self._busy

    @property
    def in_work(self) -> int:
        """Connections a worker holds now (the others wait for one)."""
        return self._busy

    def start(self) -> None:
        """Serve in the background."""
        for listener in self.listeners:
            listener.setblocking(False)
            self._selector.register(listener, selectors.EVENT_READ, "listen")
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)  # a full pipe wakes the loop already
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Stop accepting, close every connection and the listening sockets."""
        self._stopping = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        for _ in range(WORKERS):
            self._jobs.put((2, next(self._order), None))
        if self._threads[0].is_alive():
            self._threads[0].join(5.0)
        else:
            self._close_all()

    def _serve(self) -> None:
        """The selector loop: accept, handshake, read; expire what overran its deadline."""
        checked = self.clock()
        try:
            while not self._stopping:
                for key, _ in self._selector.select(_CHECK_EVERY):
                    if key.data == "listen":
                        self._accept(key.fileobj)  # type: ignore[arg-type]
                    elif key.data == "wake":
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(4096)
                    else:
                        self._progress(key.data)
                self._take_back()
                now = self.clock()
                if now - checked >= _CHECK_EVERY:
                    checked = now
                    for conn in [c for c in self._waiting if c.deadline <= now]:
                        self._close(conn)
        finally:
            self._close_all()

    def _accept(self, listener: socket.socket) -> None:
        """Accept what is pending (a bounded number per event, so reading goes on under a flood)."""
        for _ in range(_ACCEPTS_PER_EVENT):
            try:
                sock, peer = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. EMFILE: the pending ones wait in the backlog
                log.warning("cannot accept a connection: %s", exc)
                return
            if self.open_connections >= MAX_CONNECTIONS:
                if not self._waiting:
                    sock.close()
                    continue
                self._close(next(iter(self._waiting)))
            sock.setblocking(False)
            now = self.clock()
            if self.context is not None:
                try:
                    tls = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
                except (OSError, ssl.SSLError):
                    sock.close()
                    continue
                conn = Connection(tls, peer, now + HANDSHAKE_TIMEOUT, handshaking=True)
            else:
                conn = Connection(sock, peer, now + READ_TIMEOUT, handshaking=False)
            self._waiting[conn] = None
            self._selector.register(conn.sock, selectors.EVENT_READ, conn)
            self._progress(conn)

    def _progress(self, conn: Connection) -> None:
        """Move `conn` on as far as its bytes allow: handshake, read, hand a whole request to a worker."""
        if conn.handshaking and not self._handshake(conn):
            return
        while True:
            try:
                data = conn.sock.recv(16384)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
                break
            except ssl.SSLWantWriteError:
                self._selector.modify(conn.sock, selectors.EVENT_WRITE, conn)
                return
            except (OSError, ssl.SSLError):
                self._close(conn)
                return
            if not data:  # (a whole request before the end is answered still: `printf ... | nc`)
                conn.ended = True
                self._dispatch(conn)
                if conn in self._waiting:
                    self._close(conn)
                return
            if conn.idle:
                conn.idle, conn.deadline = False, self.clock() + READ_TIMEOUT
            conn.buffer += data
            if len(conn.buffer) > MAX_HEAD + MAX_BODY:
                break
        self._selector.modify(conn.sock, selectors.EVENT_READ, conn)
        self._dispatch(conn)

    def _handshake(self, conn: Connection) -> bool:
        """One step of the TLS handshake; True once it is done."""
        assert isinstance(conn.sock, ssl.SSLSocket)
        try:
            conn.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._selector.modify(conn.sock, selectors.EVENT_READ, conn)
            return False
        except ssl.SSLWantWriteError:
            self._selector.modify(conn.sock, selectors.EVENT_WRITE, conn)
            return False
        except (OSError, ssl.SSLError):  # not TLS, a refused client certificate, a reset
            self._close(conn)
            return False
        conn.handshaking, conn.deadline = False, self.clock() + READ_TIMEOUT
        return True

    def _dispatch(self, conn: Connection) -> None:
        """Hand the first whole request in `conn.buffer` to a worker; answer 431 to a head over MAX_HEAD."""
        buffer = conn.buffer
        end = buffer.find(b"\r\n\r\n")
        if end < 0 or end > MAX_HEAD:
            if end > MAX_HEAD or len(buffer) > MAX_HEAD:
                with contextlib.suppress(OSError, ssl.SSLError):
                    conn.sock.send(_TOO_LARGE)
                self._close(conn)
            return
        head = bytes(buffer[: end + 2])
        size, keep = end + 4, True
        if _CHUNKED.search(head):
            keep = False  # a body in chunks is never read: the connection ends after the answer
        else:
            length = _LENGTH.search(head)
            body = int(length.group(1)) if length else 0
            if body > MAX_BODY:
                keep = False
            elif len(buffer) < size + body:
                return
            else:
                size += body
        conn.request, conn.last = bytes(buffer[:size]), not keep or conn.ended
        del buffer[:size]
        self._selector.unregister(conn.sock)
        del self._waiting[conn]
        self._busy += 1
        self._jobs.put((0 if self.urgent(head) else 1, next(self._order), conn))

    def _work(self) -> None:
        """A worker: answer requests until stop()."""
        while True:
            _, _, conn = self._jobs.get()
            if conn is None:
                return
            keep = False
            try:
                keep = self.answer(conn.request, conn.sock, conn.peer) and not conn.last
                conn.sock.setblocking(False)
            except Exception:  # a client gone mid-answer, or a bug: the others are served on
                log.debug("answering %s failed", conn.peer, exc_info=True)
                keep = False
            conn.request = b""
            if self._stopping:
                _close_socket(conn.sock)
                continue
            self._back.put((conn, keep))
            with contextlib.suppress(OSError):
                self._wake_w.send(b"x")

    def _take_back(self) -> None:
        """Connections the workers are done with: wait for their next request, or close."""
        while True:
            try:
                conn, keep = self._back.get_nowait()
            except queue.Empty:
                return
            self._busy -= 1
            if not keep or self._stopping:
                _close_socket(conn.sock)
                continue
            conn.idle, conn.deadline = (
                not conn.buffer,
                self.clock() + (READ_TIMEOUT if conn.buffer else IDLE_TIMEOUT),
            )
            self._waiting[conn] = None
            self._selector.register(conn.sock, selectors.EVENT_READ, conn)
            self._progress(conn)

    def _close(self, conn: Connection) -> None:
        """Close a connection the selector thread holds."""
        self._waiting.pop(conn, None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        _close_socket(conn.sock)

    def _close_all(self) -> None:
        """Close every waiting connection, the listeners and the selector."""
        for conn in list(self._waiting):
            self._close(conn)
        for listener in self.listeners:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(listener)
            listener.close()
        self._selector.close()
        self._wake_r.close()


def _close_socket(sock: socket.socket) -> None:
    """Close without raising."""
    with contextlib.suppress(OSError):
        sock.close()


def send_all(sock: socket.socket, data: bytes, timeout: float = WRITE_TIMEOUT) -> None:
    """Write all of `data` within `timeout` seconds in all (a client reading slowly cannot hold a
    worker longer); TimeoutError or OSError otherwise."""
    deadline = time.monotonic() + timeout
    view = memoryview(data)
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the client did not read the response in time")
        sock.settimeout(left)
        sent = sock.send(view)
        view = view[sent:]
