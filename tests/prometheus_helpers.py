"""A real Prometheus for tests: start it on loopback against some targets, query its HTTP API, stop it.

    url, process = start_prometheus(tmp_path, ["127.0.0.1:7433"])
    try:
        wait_for(lambda: query(url, "kvwatch_lines_total"), 30, "kvwatch_lines_total scraped")
    finally:
        stop_prometheus(process)

`/usr/bin/prometheus` comes from Debian's `prometheus` package (the one that ships promtool). It listens
on a free 127.0.0.1 port, keeps its TSDB under `tmp_path` and scrapes every target each second (job
"kvwatch"). Nothing here sleeps to synchronise: `wait_for` polls a condition until a deadline.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
Result = list[dict[str, Any]]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(probe: Callable[[], T | None], timeout: float, what: str, interval: float = 0.2) -> T:
    """Poll `probe` until it returns something truthy; AssertionError naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def _get(url: str, timeout: float = 5.0) -> dict[str, Any] | None:
    """GET a Prometheus API URL; its JSON body, or None when the server does not answer (yet)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body: dict[str, Any] = json.load(response)
            return body
    except urllib.error.HTTPError as err:
        body = json.load(err)
        raise AssertionError(f"{url}: HTTP {err.code}: {body.get('error', body)}") from None
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def _api(url: str, path: str, params: dict[str, str | float]) -> Any:
    """Call `/api/v1/<path>`; its `data`, failing the test on an error status."""
    full = f"{url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
    body = _get(full)
    assert body is not None, f"no answer from {full}"
    assert "success" == body.get("status"), f"{full}: {body}"
    return body["data"]


def query(url: str, expr: str, at: float | None = None) -> Result:
    """An instant query's result vector (empty when nothing matches)."""
    params: dict[str, str | float] = {"query": expr}
    if at is not None:
        params["time"] = at
    result: Result = _api(url, "query", params)["result"]
    return result


def query_range(url: str, expr: str, start: float, end: float, step: float = 1.0) -> Result:
    """A range query's result matrix (empty when nothing matches)."""
    params: dict[str, str | float] = {"query": expr, "start": start, "end": end, "step": step}
    result: Result = _api(url, "query_range", params)["result"]
    return result


def label_values(url: str, label: str, match: str) -> list[str]:
    """The values of `label` on the series `match` selects (Grafana's `label_values(match, label)`)."""
    values: list[str] = _api(url, f"label/{label}/values", {"match[]": match})
    return values


def start_prometheus(
    tmp_path: Path,
    targets: Sequence[str],
    job: str = "kvwatch",
    timeout: float = 60.0,
    scrape: Mapping[str, Any] | None = None,
) -> tuple[str, subprocess.Popen[bytes]]:
    """Start Prometheus scraping `targets` every second, with `scrape`'s extra keys; its URL once ready."""
    exe = shutil.which("prometheus") or "/usr/bin/prometheus"
    assert Path(exe).exists(), "prometheus not found: apt-get install prometheus"
    home = tmp_path / "prometheus"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "prometheus.yml"
    config.write_text(
        json.dumps(  # JSON is YAML
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"},
                "scrape_configs": [
                    {"job_name": job, "static_configs": [{"targets": list(targets)}], **(scrape or {})}
                ],
            }
        ),
        encoding="utf-8",
    )
    port = free_port()
    log = (home / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            exe,
            f"--config.file={config}",
            f"--storage.tsdb.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--web.enable-lifecycle",
            "--log.level=warn",
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"prometheus exited {process.returncode}: {prometheus_log(tmp_path)}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
                return bool(200 == response.status)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    try:
        wait_for(ready, timeout, "prometheus to be ready")
    except BaseException:
        stop_prometheus(process)
        raise
    return url, process


def prometheus_log(tmp_path: Path) -> str:
    """The end of Prometheus's log, for failure messages."""
    path = tmp_path / "prometheus" / "prometheus.log"
    return path.read_text(encoding="utf-8", errors="replace")[-4000:] if path.exists() else ""


def stop_prometheus(process: subprocess.Popen[bytes]) -> None:
    """Terminate Prometheus and reap it (kill after 20 s)."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
