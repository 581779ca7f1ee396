"""A notifier whose receiver is misconfigured, end to end: the running daemon holds the alert, says so
(one log line, /metrics, the landing page), and delivers it once a reload fixes the URL; the same
against the real Alertmanager (a wrong path, a missing password)."""

from __future__ import annotations

import json
import signal
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests
from daemon_helpers import Kvwatch, file_source, shifted_sample, wait_until, write_config
from notify_helpers import SECRET_PATH, Receiver, make_alert
from prometheus_client import CollectorRegistry
from test_alertmanager_tls import PASSWORD, alertmanager, notifier_config  # noqa: F401 - the fixture

from kvwatch.config import load_config
from kvwatch.daemon.setup import build_deliveries, prepare
from kvwatch.notify.delivery import Delivery, notifications_counter

pytestmark = pytest.mark.slow


def webhook(url: str) -> str:
    """A `[[notifier]]` table of a webhook named hook at `url`."""
    return f'[[notifier]]\nname = "hook"\ntype = "webhook"\nurl = "{url}"\n'


def test_a_wrong_webhook_path_holds_the_alert_says_so_and_a_reload_with_the_right_url_delivers_it(
    tmp_path: Path,
) -> None:
    """A 404 for every post: the alert waits (kvwatch_notifier_failing 1, one waiting, the landing page
    names the notifier failing with its status); the config fixed and SIGHUP: it arrives, the notifier
    recovers; one log line each way, and the URL's path is in no log, page or metric."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    log = tmp_path / "vllm.log"
    shifted_sample(log, now - timedelta(seconds=60))
    source = file_source("vllm", log) + f"year = {now.year}\n"
    hook = {"notifier": "hook"}
    with Receiver(serves="/alerts") as receiver:
        cfg = write_config(tmp_path / "kv.toml", source + webhook(receiver.base + SECRET_PATH))
        kv = Kvwatch(["--config", str(cfg)], tmp_path / "run.err")
        wait_until(lambda: kv.value("kvwatch_notifier_failing", hook) == 1.0, 30.0, "the notifier failing")
        assert 1.0 == kv.value("kvwatch_notifier_pending_alerts", hook)
        assert (kv.value("kvwatch_notifier_pending_bytes", hook) or 0) > 500
        assert (kv.value("kvwatch_notifications_total", {**hook, "result": "retry_http_404"}) or 0) >= 1
        _, _, page = kv.get("/")
        assert "notifier failing: hook (1 alert waiting)" in page
        assert "http_404" in page and receiver.base in page and "check the notifier&#x27;s URL" in page
        failing_page, failing_metrics = page, kv.get("/metrics")[2]
        assert [] == receiver.accepted()

        write_config(cfg, source + webhook(receiver.base + "/alerts"))
        kv.proc.send_signal(signal.SIGHUP)
        wait_until(receiver.accepted, 30.0, "the held alert delivered after the reload")
        wait_until(lambda: kv.value("kvwatch_notifier_failing", hook) == 0.0, what="the notifier recovered")
        assert "write_only_offload" == receiver.accepted()[0]["alert"]
        assert 0.0 == kv.value("kvwatch_notifier_pending_alerts", hook)
        _, _, page = kv.get("/")
        assert "notifier failing" not in page and "delivering" in page
        assert 0 == kv.stop()
    text = kv.log.read_text()
    lines = text.splitlines()
    assert 1 == sum("notifier hook: failed (http_404)" in line for line in lines), text
    assert 1 == sum("notifier hook: recovered after" in line for line in lines), text
    for body in (text, failing_page, failing_metrics, page):
        assert "SECRETTOKEN42" not in body and "/services/" not in body
    spool = json.loads((tmp_path / "state" / "notify-hook.json").read_text())
    assert [] == spool["pending"]


def test_the_real_alertmanager_at_a_wrong_path_or_without_its_password_delays_the_alert_until_fixed(
    alertmanager: str,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    """Alertmanager answers a wrong path 404 and a missing password 401: the queue holds the alert
    through both; rebuilt from the fixed config (what a reload does), it delivers it and Alertmanager
    has it."""
    registry = CollectorRegistry()
    counter = notifications_counter(registry)
    alert = make_alert("pinned_cache_length", at=time.time(), labels={"source": "held-test"})
    auth = '[notifier.basic_auth]\nusername = "kvwatch"\npassword_file = "am-password"\n'
    configs = [
        (f"{alertmanager}/wrong/prefix", f'ca_file = "ca.pem"\n{auth}', "retry_http_404"),
        (alertmanager, 'ca_file = "ca.pem"\n', "retry_http_401"),
    ]
    replaced: list[Delivery] = []
    for url, extra, result in configs:
        config = replace(load_config(notifier_config(tmp_path, url, extra)), state_dir=tmp_path / "state")
        (delivery,) = build_deliveries(prepare(config), config, counter, replaced)
        if not replaced:
            delivery.enqueue(alert)
        labels = {"notifier": "am", "result": result}
        wait_until(lambda labels=labels: registry.get_sample_value("kvwatch_notifications_total", labels))
        assert delivery.status().failing and [alert] == delivery.pending()
        assert delivery.close(5)
        replaced = [delivery]
    config = load_config(notifier_config(tmp_path, alertmanager, f'ca_file = "ca.pem"\n{auth}'))
    config = replace(config, state_dir=tmp_path / "state")
    (delivery,) = build_deliveries(prepare(config), config, counter, replaced)
    wait_until(lambda: delivery.pending() == [], what="the held alert delivered")
    assert [] == json.loads((tmp_path / "state" / "notify-am.json").read_text())["pending"]
    status = delivery.status()
    assert (False, 1) == (status.failing, status.delivered)
    assert delivery.close(5)
    got = requests.get(
        f"{alertmanager}/api/v2/alerts",
        params={"filter": 'source="held-test"'},
        verify=tmp_path / "ca.pem",
        auth=("kvwatch", PASSWORD),
        timeout=10,
    )
    assert ["pinned_cache_length"] == [a["labels"]["alertname"] for a in got.json()]
