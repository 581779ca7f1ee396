"""A real Prometheus server scrapes the daemon; a kvwatch series is read back through its HTTP API."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from daemon_helpers import Kvwatch, file_source, free_port, wait_until, write_config

pytestmark = pytest.mark.slow  # a real Prometheus server


def query(base: str, expr: str) -> list[dict[str, object]]:
    """The result vector of an instant query ([] while Prometheus has nothing)."""
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            result: list[dict[str, object]] = json.load(resp)["data"]["result"]
            return result
    except OSError:
        return []


def test_prometheus_scrapes_the_daemon(tmp_path: Path) -> None:
    """Prometheus (Debian's package) scrapes every second and returns kvwatch_lines_total's value."""
    binary = shutil.which("prometheus") or "/usr/bin/prometheus"
    assert Path(binary).exists(), "the Debian package prometheus is a test dependency"
    log = tmp_path / "app.log"
    log.write_text("".join(f"line {i}\n" for i in range(42)))
    kv = Kvwatch(
        ["--config", str(write_config(tmp_path / "kv.toml", file_source("app", log)))], tmp_path / "kv.err"
    )
    wait_until(lambda: kv.lines("app") == 42, what="42 lines")
    target = kv.url.removeprefix("http://")
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"scrape_configs: [{{job_name: kvwatch, static_configs: [{{targets: ['{target}']}}]}}]\n"
    )
    port = free_port()
    prom = subprocess.Popen(
        [binary, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "prom.err").open("wb"),
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        found: list[dict[str, object]] = []
        wait_until(
            lambda: found.extend(query(base, 'kvwatch_lines_total{source="app"}')) or found, 30.0, "a sample"
        )
        assert "42" == found[0]["value"][1]  # type: ignore[index]
    finally:
        prom.terminate()
        prom.wait(10)
        assert 0 == kv.stop()
