"""`kvwatch probe` and the daemon's [[probe]] against a real llama-server, directly and through a real proxy.

The proxy (http.server on 127.0.0.1) forwards to llama-server and, while `strip` is set, removes the
attribution header line as a fixed gateway would. Marked slow: it builds (once) and runs llama-server.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from daemon_helpers import Kvwatch, write_config
from llama_helpers import (
    BuildProgress,
    LlamaServer,
    capture,
    llama_server_binary,
    terminal_lines,
    tiny_models,
)
from notify_helpers import Receiver
from prometheus_helpers import query, start_prometheus, stop_prometheus, wait_for

from kvwatch import cli

pytestmark = pytest.mark.slow
#: Two slots of the tiny model's whole 4096-token context (llama-server caps a slot there).
CASE = capture.Case("probe-target", "the probe's endpoint", flags=("-c", "8192"))
PREFIX = "1024"  # tokens: small prefills keep the test quick on 2 cores
DEADLINE_S = 120.0


def strip_header(data: dict[str, Any]) -> dict[str, Any]:
    """The body without the attribution line (OpenAI: the system message's first line; Anthropic: a block)."""
    if isinstance(data.get("system"), list):
        data["system"] = [
            b for b in data["system"] if not str(b.get("text", "")).startswith("x-anthropic-billing-header:")
        ]
    for message in data.get("messages", []):
        content = message.get("content")
        if message.get("role") == "system" and isinstance(content, str):
            first, _, rest = content.partition("\n")
            if first.startswith("x-anthropic-billing-header:"):
                message["content"] = rest
    return data


class Proxy:
    """A gateway in front of llama-server: forwards every request; strips the header while `strip`."""

    def __init__(self, upstream: str, strip: bool) -> None:
        """Serve on a free port of 127.0.0.1."""
        self.upstream, self.strip = upstream, strip
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class of this proxy."""
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self, response: requests.Response) -> None:
                """Send the upstream response on as it came."""
                self.send_response(response.status_code)
                self.send_header("Content-Type", response.headers.get("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(response.content)))
                self.end_headers()
                self.wfile.write(response.content)

            def do_GET(self) -> None:
                self.answer(requests.get(proxy.upstream + self.path, timeout=60))

            def do_POST(self) -> None:
                data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if proxy.strip:
                    data = strip_header(data)
                self.answer(requests.post(proxy.upstream + self.path, json=data, timeout=300))

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[str]:
    """A real llama-server's base URL (tiny llama model, 2 slots)."""
    binary = llama_server_binary(BuildProgress(terminal_lines(pytestconfig)))
    where = tmp_path_factory.mktemp("llama")
    server = LlamaServer(binary, tiny_models(where / "models"), CASE, where / "llama-server.log")
    try:
        server.wait_ready()
        yield server.base
    finally:
        server.stop()


@contextlib.contextmanager
def proxy(upstream: str, strip: bool) -> Iterator[Proxy]:
    """A running Proxy."""
    made = Proxy(upstream, strip)
    try:
        yield made
    finally:
        made.close()


def probe(capsys: pytest.CaptureFixture[str], url: str, *more: str) -> tuple[int, dict[str, str]]:
    """`kvwatch probe URL --format json`: its exit status and each conversation's verdict."""
    capsys.readouterr()
    status = cli.main(["probe", url, "--prefix-tokens", PREFIX, "--format", "json", *more])
    report = json.loads(capsys.readouterr().out)
    assert report["exit_status"] == status
    return status, {c["name"]: c["verdict"] for c in report["conversations"]}


def test_chat_completions_plain_reused_header_breaks_it_a_stripping_proxy_fixes_it(
    llama: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """/v1/chat/completions: the header reaches the prompt (the seeds' incident); stripped, all is reused."""
    assert (0, {"plain": "reused"}) == probe(capsys, llama + "/v1", "--no-attribution-header")
    status, verdicts = probe(capsys, llama + "/v1/chat/completions")
    assert (1, "reused") == (status, verdicts["plain"])
    assert verdicts["header"] in ("partly reused", "not reused")
    with proxy(llama, strip=True) as gateway:
        assert (0, {"plain": "reused", "header": "reused"}) == probe(capsys, gateway.base + "/v1")
    with proxy(llama, strip=False) as gateway:
        status, verdicts = probe(capsys, gateway.base + "/v1", "--stream")
        assert (1, "reused") == (status, verdicts["plain"])


def test_messages_reused_and_llamacpp_normalises_the_header_itself(
    llama: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """/v1/messages: plain reused; llama.cpp rewrites the nonce (cch=fffff), so the header test is reused."""
    assert (0, {"plain": "reused", "header": "reused"}) == probe(capsys, llama + "/v1/messages")
    assert (0, {"plain": "reused", "header": "reused"}) == probe(capsys, llama + "/v1/messages", "--stream")
    with proxy(llama, strip=True) as gateway:
        assert (0, {"plain": "reused", "header": "reused"}) == probe(capsys, gateway.base + "/v1/messages")


def test_text_report_of_a_new_user_run(llama: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The text report: both conversations, their verdicts, the cause and the fix (the tiny model's context
    is 4096 tokens: a 3000-token prefix)."""
    status = cli.main(["probe", llama + "/v1", "--prefix-tokens", "3000"])
    out = capsys.readouterr().out
    assert 1 == status, out
    assert "verdict: reused" in out
    assert "verdict: partly reused" in out or "verdict: not reused" in out
    assert "Strip the x-anthropic-billing-header line" in out
    assert "result: " in out and "(exit status 1)" in out


def test_daemon_probe_fires_and_resolves_probe_prefix_miss(llama: str, tmp_path: Path) -> None:
    """Two header runs under 80% cached fire it (webhook, real Prometheus scrape); stripped: resolved."""
    with contextlib.ExitStack() as stack:
        gateway = stack.enter_context(proxy(llama, strip=False))
        hook = stack.enter_context(Receiver())
        config = write_config(
            tmp_path / "kv.toml",
            f'[[probe]]\nname = "gw"\nurl = "{gateway.base}/v1"\ninterval = 2\njitter = 0\n'
            f"prefix_tokens = {PREFIX}\n"
            f'[[notifier]]\nname = "hook"\ntype = "webhook"\nurl = "{hook.url}"\n'
            "[alerting]\nresolve_after = 0\n",
        )
        daemon = Kvwatch(["--config", str(config)], tmp_path / "kvwatch.err")
        stack.callback(daemon.kill)
        url, prom = start_prometheus(tmp_path, [daemon.url.removeprefix("http://")])
        stack.callback(stop_prometheus, prom)

        def states() -> list[tuple[str, str]]:
            return [(b.get("alert", ""), b.get("state", "")) for b in hook.accepted() if isinstance(b, dict)]

        wait_for(lambda: ("probe_prefix_miss", "firing") in states(), DEADLINE_S, "probe_prefix_miss firing")
        firing = next(b for b in hook.accepted() if b.get("alert") == "probe_prefix_miss")
        assert 2 == len(firing["evidence"]["runs"]), firing
        assert all(r["cached_share"] < 0.8 and len(r["requests"]) == 2 for r in firing["evidence"]["runs"])
        assert "x-anthropic-billing-header" in firing["cause"]
        share = 'kvwatch_probe_last_cached_share_ratio{probe="gw"}'
        wait_for(
            lambda: [r for r in query(url, share) if float(r["value"][1]) < 0.8], 30, "a low share scraped"
        )
        alert = 'kvwatch_alert_firing{alert="probe_prefix_miss",probe="gw"} == 1'
        wait_for(lambda: query(url, alert), 30, "the firing alert scraped")

        gateway.strip = True
        wait_for(
            lambda: ("probe_prefix_miss", "resolved") in states(), DEADLINE_S, "probe_prefix_miss resolved"
        )
        wait_for(lambda: [r for r in query(url, share) if float(r["value"][1]) == 1.0], 30, "share 1 scraped")
        runs = 'kvwatch_probe_runs_total{probe="gw",outcome="ok"} >= 3'
        wait_for(lambda: query(url, runs), 30, "the ok runs counted")
        assert 0 == daemon.stop()
