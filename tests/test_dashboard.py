"""grafana/kvwatch.json: importable, and every panel's query returns data from a real Prometheus.

The end-to-end test runs the real daemon (`python -m kvwatch run`) on copies of the bundled samples,
with a `[[probe]]` every second against a small OpenAI-compatible stub on 127.0.0.1 (a prefix cache over
the request text), and a real Prometheus scraping it every second. The samples are appended in CHUNKS
steps, each one scraped before the next is written, so counters grow between scrapes and rates are
non-zero. Then every panel target runs through Prometheus's HTTP API with Grafana's variables filled
in (`$source` and `$engine` all, `$__rate_interval` 1m): instant queries for gauges, range queries over
the feed for rate()/increase() expressions; each must return at least one finite value.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import re
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from corpora import sample_logs
from prometheus_helpers import (
    Result,
    free_port,
    label_values,
    prometheus_log,
    query,
    query_range,
    start_prometheus,
    stop_prometheus,
    wait_for,
)

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "grafana" / "kvwatch.json"
CHUNKS = 4
TITLES = [
    "Prefix and External cache hit ratio per engine",
    "KV offload: stored vs loaded bytes/s",
    "KV offload read-back (loaded / stored)",
    "GPU KV cache usage",
    "llama.cpp reused vs new prompt tokens/s",
    "llama.cpp median sim_best, f_keep and reuse ratio",
    "llama.cpp sim_best distribution",
    "llama.cpp f_keep distribution",
    "Token hit rate by entry",
    "Pinned cache length",
    "Pinned cache share",
    "SGLang prefix hit rate (token-weighted)",
    "SGLang cached vs computed prefill tokens/s",
    "SGLang KV pool usage",
    "SGLang request records: cached share of prompt tokens",
    "SGLang HiCache storage prefetches by outcome",
    "Ollama reused vs new prompt tokens/s",
    "Ollama cache clears, failed restores, context shifts",
    "LM Studio reused vs new prompt tokens/s",
    "LM Studio cache clears and completions without a cache line",
    "LMCache tokens/s: stored, hit, loaded",
    "LMCache bytes/s and seconds busy",
    "Probe cached share",
    "Probe runs by outcome",
    "Probe time to first byte",
    "Alerts firing now",
    "Alerts firing",
    "Lines read per second",
    "Parse errors and truncated lines per second",
    "Sources up",
    "Lag: bytes behind",
    "Lag: seconds since the last line",
]


def load_dashboard() -> dict[str, Any]:
    """The dashboard JSON."""
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return dashboard


def panels() -> list[dict[str, Any]]:
    """Every panel that is not a row."""
    return [p for p in load_dashboard()["panels"] if p["type"] != "row"]


def targets() -> list[tuple[str, str]]:
    """(panel title, expr) of every panel target."""
    return [(p["title"], t["expr"]) for p in panels() for t in p["targets"]]


def fill(expr: str, range_seconds: int) -> str:
    """The query Grafana sends: variables filled with All, `$__rate_interval` 1m."""
    return (
        expr.replace("$__rate_interval", "1m")
        .replace("$__range", f"{range_seconds}s")
        .replace("$source", ".*")
        .replace("$engine", ".*")
    )


def test_dashboard_is_importable_with_variables_and_panels() -> None:
    """Valid JSON with the DS_PROMETHEUS input, the variables (a fleet's namespace, role, model and pod
    narrowing the sources) and every panel title."""
    dashboard = load_dashboard()
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    pods = 'namespace=~"$namespace", pod=~"$pod", role=~"$role", model=~"$model"'
    expected_queries = {
        "namespace": "label_values(kvwatch_lines_total, namespace)",
        "role": 'label_values(kvwatch_lines_total{namespace=~"$namespace"}, role)',
        "model": 'label_values(kvwatch_lines_total{namespace=~"$namespace"}, model)',
        "pod": 'label_values(kvwatch_lines_total{namespace=~"$namespace", role=~"$role", model=~"$model"}, '
        "pod)",
        "source": f"label_values(kvwatch_lines_total{{{pods}}}, source)",
        "engine": 'label_values(kvwatch_vllm_stats_lines_total{source=~"$source"}, engine)',
    }
    assert ["DS_PROMETHEUS"] == [i["name"] for i in dashboard["__inputs"]]
    assert 39 == dashboard["schemaVersion"]
    assert ["datasource", "namespace", "role", "model", "pod", "source", "engine"] == list(variables)
    assert ("datasource", "prometheus") == (variables["datasource"]["type"], variables["datasource"]["query"])
    assert expected_queries == {name: variables[name]["definition"] for name in expected_queries}
    assert TITLES == [p["title"] for p in panels()]


def test_panels_use_the_datasource_variable_and_do_not_overlap() -> None:
    """Every panel and target queries `${datasource}`; ids are unique; no two panels share a grid cell."""
    every = load_dashboard()["panels"]
    sources = {json.dumps(p["datasource"]) for p in panels()}
    sources |= {json.dumps(t["datasource"]) for p in panels() for t in p["targets"]}
    cells: list[tuple[int, int]] = []
    for p in every:
        g = p["gridPos"]
        cells += [(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])]
    assert {json.dumps({"type": "prometheus", "uid": "${datasource}"})} == sources
    assert len(every) == len({p["id"] for p in every})
    assert len(cells) == len(set(cells))
    assert all(p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 for p in every)


def sample_bytes() -> dict[str, bytes]:
    """Each bundled sample's bytes by source name (`vllm-rotated.log.1.gz` -> `vllm-rotated`)."""
    logs: dict[str, bytes] = {}
    for path in sample_logs():
        data = path.read_bytes()
        # (by the name before `.log`: `lmcache-0.5.6-tp2`, not `lmcache-0`, which samples of one family share)
        logs[path.name[: path.name.index(".log")]] = gzip.decompress(data) if path.suffix == ".gz" else data
    return logs


