"""The HTTP side: `/metrics` (Prometheus text or OpenMetrics by `Accept`), `/`, `/report`, `/healthz`,
`/-/healthy` and `/-/ready`, for GET and HEAD.

A scrape, and the landing page (kvwatch.web.landing), take the pipeline's lock, so they never see a
half-applied batch (and never iterate a dict the pipeline thread is changing); they give up with 503
after SCRAPE_WAIT seconds rather than hang on a stuck pipeline. `/healthz`, `/-/healthy` and `/-/ready`
never take the lock. With a web config, every path needs basic auth and the sockets speak TLS.
Connections are read by kvwatch.web.connections: no idle or half-open connection can hold the others up.
"""

from __future__ import annotations

import gzip
import io
import ipaddress
import logging
import re
import socket
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any, cast

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from kvwatch.web.auth import BasicAuth, count_failures
from kvwatch.web.config import WebConfig
from kvwatch.web.connections import Server, bind, send_all

log = logging.getLogger(__name__)

SCRAPE_WAIT = 10.0
_AUTHORIZATION = re.compile(rb"(?im)^authorization:[ \t]*([^\r\n]*)")

Check = Callable[[], tuple[bool, str]]


class Exporter:
    """Serves the registry and the daemon's pages on one or more addresses."""

    def __init__(
        self,
        address: str,
        port: int,
        registry: CollectorRegistry,
        *,
        lock: threading.Lock,
        page: Callable[[], str],
        health: Check,
        ready: Check | None = None,
        web: WebConfig | None = None,
        more: Sequence[tuple[str, int]] = (),
        report: Callable[[], str] | None = None,
    ) -> None:
        """Bind now (so a busy port fails the start); `start()` serves. `address` "" is every interface;
        `more`: further (address, port) to listen on; `ready` defaults to `health`; `report`: the HTML
        `/report` downloads (None: no such path)."""
        self.registry, self.lock, self.page, self.health, self.web = registry, lock, page, health, web
        self.report = report
        self.ready = ready or health
        self.auth = BasicAuth(web.users if web else {}, count_failures(registry))
        self.extra_headers = dict(web.headers) if web else {}
        sockets: list[socket.socket] = []
        try:
            for host, number in ((address, port), *more):
                sockets.append(bind(host, number))
        except OSError:
            for sock in sockets:
                sock.close()
            raise
        context = web.ssl_context() if web is not None else None
        self.scheme = "https" if context is not None else "http"
        self.server = Server(sockets, self._answer, context, urgent=self._urgent)

    @property
    def urls(self) -> list[str]:
        """Where it listens, e.g. `http://127.0.0.1:7433/`, `http://[::]:7433/` for every interface."""
        urls = []
        for sock in self.server.listeners:
            host, port = str(sock.getsockname()[0]), sock.getsockname()[1]
            host = f"[{host}]" if ":" in host else host
            urls.append(f"{self.scheme}://{host}:{port}/")
        return urls

    @property
    def url(self) -> str:
        """The first of `urls`."""
        return self.urls[0]

    def start(self) -> None:
        """Serve in the background."""
        self.server.start()

    def stop(self) -> None:
        """Stop serving and close the sockets."""
        self.server.stop()

    def _urgent(self, head: bytes) -> bool:
        """Whether a request's credentials are verified already (read from its raw head, cheaply)."""
        found = _AUTHORIZATION.search(head)
        return self.auth.known(found.group(1).decode("latin-1") if found else None)

    def _answer(self, request: bytes, sock: socket.socket, peer: tuple[Any, ...]) -> bool:
        """Answer one whole request (on a worker thread); whether the connection stays open."""
        return not _Handler(request, sock, peer, self).close_connection


