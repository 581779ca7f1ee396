"""The code base stays ruff- and mypy-clean, and the pipeline's layering holds."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run a tool from the repository root."""
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_check_and_format() -> None:
    """`ruff check` and `ruff format --check` find nothing."""
    ruff = (sys.executable, "-m", "ruff")  # the test environment's own, on PATH or not
    check = run(*ruff, "check", "kvwatch", "tests", "bench", "scripts")
    fmt = run(*ruff, "format", "--check", "kvwatch", "tests", "bench", "scripts")
    assert (0, 0) == (check.returncode, fmt.returncode), check.stdout + fmt.stdout


def test_mypy_strict() -> None:
    """mypy --strict (configured in pyproject.toml) finds nothing."""
    done = run(sys.executable, "-m", "mypy")
    assert 0 == done.returncode, done.stdout


def imports_of(path: Path) -> set[str]:
    """Top-level module names a file imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_parsers_and_detectors_are_pure() -> None:
    """Parsers and detectors import neither prometheus_client nor requests nor threads."""
    forbidden = {"prometheus_client", "requests", "threading", "socket", "time"}
    offenders = {
        str(path.relative_to(ROOT)): sorted(imports_of(path) & forbidden)
        for folder in ("parsers", "detectors")
        for path in (ROOT / "kvwatch" / folder).glob("*.py")
        if imports_of(path) & forbidden
    }
    assert {} == offenders