def chunks(data: bytes, count: int) -> list[bytes]:
    """`data` cut into `count` pieces at line ends (some may be empty)."""
    lines = data.splitlines(keepends=True)
    size = math.ceil(len(lines) / count)
    return [b"".join(lines[i * size : (i + 1) * size]) for i in range(count)]


def shared_chars(one: str, two: str) -> int:
    """How many leading characters `one` and `two` have in common."""
    return sum(1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], zip(one, two, strict=False)))


class OpenAIStub:
    """An OpenAI-compatible endpoint on 127.0.0.1 whose prefix cache is the request text: a request's
    cached tokens are its longest common prefix with a recent request, 4 characters a token."""

    def __init__(self) -> None:
        """Serve /v1/chat/completions on a free port."""
        self.seen: deque[str] = deque(maxlen=8)
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def usage(self, request: dict[str, Any]) -> dict[str, Any]:
        """The usage block for this request, remembered for the next ones."""
        text = json.dumps([request.get("tools"), request.get("messages")])
        with self.lock:
            common = max((shared_chars(text, old) for old in self.seen), default=0)
            self.seen.append(text)
        return {
            "prompt_tokens": len(text) // 4,
            "completion_tokens": 1,
            "prompt_tokens_details": {"cached_tokens": common // 4},
        }

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class serving this stub."""
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                status, reply = 404, {"error": "not found"}
                if self.path == "/v1/chat/completions":
                    choice = {"index": 0, "message": {"role": "assistant", "content": "OK"}}
                    status, reply = 200, {"choices": [choice], "usage": stub.usage(request)}
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def config_text(tmp_path: Path, names: list[str], port: int, probe_url: str) -> str:
    """A kvwatch config with one file source per sample, read from the beginning, and a probe every second."""
    lines = [
        f'state_dir = "{tmp_path / "state"}"',
        "[server]",
        'listen_address = "127.0.0.1"',
        f"port = {port}",
    ]
    for name in names:
        lines += [
            "[[source]]",
            f'name = "{name}"',
            'engine = "auto"',  # (as a user would leave it: each sample's engine is found by its lines)
            'type = "file"',
            f'path = "{tmp_path / "logs" / (name + ".log")}"',
            'start_at = "beginning"',
            "year = 2026",
        ]
    lines += [
        "[[probe]]",
        'name = "stub"',
        f'url = "{probe_url}"',
        'model = "stub-model"',
        "interval = 1",
        "jitter = 0",
        "prefix_tokens = 1024",
        "timeout = 10",
    ]
    return "\n".join(lines) + "\n"


class Feed:
    """The daemon on the samples, Prometheus scraping it, and when the feed started and ended."""

    def __init__(self, url: str, names: list[str], started: float, ended: float) -> None:
        """Hold what the queries need."""
        self.url = url
        self.names = names
        self.started = started
        self.ended = ended


def scraped_bytes(url: str) -> float:
    """Bytes the daemon had read at Prometheus's last scrape, over all sources."""
    result = query(url, "sum(kvwatch_source_read_bytes_total)")
    return float(result[0]["value"][1]) if result else -1.0


def caught_up(url: str, written: int) -> bool:
    """Whether Prometheus's last scrape saw the daemon read `written` bytes in all."""
    return scraped_bytes(url) >= written


def stop_daemon(daemon: subprocess.Popen[bytes]) -> None:
    """SIGTERM the daemon and reap it (kill after 20 s)."""
    if daemon.poll() is None:
        daemon.terminate()
        try:
            daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(timeout=10)


@pytest.fixture(scope="module")
def feed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Feed]:
    """Run the daemon on the samples, appended chunk by chunk, each chunk scraped before the next."""
    tmp_path = tmp_path_factory.mktemp("dashboard")
    logs = sample_bytes()
    (tmp_path / "logs").mkdir()
    for name in logs:
        (tmp_path / "logs" / f"{name}.log").write_bytes(b"")
    port = free_port()
    stub = OpenAIStub()
    config = tmp_path / "kvwatch.toml"
    config.write_text(config_text(tmp_path, sorted(logs), port, stub.base), encoding="utf-8")
    daemon_log = (tmp_path / "daemon.log").open("wb")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "kvwatch", "run", "--config", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=daemon_log,
        stderr=subprocess.STDOUT,
    )
    daemon_log.close()
    prometheus: subprocess.Popen[bytes] | None = None
    try:
        url, prometheus = start_prometheus(tmp_path, [f"127.0.0.1:{port}"])
        try:
            wait_for(lambda: query(url, 'up{job="kvwatch"} == 1'), 60, "Prometheus scraping the daemon")
            started = time.time()
            written = 0
            pieces = {name: chunks(data, CHUNKS) for name, data in logs.items()}
            for step in range(CHUNKS):
                for name, parts in pieces.items():
                    with (tmp_path / "logs" / f"{name}.log").open("ab") as handle:
                        handle.write(parts[step])
                    written += len(parts[step])
                wait_for(partial(caught_up, url, written), 60, f"chunk {step + 1} read and scraped")
            wait_for(lambda: query(url, "kvwatch_alert_firing == 1"), 60, "an alert firing, scraped")
            wait_for(
                lambda: query(url, 'kvwatch_probe_runs_total{outcome="ok"} >= 3'), 60, "probe runs scraped"
            )
        except AssertionError as err:
            tail = (tmp_path / "daemon.log").read_text(encoding="utf-8", errors="replace")[-3000:]
            logs_text = f"daemon log:\n{tail}\nprometheus log:\n{prometheus_log(tmp_path)}"
            raise AssertionError(f"{err}\n{logs_text}") from None
        yield Feed(url, sorted(logs), started, time.time())
    finally:
        if prometheus is not None:
            stop_prometheus(prometheus)
        stop_daemon(daemon)
        stub.close()


