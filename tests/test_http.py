"""The HTTP side: content negotiation, landing page, /healthz, basic auth and TLS from the web config."""

from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter

from kvwatch.config.types import ConfigError
from kvwatch.web.auth import check_password, hash_password
from kvwatch.web.config import WebConfig, load_web_config
from kvwatch.web.exporter import Exporter

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def get(
    url: str, headers: dict[str, str] | None = None, context: ssl.SSLContext | None = None
) -> tuple[int, str, str]:
    """(status, content type, body)."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


def serve(web: WebConfig | None = None, healthy: bool = True) -> Exporter:
    """An exporter on a free port with one counter and a fixed page."""
    registry = CollectorRegistry()
    Counter("kvwatch_test_things", "Things.", registry=registry).inc(3)
    health = (healthy, "ok" if healthy else "pipeline thread is not running")
    exporter = Exporter(
        "127.0.0.1",
        0,
        registry,
        lock=threading.Lock(),
        page=lambda: "<h1>kvwatch</h1>",
        health=lambda: health,
        web=web,
    )
    exporter.start()
    return exporter


@pytest.fixture
def exporter() -> Iterator[Exporter]:
    """A plain exporter."""
    ex = serve()
    yield ex
    ex.stop()


def test_prometheus_text_by_default(exporter: Exporter) -> None:
    """Without an Accept header /metrics is the Prometheus text format."""
    status, kind, body = get(exporter.url + "metrics")
    assert (200, "text/plain; version=0.0.4; charset=utf-8") == (status, kind)
    assert "kvwatch_test_things_total 3.0" in body


def test_openmetrics_when_asked(exporter: Exporter) -> None:
    """`Accept: application/openmetrics-text` gets OpenMetrics, ending in `# EOF`."""
    status, kind, body = get(
        exporter.url + "metrics", {"Accept": "application/openmetrics-text; version=1.0.0"}
    )
    assert (200, OPENMETRICS, "# EOF\n") == (status, kind.split("; escaping=")[0], body[-6:])


def test_landing_page_and_healthz(exporter: Exporter) -> None:
    """`/` is HTML, `/healthz` says ok, anything else is 404."""
    assert (200, "text/html; charset=utf-8", "<h1>kvwatch</h1>") == get(exporter.url)
    assert (200, "ok\n") == get(exporter.url + "healthz")[::2]
    assert 404 == get(exporter.url + "nope")[0]


def test_healthz_is_503_when_the_pipeline_is_not_healthy() -> None:
    """An unhealthy pipeline answers 503 with the reason."""
    ex = serve(healthy=False)
    try:
        assert (503, "pipeline thread is not running\n") == get(ex.url + "healthz")[::2]
    finally:
        ex.stop()


def test_a_stuck_pipeline_makes_scrapes_and_the_page_fail_not_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scrape and the landing page wait for the pipeline's lock a bounded time, then answer 503."""
    import kvwatch.web.exporter

    monkeypatch.setattr(kvwatch.web.exporter, "SCRAPE_WAIT", 0.05)
    ex = serve()
    try:
        with ex.lock:
            assert (503, 503) == (get(ex.url + "metrics")[0], get(ex.url)[0])
        assert 200 == get(ex.url)[0]
    finally:
        ex.stop()


def test_password_hashes_check_and_are_salted() -> None:
    """hash_password gives bcrypt `$2b$10$...` that checks the right password only, salted."""
    stored = hash_password("s3cret")
    assert (True, False) == (check_password(b"s3cret", stored), check_password(b"wrong", stored))
    assert stored != hash_password("s3cret")
    assert stored.startswith("$2b$10$")


def test_basic_auth_guards_every_path(tmp_path: Path) -> None:
    """With basic_auth_users, requests without the right password get 401."""
    (tmp_path / "web-config.yml").write_text(f"basic_auth_users:\n  prom: '{hash_password('pw')}'\n")
    ex = serve(load_web_config(tmp_path / "web-config.yml"))
    good = {"Authorization": "Basic " + base64.b64encode(b"prom:pw").decode()}
    bad = {"Authorization": "Basic " + base64.b64encode(b"prom:nope").decode()}
    try:
        assert [401, 401, 401, 200, 200, 200] == [
            get(ex.url + "metrics")[0],
            get(ex.url + "metrics", bad)[0],
            get(ex.url)[0],
            get(ex.url + "metrics", good)[0],
            get(ex.url + "healthz", good)[0],
            get(ex.url, good)[0],
        ]
    finally:
        ex.stop()


def test_tls_from_the_web_config(tmp_path: Path) -> None:
    """cert_file and key_file make the exporter speak HTTPS."""
    openssl = shutil.which("openssl")
    assert openssl is not None, "openssl makes the test certificate"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-keyout", str(tmp_path / "k.pem"), "-out", str(tmp_path / "c.pem")],
        check=True, capture_output=True,
    )  # fmt: skip
    (tmp_path / "web-config.yml").write_text("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n")
    ex = serve(load_web_config(tmp_path / "web-config.yml"))
    context = ssl.create_default_context(cafile=str(tmp_path / "c.pem"))
    context.check_hostname = False
    try:
        assert ex.url.startswith("https://")
        assert 200 == get(ex.url + "metrics", context=context)[0]
    finally:
        ex.stop()


def test_web_config_errors_name_the_field(tmp_path: Path) -> None:
    """A bad web config lists each problem with its field."""
    (tmp_path / "web-config.yml").write_text(
        "tls_server_config:\n  cert_file: c.pem\nbasic_auth_users:\n  u: plain\n"
    )
    with pytest.raises(ConfigError) as err:
        load_web_config(tmp_path / "web-config.yml")
    expected = [
        "tls_server_config.key_file: missing (TLS needs cert_file and key_file)",
        "basic_auth_users.u: not a bcrypt hash (make one with `kvwatch hash-password` or "
        "`htpasswd -nBC 10 \"\" | tr -d ':\\n'`)",
    ]
    assert expected == err.value.problems
