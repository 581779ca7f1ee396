"""Test helpers for the metric contract: an exposition's families against docs/contract/metrics.txt, and
`promtool check metrics` on it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CONTRACT = Path(__file__).resolve().parents[1] / "docs" / "contract" / "metrics.txt"


def families(exposition: str) -> dict[str, tuple[str | None, set[str]]]:
    """Each family of a Prometheus text exposition: its `# TYPE` and the label names of its samples."""
    types = dict(line.split()[2:4] for line in exposition.splitlines() if line.startswith("# TYPE "))
    labels: dict[str, set[str]] = {}
    for line in exposition.splitlines():
        if line and not line.startswith("#"):
            name, _, rest = line.partition("{")
            labels.setdefault(name, set()).update(p.split("=")[0] for p in rest.split("}")[0].split(",") if p)
    return {name: (types.get(name), names) for name, names in labels.items()}


def check_contract_rows(exposition: str, prefixes: tuple[str, ...], skip: tuple[str, ...] = ()) -> int:
    """Assert that every contract row whose name starts with one of `prefixes` (and none of `skip`) is a
    family of the exposition with the row's type and label names; how many rows the prefixes name."""
    found = families(exposition)
    rows = [row.split() for row in CONTRACT.read_text().splitlines() if row.startswith(prefixes)]
    for name, kind, labels in rows:
        if not (skip and name.startswith(skip)):
            assert (kind, set(labels.split(","))) == found.get(name), name
    return len(rows)


def check_promtool_clean(exposition: str) -> None:
    """Assert that `promtool check metrics` reports nothing on the exposition."""
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool (Debian package prometheus) must be installed"
    done = subprocess.run(
        [promtool, "check", "metrics"], input=exposition, capture_output=True, text=True, check=False
    )
    assert (0, "", "") == (done.returncode, done.stdout, done.stderr)
