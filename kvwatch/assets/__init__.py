"""Files kvwatch ships for its users: example config, systemd units, Grafana dashboard, Prometheus rules.

The units, the dashboard and the rules live in the repository's top-level `systemd/`, `grafana/` and
`prometheus/` folders, where an administrator browsing it looks for them; this package links to them
(`kvwatch/assets/systemd` is `../../systemd`), so the wheel carries them byte for byte.
`kvwatch init DIR` writes them all into DIR (`write_assets`), side by side, under the names the docs
and the unit use.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

#: Every shipped file, in the order `kvwatch init` writes them: its name -> its place in this package.
SHIPPED = {
    "kvwatch.example.toml": "kvwatch.example.toml",
    "kvwatch.service": "systemd/kvwatch.service",
    "kvwatch-user.service": "systemd/kvwatch-user.service",
    "kvwatch-slack-webhook.conf": "systemd/kvwatch-slack-webhook.conf",
    "kvwatch.json": "grafana/kvwatch.json",
    "kvwatch-rules.yml": "prometheus/kvwatch-rules.yml",
    "kvwatch-rules.test.yml": "prometheus/kvwatch-rules.test.yml",
}
#: Every shipped file's name, in the order `kvwatch init` writes them.
ASSETS = tuple(SHIPPED)


def asset_bytes(name: str) -> bytes:
    """The shipped file `name`, byte for byte."""
    entry = resources.files(__name__)
    for part in SHIPPED[name].split("/"):
        entry = entry.joinpath(part)
    return entry.read_bytes()


def conflicts(directory: Path) -> list[Path]:
    """The files `write_assets` would overwrite in `directory` (a dangling link counts)."""
    return [
        directory / name for name in ASSETS if (directory / name).is_symlink() or (directory / name).exists()
    ]


def write_assets(directory: Path) -> list[Path]:
    """Write every asset into `directory` (made if missing), overwriting; the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in ASSETS:
        path = directory / name
        path.write_bytes(asset_bytes(name))
        written.append(path)
    return written


def next_steps(directory: Path) -> list[str]:
    """What to do with the written files, one command or action per line."""
    d = directory
    return [
        "next steps:",
        f"  1. cp {d / 'kvwatch.example.toml'} {d / 'kvwatch.toml'}  # then edit [[source]], [[notifier]]",
        f"  2. kvwatch check-config {d / 'kvwatch.toml'}",
        f"  3. install -m 0644 {d / 'kvwatch.service'} /etc/systemd/system/ && systemctl daemon-reload"
        " && systemctl enable --now kvwatch",
        f"     (Slack: install -D -m 0644 {d / 'kvwatch-slack-webhook.conf'}"
        " /etc/systemd/system/kvwatch.service.d/slack-webhook.conf)",
        "     (the unit runs /opt/kvwatch/bin/kvwatch with /etc/kvwatch/kvwatch.toml:"
        " `systemctl edit kvwatch` if yours differ)",
        f"     (a workstation, no root: install -D -m 0644 {d / 'kvwatch-user.service'}"
        " ~/.config/systemd/user/kvwatch.service && systemctl --user enable --now kvwatch)",
        f"  4. Grafana: Dashboards > New > Import, upload {d / 'kvwatch.json'}",
        f"  5. Prometheus: add {d / 'kvwatch-rules.yml'} to rule_files"
        f" (check: cd {d} && promtool test rules kvwatch-rules.test.yml)",
    ]
