"""The replay room has one door: only the command line enters kvwatch/replay/, and the daemon never
loads it."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kvwatch"
#: What may import the replay room from outside it: the command line (`kvwatch replay`, `--version`) and
#: the forensic report (`kvwatch report`, a replay rendered as a page).
DOORS = ("cli", "forensic")


def imported(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function (`from a import b` as `a.b` too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_only_the_command_line_imports_the_replay_room() -> None:
    """No module outside kvwatch/replay/ but the command line's and the report's imports kvwatch.replay or
    a part of it."""
    entering = []
    for path in sorted(PACKAGE.rglob("*.py")):
        inside = path.relative_to(PACKAGE).parts
        if inside[0] == "replay" or Path(*inside).with_suffix("").parts[0] in DOORS:
            continue
        if any(name == "kvwatch.replay" or name.startswith("kvwatch.replay.") for name in imported(path)):
            entering.append(str(path.relative_to(PACKAGE)))
    assert [] == entering


def test_the_daemon_loads_nothing_of_the_replay_room() -> None:
    """Importing the daemon and its sources (a fresh interpreter) loads no module of kvwatch.replay."""
    script = (
        "import sys\n"
        "import kvwatch.daemon.daemon, kvwatch.daemon.sources, kvwatch.sources.file, kvwatch.web.exporter\n"
        "print(sorted(m for m in sys.modules if m.startswith('kvwatch.replay')))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert "[]" == out.strip()


@pytest.mark.slow
def test_the_wheel_carries_the_compiled_loops_not_their_sources(tmp_path: Path) -> None:
    """`pip wheel .` builds each compiled loop (CI has a C compiler) and ships no `.c` file."""
    root = PACKAGE.parent
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(root)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("kvwatch-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert [] == [name for name in names if name.endswith(".c")]
    assert any(name.startswith("kvwatch/engines/lmcache/_rows.") and name.endswith(".so") for name in names)
