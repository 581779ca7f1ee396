"""The worked many-hosts example stays valid: kvwatch, Prometheus and Alertmanager accept it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from pki_helpers import make_pki

from kvwatch.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "many-hosts"


def tool(name: str) -> str:
    """The path of a required tool (Debian packages prometheus, prometheus-alertmanager)."""
    path = shutil.which(name)
    assert path is not None, f"{name} must be installed"
    return path


def test_kvwatch_accepts_the_host_config(tmp_path: Path) -> None:
    """`kvwatch check-config` accepts the per-host config with its web config, once the certificates it
    names exist (made here, at the paths the example gives under /etc/kvwatch, moved into tmp_path)."""
    pki = make_pki(tmp_path / "pki")
    host = tmp_path / "host"
    shutil.copytree(EXAMPLE, host)
    web = (host / "web-config.yml").read_text()
    for name, made in [
        ("tls.crt", pki.cert("server")),
        ("tls.key", pki.key("server")),
        ("fleet-ca.crt", pki.ca),
    ]:
        assert f"/etc/kvwatch/{name}" in web
        web = web.replace(f"/etc/kvwatch/{name}", str(made))
    (host / "web-config.yml").write_text(web)
    assert 0 == main(["check-config", str(host / "kvwatch.toml")])


def test_prometheus_accepts_the_fleet_config() -> None:
    """`promtool check config --syntax-only` accepts the fleet's Prometheus config."""
    done = subprocess.run(
        [tool("promtool"), "check", "config", "--syntax-only", str(EXAMPLE / "prometheus.yml")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert 0 == done.returncode, done.stdout + done.stderr


def test_alertmanager_accepts_the_cluster_config() -> None:
    """`amtool check-config` accepts the Alertmanager replica's config."""
    done = subprocess.run(
        [tool("amtool"), "check-config", str(EXAMPLE / "alertmanager.yml")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert 0 == done.returncode, done.stdout + done.stderr
