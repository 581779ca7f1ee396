"""systemd/kvwatch.service: hardened (exposure <= 2.0), clean under `systemd-analyze verify`.

`systemd-analyze` comes from Debian's `systemd` package; without it these tests fail, never skip.
`verify` checks that ExecStart= and ExecReload= exist, so it runs with `--root` on a temporary root
holding the shipped unit byte for byte, stand-ins at /opt/kvwatch/bin/kvwatch and /bin/kill, and a
copy of the system's unit directory (the targets the unit is ordered against).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kvwatch.config import load_config

ROOT = Path(__file__).resolve().parents[1]
UNIT = ROOT / "systemd" / "kvwatch.service"
SLACK_DROP_IN = ROOT / "systemd" / "kvwatch-slack-webhook.conf"
SYSTEM_UNITS = Path("/usr/lib/systemd/system")


def analyze(*args: str) -> subprocess.CompletedProcess[str]:
    """Run systemd-analyze; a missing one fails the test."""
    exe = shutil.which("systemd-analyze")
    assert exe is not None, "systemd-analyze not found: apt-get install systemd"
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=120, check=False)


def directives(path: Path = UNIT) -> dict[str, list[str]]:
    """Every `Key=value` of the unit (or a drop-in), values in order."""
    found: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def test_security_exposure_at_most_2() -> None:
    """`systemd-analyze security --offline=true` rates the unit at an overall exposure of 2.0 or less."""
    result = analyze("security", "--offline=true", "--no-pager", str(UNIT))
    match = re.search(r"Overall exposure level for kvwatch\.service: (\d+\.\d+)", result.stdout)
    assert match is not None, result.stdout + result.stderr
    assert float(match.group(1)) <= 2.0, result.stdout


@pytest.mark.parametrize("drop_in", [False, True], ids=["shipped", "with-slack-drop-in"])
def test_verify_finds_nothing(tmp_path: Path, drop_in: bool) -> None:
    """`systemd-analyze verify` of the shipped unit (and with the Slack drop-in), with its executables
    in place, prints nothing."""
    unit = tmp_path / "etc" / "systemd" / "system" / "kvwatch.service"
    unit.parent.mkdir(parents=True)
    shutil.copyfile(UNIT, unit)
    if drop_in:
        (tmp_path / "etc" / "systemd" / "system" / "kvwatch.service.d").mkdir()
        shutil.copyfile(SLACK_DROP_IN, unit.parent / "kvwatch.service.d" / "slack-webhook.conf")
    shutil.copytree(SYSTEM_UNITS, tmp_path / "usr" / "lib" / "systemd" / "system", symlinks=True)
    for exe in ("opt/kvwatch/bin/kvwatch", "bin/kill"):
        path = tmp_path / exe
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        path.chmod(0o755)
    result = analyze("verify", f"--root={tmp_path}", str(unit))
    assert (0, "", "") == (result.returncode, result.stdout, result.stderr)


def test_verify_would_report_a_missing_executable(tmp_path: Path) -> None:
    """The verify setup is not vacuous: without the installed kvwatch it complains about ExecStart."""
    unit = tmp_path / "etc" / "systemd" / "system" / "kvwatch.service"
    unit.parent.mkdir(parents=True)
    shutil.copyfile(UNIT, unit)
    shutil.copytree(SYSTEM_UNITS, tmp_path / "usr" / "lib" / "systemd" / "system", symlinks=True)
    result = analyze("verify", f"--root={tmp_path}", str(unit))
    assert "/opt/kvwatch/bin/kvwatch is not executable" in result.stderr


def test_unit_runs_the_daemon_as_a_notify_service_with_one_capability() -> None:
    """Type=notify with a watchdog, a dynamic user, CAP_DAC_READ_SEARCH only, journald via its group."""
    unit = directives()
    expected = {
        "Type": ["notify"],
        "NotifyAccess": ["main"],
        "ExecStart": ["/opt/kvwatch/bin/kvwatch run --config /etc/kvwatch/kvwatch.toml"],
        "ExecReload": ["/bin/kill -HUP $MAINPID"],
        "Restart": ["on-failure"],
        "DynamicUser": ["yes"],
        "StateDirectory": ["kvwatch"],
        "CapabilityBoundingSet": ["CAP_DAC_READ_SEARCH"],
        "AmbientCapabilities": ["CAP_DAC_READ_SEARCH"],
        "SupplementaryGroups": ["systemd-journal"],
        "ProtectSystem": ["strict"],
    }
    assert expected == {key: unit.get(key) for key in expected}
    assert "WatchdogSec" in unit
    assert not {"User", "Group", "ProcSubset"} & set(unit), "root, docker group or a hidden /proc/stat"


def test_the_unit_loads_no_credential_and_stops_restarting_on_a_config_error() -> None:
    """No LoadCredential= (a missing file would fail the unit on a host without Slack), and the exit
    status of a refused config ends Restart=on-failure's loop."""
    from kvwatch.cli import CONFIG_ERROR

    unit = directives()
    assert "LoadCredential" not in unit
    assert [str(CONFIG_ERROR)] == unit["RestartPreventExitStatus"]


def test_the_slack_drop_in_credential_name_is_a_notifier_name(tmp_path: Path) -> None:
    """The credential the drop-in loads is what a notifier of that name reads from $CREDENTIALS_DIRECTORY."""
    (credential,) = directives(SLACK_DROP_IN)["LoadCredential"]
    name, source = credential.split(":", 1)
    config = tmp_path / "kvwatch.toml"
    config.write_text(f'[[notifier]]\nname = "{name}"\ntype = "slack"\n', encoding="utf-8")
    creds = tmp_path / "credentials"
    creds.mkdir()
    (creds / name).write_text("https://hooks.slack.invalid/T0/B0/x\n", encoding="utf-8")
    (notifier,) = load_config(config).notifiers
    url = notifier.resolve_url(env={"CREDENTIALS_DIRECTORY": str(creds)})
    assert ("/etc/kvwatch/slack-webhook", "https://hooks.slack.invalid/T0/B0/x") == (source, url.reveal())
