"""The HTTP side: `/metrics` (Prometheus text or OpenMetrics by `Accept`), `/` and `/healthz`.

A scrape, and the landing page (kvwatch.web.landing), take the pipeline's lock, so they never see a
half-applied batch (and never iterate a dict the pipeline thread is changing); they give up with 503
after SCRAPE_WAIT seconds rather than hang on a stuck pipeline. `/healthz` never takes the lock.
With a web config, every path needs basic auth and the socket speaks TLS.
"""

from __future__ import annotations

import gzip
import ipaddress
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from kvwatch.web.auth import BasicAuth, count_failures
from kvwatch.web.config import WebConfig

log = logging.getLogger(__name__)

SCRAPE_WAIT = 10.0


class Exporter:
    """Serves the registry and the daemon's pages from a thread per request."""

    def __init__(
        self,
        address: str,
        port: int,
        registry: CollectorRegistry,
        *,
        lock: threading.Lock,
        page: Callable[[], str],
        health: Callable[[], tuple[bool, str]],
        web: WebConfig | None = None,
    ) -> None:
        """Bind now (so a busy port fails the start); `start()` serves."""
        handler = type("Handler", (_Handler,), {"exporter": self})
        self.registry, self.lock, self.page, self.health, self.web = registry, lock, page, health, web
        self.auth = BasicAuth(web.users if web else {}, count_failures(registry))
        self.extra_headers = dict(web.headers) if web else {}
        self.server = _Server((address, port), handler)
        context = web.ssl_context() if web is not None else None
        if context is not None:
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.scheme = "https" if context is not None else "http"
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, name="kvwatch-http", daemon=True
        )

    @property
    def url(self) -> str:
        """Where it listens, e.g. `http://127.0.0.1:7433/`."""
        host, port = str(self.server.server_address[0]), self.server.server_address[1]
        host = f"[{host}]" if ":" in host else host
        return f"{self.scheme}://{host}:{port}/"

    def start(self) -> None:
        """Serve in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.server.shutdown()
        self.server.server_close()


class _Server(ThreadingHTTPServer):
    """A thread per connection."""

    daemon_threads = True
    # socketserver's listen backlog is 5: a burst of connections (64 clients at once) overflows
    # it, and each dropped SYN costs its client, a scraper too, a 1 s retransmission.
    request_queue_size = 128


class _Handler(BaseHTTPRequestHandler):
    """Routes GET requests."""

    exporter: Exporter
    server_version = "kvwatch"

    def do_GET(self) -> None:
        """Answer /metrics, / or /healthz."""
        ex = self.exporter
        if not self._authorized():
            return
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._metrics()
        elif path == "/healthz":
            ok, text = ex.health()
            self._send(200 if ok else 503, "text/plain; charset=utf-8", (text + "\n").encode())
        elif path == "/":
            self._page()
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
            address,
        )
