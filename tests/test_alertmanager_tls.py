"""An alert through the real Alertmanager behind a private CA with basic auth (its --web.config.file).

Debian's prometheus-alertmanager serves HTTPS on 127.0.0.1 with a certificate from a CA made here by
openssl, and asks for a bcrypt-hashed password; kvwatch's notifier, built from a config as the daemon
builds it, posts an alert, and the test reads it back through Alertmanager's own API.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
import requests
from notify_helpers import make_alert
from prometheus_helpers import free_port, wait_for

from kvwatch.config import load_config
from kvwatch.config.view import summarize
from kvwatch.daemon.setup import prepare
from kvwatch.notify.base import new_session

PASSWORD = "s3cret-pass-phrase"

pytestmark = pytest.mark.slow


def openssl(*args: str, cwd: Path) -> None:
    """Run openssl; a missing one fails the test."""
    exe = shutil.which("openssl")
    assert exe is not None, "openssl not found: apt-get install openssl"
    subprocess.run([exe, *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def private_ca(d: Path) -> None:
    """ca.pem (a private CA) and server.pem/server.key for IP 127.0.0.1, signed by it."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=kvwatch test CA", cwd=d)  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=127.0.0.1", cwd=d)  # fmt: skip
    (d / "san.ext").write_text("subjectAltName = IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "san.ext", cwd=d)  # fmt: skip


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[str]:
    """A running Alertmanager's https:// base URL."""
    exe = shutil.which("prometheus-alertmanager")
    assert exe is not None, "prometheus-alertmanager not found: apt-get install prometheus-alertmanager"
    private_ca(tmp_path)
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=10)).decode()
    (tmp_path / "web.yml").write_text(
        f"tls_server_config:\n  cert_file: {tmp_path / 'server.pem'}\n  key_file: {tmp_path / 'server.key'}\n"
        f"basic_auth_users:\n  kvwatch: '{hashed}'\n"
    )
    (tmp_path / "am.yml").write_text("route:\n  receiver: blackhole\nreceivers:\n  - name: blackhole\n")
    port = free_port()
    argv = [
        exe,
        f"--config.file={tmp_path / 'am.yml'}",
        f"--storage.path={tmp_path / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        f"--web.config.file={tmp_path / 'web.yml'}",
        "--cluster.listen-address=",
    ]
    with open(tmp_path / "am.log", "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    url = f"https://127.0.0.1:{port}"

    def ready() -> bool | None:
        assert process.poll() is None, (tmp_path / "am.log").read_text()
        try:
            got = requests.get(
                f"{url}/-/ready", verify=tmp_path / "ca.pem", auth=("kvwatch", PASSWORD), timeout=2
            )
        except requests.RequestException:
            return None
        return got.status_code == 200 or None

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


def notifier_config(tmp_path: Path, url: str, extra: str) -> Path:
    """A config with one alertmanager notifier at `url` plus `extra` lines."""
    (tmp_path / "am-password").write_text(PASSWORD + "\n")
    path = tmp_path / "kv.toml"
    path.write_text(f'[[notifier]]\nname = "am"\ntype = "alertmanager"\nurl = "{url}"\n{extra}')
    return path


def test_an_alert_reaches_alertmanager_behind_a_private_ca_with_basic_auth(
    alertmanager: str, tmp_path: Path
) -> None:
    auth = '[notifier.basic_auth]\nusername = "kvwatch"\npassword_file = "am-password"\n'
    config = load_config(notifier_config(tmp_path, alertmanager, f'ca_file = "ca.pem"\n{auth}'))
    summary = summarize(config)
    assert "basic_auth=kvwatch:<secret>" in summary and PASSWORD not in summary
    ((_, notifier),) = prepare(config).notifiers
    alert = make_alert("pinned_cache_length", at=__import__("time").time(), labels={"source": "tls-test"})
    outcome = notifier.send([alert], new_session())
    assert "ok" == outcome.kind, outcome.describe()
    got = requests.get(
        f"{alertmanager}/api/v2/alerts",
        params={"filter": 'source="tls-test"'},
        verify=tmp_path / "ca.pem",
        auth=("kvwatch", PASSWORD),
        timeout=10,
    )
    assert 200 == got.status_code
    (received,) = got.json()
    assert ("pinned_cache_length", "warning") == (
        received["labels"]["alertname"],
        received["labels"]["severity"],
    )
    notes = received["annotations"]
    assert notes["runbook_url"].endswith("docs/alerts.md#pinned_cache_length")
    assert notes["description"].startswith(alert.cause)


def test_without_the_ca_or_the_password_alertmanager_is_refused_and_no_secret_is_told(
    alertmanager: str, tmp_path: Path
) -> None:
    """The host's trust store does not know the private CA: a TLS error naming scheme, host and port
    only; with the CA but no password: HTTP 401, held for a retry (a fixed password delivers it)."""
    auth = '[notifier.basic_auth]\nusername = "kvwatch"\npassword_file = "am-password"\n'
    untrusted = load_config(notifier_config(tmp_path, alertmanager, auth))
    ((_, notifier),) = prepare(untrusted).notifiers
    outcome = notifier.send([make_alert()], new_session())
    assert ("retry", "connection") == (outcome.kind, outcome.reason)
    assert outcome.detail.startswith(f"{alertmanager}: SSLError") and PASSWORD not in outcome.detail
    anonymous = load_config(notifier_config(tmp_path, alertmanager, 'ca_file = "ca.pem"\n'))
    ((_, notifier),) = prepare(anonymous).notifiers
    outcome = notifier.send([make_alert()], new_session())
    assert ("retry", "http_401") == (outcome.kind, outcome.reason)
