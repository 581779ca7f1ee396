"""A pod's alerts carry its labels: namespace, pod, container, role and model besides `source`, in every
notifier's payload, and a resolution carries the labels its firing carried (a real Alertmanager then
resolves the very alert it holds)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests
from daemon_helpers import Kvwatch, shifted_sample, wait_until, write_config
from kubelet_helpers import Node
from prometheus_helpers import free_port, wait_for

from kvwatch.alerts import AlertBook
from kvwatch.daemon.live_alerts import LiveAlerts
from kvwatch.model import Alert, Finding
from kvwatch.notify.routing import Route

NOW = 1_780_000_000.0
POD = {"namespace": "llm", "pod": "qwen-decode-0", "container": "vllm", "role": "decode"}


class Sink:
    """A delivery that records what it is handed."""

    name = "sink"
    route = Route()

    def __init__(self) -> None:
        """Nothing yet."""
        self.got: list[Alert] = []

    def enqueue(self, alert: Alert) -> None:
        """Record the alert."""
        self.got.append(alert)


def finding(source: str, **labels: str) -> Finding:
    """A write_only_offload finding of `source`, with the detector's own labels."""
    return Finding("write_only_offload", (("source", source), *labels.items()), "warning", "s", "c", "f", {})


def live(tmp_path: Path, extra: dict[str, dict[str, str]]) -> tuple[LiveAlerts, AlertBook, Sink]:
    """A LiveAlerts whose sources' labels are `extra` (as the daemon's registry keeps them)."""
    book = AlertBook()
    alerts = LiveAlerts(tmp_path, book, clock=lambda: NOW)
    alerts.load()
    alerts.labels_of = lambda source: extra.get(source, {})
    sink = Sink()
    alerts.deliveries = [sink]  # type: ignore[list-item]
    return alerts, book, sink


def test_a_pods_alert_carries_its_labels_and_its_resolution_the_same_ones(tmp_path: Path) -> None:
    """A pod's alert is sent with its pod labels and the model its engine named; the model named anew
    later does not change the resolution's labels, also after a restart; the alert's own labels win a
    clash; another source's alert carries only its own labels."""
    extra = {"fleet_pod": {**POD, "model": "qwen3-32b"}}
    alerts, book, sink = live(tmp_path, extra)
    alerts.handle(book.update([finding("fleet_pod"), finding("plain")], NOW - 60))
    assert {a.labels["source"]: a.labels for a in sink.got} == {
        "fleet_pod": {"source": "fleet_pod", **POD, "model": "qwen3-32b"},
        "plain": {"source": "plain"},
    }
    extra["fleet_pod"]["model"] = "qwen3-235b"  # (a restarted engine serving another model)
    again, book2, sink2 = live(tmp_path, extra)  # (kvwatch restarted: the sent alerts restored)
    again.handle(book2.update([], NOW + 3600))
    resolved = {a.labels["source"]: a for a in sink2.got}
    assert resolved["fleet_pod"].state == "resolved"
    assert resolved["fleet_pod"].labels == {"source": "fleet_pod", **POD, "model": "qwen3-32b"}
    clash, book3, sink3 = live(tmp_path / "other", {"fleet_pod": {**POD, "model": "m"}})
    clash.handle(book3.update([finding("fleet_pod", model="own")], NOW - 60))
    assert sink3.got[0].labels["model"] == "own"


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[str]:
    """A running Alertmanager's base URL."""
    exe = shutil.which("prometheus-alertmanager")
    assert exe is not None, "prometheus-alertmanager not found: apt-get install prometheus-alertmanager"
    (tmp_path / "am.yml").write_text("route:\n  receiver: blackhole\nreceivers:\n  - name: blackhole\n")
    port = free_port()
    argv = [
        exe,
        f"--config.file={tmp_path / 'am.yml'}",
        f"--storage.path={tmp_path / 'am-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
    ]
    with open(tmp_path / "am.log", "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool | None:
        assert process.poll() is None, (tmp_path / "am.log").read_text()
        try:
            return requests.get(f"{url}/-/ready", timeout=2).status_code == 200 or None
        except requests.RequestException:
            return None

    try:
        wait_for(ready, 30.0, "Alertmanager ready")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def held(url: str) -> list[dict[str, str]]:
    """The labels of the alerts Alertmanager holds active."""
    got = requests.get(f"{url}/api/v2/alerts", params={"active": "true"}, timeout=5)
    got.raise_for_status()
    return [alert["labels"] for alert in got.json()]


@pytest.mark.slow
def test_alertmanager_gets_a_pods_labels_and_resolves_the_alert_when_the_pod_goes(
    tmp_path: Path, alertmanager: str
) -> None:
    """A pod's alert reaches a real Alertmanager labelled with its namespace, pod, container, role and
    model; when the pod is deleted, the resolution matches that alert and Alertmanager holds none."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    log = tmp_path / "shifted.log"
    shifted_sample(log, now - timedelta(seconds=60))
    lines = log.read_bytes().split(b"\n")[:-1]
    node = Node(tmp_path / "pods")
    body = (
        f'[[source]]\nname = "fleet"\ntype = "pods"\nroot = "{node.root}"\nyear = {now.year}\n'
        '[[source.select]]\nnamespace = "llm"\ncontainer = "vllm"\nroles = { decode = "*-decode-*" }\n'
        f'[[notifier]]\nname = "am"\ntype = "alertmanager"\nurl = "{alertmanager}"\n'
    )
    cfg = write_config(tmp_path / "kv.toml", body)
    kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv.err")
    try:
        wait_until(lambda: kv.get("/-/ready")[0] == 200, 10.0, "ready: the tree looked at")
        node.start_pod("llm", "qwen-decode-0", ["vllm"])
        node.play("llm", "qwen-decode-0", "vllm", lines, rate=5000).join()
        (labels,) = wait_for(lambda: held(alertmanager) or None, 30.0, "the alert in Alertmanager")
        assert labels == {
            "alertname": "write_only_offload",
            "severity": labels["severity"],
            "source": "fleet_llm_qwen-decode-0_vllm",
            "engine": "0",  # (the alert's own: vLLM's engine index)
            **POD,
            "model": "deepseek-v4-flash",  # (named by the sample's startup lines)
        }
        node.delete_pod("llm", "qwen-decode-0")
        wait_for(lambda: held(alertmanager) == [] or None, 30.0, "the alert resolved in Alertmanager")
    finally:
        assert 0 == kv.stop()
