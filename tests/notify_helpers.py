"""Test helpers for kvwatch.notify: a scripted HTTP receiver on 127.0.0.1, a fake clock, polling."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kvwatch.model import Alert

SECRET_PATH = "/services/T0000/B0000/SECRETTOKEN42"


def wait_until(predicate: Callable[[], object], timeout: float = 5.0) -> None:
    """Poll `predicate` until it is true; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        threading.Event().wait(0.005)


def make_alert(name: str = "pinned_cache_length", at: float = 1767225600.0, **kw: Any) -> Alert:
    """An alert with plausible defaults; keyword arguments override fields."""
    fields: dict[str, Any] = {
        "alert": name,
        "labels": {"source": "llama-a"},
        "severity": "warning",
        "state": "firing",
        "at": at,
        "summary": "cached length pinned at 17920 tokens",
        "cause": "a per-request header changes after the tool definitions",
        "fix": "strip the header at the gateway",
        "evidence": {"cached_tokens": 17920, "share": 0.9},
    }
    fields.update(kw)
    return Alert(**fields)


class FakeTime:
    """A clock that only moves when `sleep` is called; `sleeps` records every wait asked for."""

    def __init__(self, now: float = 1000.0) -> None:
        """Start at `now`."""
        self.now = now
        self.sleeps: list[float] = []

    def time(self) -> float:
        """The fake now."""
        return self.now

    def sleep(self, seconds: float) -> None:
        """Record the wait and advance the clock instead of waiting."""
        self.sleeps.append(round(seconds, 6))
        self.now += seconds


@dataclass
class Reply:
    """One scripted answer; `hang` holds the request that long (or until the receiver closes) and never
    answers; `delay` holds it that long (or until `release`) and then answers."""

    status: int = 200
    body: str = "ok"
    headers: dict[str, str] = field(default_factory=dict)
    hang: float = 0.0
    delay: float = 0.0


@dataclass
class Seen:
    """One request as received, with the status it was answered ("hang" if the client left)."""

    path: str
    headers: dict[str, str]
    body: Any
    status: int | str


class Receiver:
    """A real HTTP server on 127.0.0.1 answering POSTs from a script, then `200 ok`; with `serves`, a POST
    to any other path is answered `404 page not found` (a wrong URL), outside the script."""

    def __init__(self, replies: Iterable[Reply] = (), serves: str | None = None) -> None:
        """Start serving on a free port."""
        self.serves = serves
        self.script = deque(replies)
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        serve = self.server.serve_forever
        self.thread = threading.Thread(target=serve, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        """`http://127.0.0.1:PORT`."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def url(self) -> str:
        """A Slack-like secret webhook URL on this receiver."""
        return self.base + SECRET_PATH

    def accepted(self) -> list[Any]:
        """Bodies of the requests answered 2xx, in arrival order."""
        with self.lock:
            return [s.body for s in self.seen if isinstance(s.status, int) and s.status < 300]

    def count(self) -> int:
        """How many requests arrived."""
        with self.lock:
            return len(self.seen)

    def close(self) -> None:
        """Release hung requests and stop serving."""
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Receiver:
        """Context manager: the receiver itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close on exit."""
        self.close()

    def next_reply(self, path: str) -> Reply:
        """The reply to a POST to `path`: 404 off the served path, else the next scripted reply, or
        `200 ok` once the script is used up."""
        if self.serves is not None and path != self.serves:
            return Reply(404, "404 page not found")
        with self.lock:
            return self.script.popleft() if self.script else Reply()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        """A handler class bound to this receiver."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                reply = receiver.next_reply(self.path)
                seen = Seen(self.path, dict(self.headers), json.loads(raw), reply.status)
                with receiver.lock:
                    receiver.seen.append(seen)
                if reply.hang:
                    seen.status = "hang"
                    receiver.release.wait(reply.hang)
                    return
                if reply.delay:
                    receiver.release.wait(reply.delay)
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(reply.body.encode())))
                self.end_headers()
                self.wfile.write(reply.body.encode())

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
