"""The workstation unit (kvwatch-user.service): systemd accepts it as a user unit, with nothing to say."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from kvwatch.assets import asset_bytes, next_steps


def test_systemd_analyze_verify_user_is_clean(tmp_path: Path) -> None:
    """`systemd-analyze verify --user` on the shipped unit, with its ExecStart present under a home."""
    analyze = shutil.which("systemd-analyze")
    assert analyze is not None, "systemd-analyze (Debian package systemd) must be installed"
    home, runtime = tmp_path / "home", tmp_path / "run"
    kvwatch = home / ".local/share/kvwatch/venv/bin/kvwatch"
    kvwatch.parent.mkdir(parents=True)
    kvwatch.write_text("#!/bin/sh\n")
    kvwatch.chmod(0o755)
    runtime.mkdir(mode=0o700)
    unit = tmp_path / "kvwatch.service"
    unit.write_bytes(asset_bytes("kvwatch-user.service"))
    env = {**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}
    done = subprocess.run(
        [analyze, "verify", "--user", str(unit)], capture_output=True, text=True, env=env, check=False
    )
    assert (0, "", "") == (done.returncode, done.stdout, done.stderr)


def test_the_user_unit_needs_no_root_and_init_says_how_to_install_it(tmp_path: Path) -> None:
    """No User=, no capability, no system path to write; `kvwatch init` prints the --user steps."""
    text = asset_bytes("kvwatch-user.service").decode()
    settings = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert not [
        s
        for s in settings
        if s.startswith(("User=", "DynamicUser=", "AmbientCapabilities=", "SupplementaryGroups="))
    ]
    assert "WantedBy=default.target" in settings
    steps = "\n".join(next_steps(tmp_path))
    assert "~/.config/systemd/user/kvwatch.service && systemctl --user enable --now kvwatch" in steps