def finite(result: Result) -> list[float]:
    """The finite values of an instant vector or a range matrix."""
    values = [s["value"] for s in result if "value" in s] + [v for s in result for v in s.get("values", [])]
    return [float(v[1]) for v in values if math.isfinite(float(v[1]))]


@pytest.mark.slow
def test_variables_find_every_source_and_engines(feed: Feed) -> None:
    """`label_values` of the source and engine variables find every sample and vLLM's engines (the source
    variable's query as Grafana sends it with the fleet's variables at All: series without those labels
    match too)."""
    variables = {v["name"]: v for v in load_dashboard()["templating"]["list"]}
    found = re.fullmatch(r"label_values\((.*), source\)", variables["source"]["definition"])
    assert found is not None
    match = re.sub(r"\$(namespace|pod|role|model)\b", ".*", found.group(1))
    sources = label_values(feed.url, "source", match)
    engines = label_values(feed.url, "engine", 'kvwatch_vllm_stats_lines_total{source=~".*"}')
    assert feed.names == sorted(sources)
    assert {"0", "1"} <= set(engines)


@pytest.mark.slow
@pytest.mark.parametrize(("title", "expr"), targets(), ids=[f"{t}: {e[:40]}" for t, e in targets()])
def test_panel_query_returns_data(feed: Feed, title: str, expr: str) -> None:
    """The panel's query, as Grafana sends it, returns at least one finite value."""
    span = math.ceil(time.time() - feed.started) + 2
    sent = fill(expr, span)
    if re.search(r"\b(rate|increase)\(", sent):
        result = query_range(feed.url, sent, feed.started, time.time(), 1.0)
    else:
        result = query(feed.url, sent)
    assert [] != finite(result), f"{title}: no finite value from {sent}: {result[:3]}"