class _Handler(BaseHTTPRequestHandler):
    """Answers one request read whole already; routes GET and HEAD."""

    server_version = "kvwatch"
    protocol_version = "HTTP/1.1"

    def __init__(self, request: bytes, sock: socket.socket, peer: tuple[Any, ...], exporter: Exporter):
        """Answer `request` on `sock` at once."""
        self.raw, self.exporter = request, exporter
        super().__init__(sock, peer, cast(Any, exporter))

    def setup(self) -> None:
        """Read from the request's bytes; write into a buffer sent whole by finish()."""
        self.connection = self.request
        self.rfile, self.wfile = io.BytesIO(self.raw), io.BytesIO()

    def handle(self) -> None:
        """One request (the connection loop reads the next one)."""
        self.close_connection = True
        self.handle_one_request()

    def finish(self) -> None:
        """Send the response."""
        send_all(self.connection, self.wfile.getvalue())  # type: ignore[attr-defined]

    def do_HEAD(self) -> None:
        """As GET, without the body (_send leaves it out)."""
        self.do_GET()

    def do_GET(self) -> None:
        """Answer /metrics, /, /report, /healthz, /-/healthy or /-/ready."""
        ex = self.exporter
        if not self._authorized():
            return
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._metrics()
        elif path in ("/healthz", "/-/ready"):
            ok, text = ex.health() if path == "/healthz" else ex.ready()
            self._send(200 if ok else 503, "text/plain; charset=utf-8", (text + "\n").encode())
        elif path == "/-/healthy":
            self._send(200, "text/plain; charset=utf-8", b"ok\n")
        elif path == "/":
            self._page()
        elif path == "/report" and ex.report is not None:
            self._report(ex.report)
        else:
            self._send(404, "text/plain; charset=utf-8", b"Not found\n")

    def _authorized(self) -> bool:
        """Whether basic auth lets the request through; if not, the 401 (or 429 when busy) is sent."""
        verdict = self.exporter.auth.check(self.headers.get("Authorization"))
        if verdict == "throttled":
            text, extra = b"Too many password checks at once; retry later\n", {"Retry-After": "1"}
            self._send(429, "text/plain; charset=utf-8", text, extra)
        elif verdict != "ok":
            extra = {"WWW-Authenticate": 'Basic realm="kvwatch"'}
            self._send(401, "text/plain; charset=utf-8", b"Unauthorized\n", extra)
        return verdict == "ok"

    def _locked(self, make: Callable[[], bytes]) -> bytes | None:
        """`make()` under the pipeline's lock; None (503 sent) when the lock is not had in SCRAPE_WAIT."""
        ex = self.exporter
        if not ex.lock.acquire(timeout=SCRAPE_WAIT):
            self._send(503, "text/plain; charset=utf-8", b"pipeline busy or stuck\n")
            return None
        try:
            return make()
        finally:
            ex.lock.release()

    def _page(self) -> None:
        """The landing page, built from the pipeline's state under its lock."""
        body = self._locked(lambda: self.exporter.page().encode("utf-8"))
        if body is not None:
            self._send(200, "text/html; charset=utf-8", body)

    def _report(self, report: Callable[[], str]) -> None:
        """The forensic report of the daemon's windows, as a file to download."""
        body = self._locked(lambda: report().encode("utf-8"))
        if body is not None:
            extra = {"Content-Disposition": 'attachment; filename="kvwatch-report.html"'}
            self._send(200, "text/html; charset=utf-8", body, extra)

    def _metrics(self) -> None:
        """The exposition in the format the client accepts."""
        encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
        body = self._locked(lambda: encoder(self.exporter.registry))
        if body is None:
            return
        extra = {}
        if "gzip" in self.headers.get("Accept-Encoding", ""):
            body, extra = gzip.compress(body), {"Content-Encoding": "gzip"}
        self._send(200, content_type, body, extra)

    def _send(self, status: int, content_type: str, body: bytes, extra: dict[str, str] | None = None) -> None:
        """Write a complete response."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in {**self.exporter.extra_headers, **(extra or {})}.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged (a scrape every 15 s would flood the journal)."""


def warn_if_exposed(address: str, auth: bool) -> None:
    """Say loudly when the endpoints are reachable beyond loopback without basic auth."""
    try:
        loopback = ipaddress.ip_address(address).is_loopback
    except ValueError:
        loopback = address == "localhost"
    if not loopback and not auth:
        log.warning(
            "listening on %s beyond loopback WITHOUT authentication: anyone who can reach this "
            "port reads the metrics; set server.web_config with basic_auth_users (and TLS)",
            address or "every interface",
        )
