"""pyproject.toml's dependencies against kvwatch/'s imports: each declared is used, each used is declared."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def normal(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> dict[str, str]:
    """Each runtime dependency's normalised name -> its requirement line."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    out = {}
    for requirement in project["dependencies"]:
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        assert name is not None, requirement
        out[normal(name.group(0))] = requirement
    return out


def imported() -> set[str]:
    """The top-level names kvwatch/ imports that are neither the standard library nor kvwatch."""
    names = set()
    for path in (ROOT / "kvwatch").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.partition(".")[0])
    return {n for n in names if n != "kvwatch" and n not in sys.stdlib_module_names}


def distributions(module: str) -> set[str]:
    """The installed distributions that provide top-level `module` (its own name if none is installed)."""
    found = importlib.metadata.packages_distributions().get(module)
    return {normal(d) for d in found} if found else {normal(module)}


def test_every_third_party_import_is_a_declared_dependency() -> None:
    deps = declared()
    undeclared = sorted(m for m in imported() if not distributions(m) & set(deps))
    assert undeclared == [], "imported by kvwatch/ but not in [project] dependencies"


def test_every_declared_dependency_is_imported_by_kvwatch() -> None:
    used = set().union(*(distributions(m) for m in imported()))
    unused = sorted(line for name, line in declared().items() if name not in used)
    assert unused == [], "declared in [project] dependencies but imported nowhere in kvwatch/"


def test_the_operations_page_says_why_each_dependency_is_there() -> None:
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text.partition("\n## Dependencies\n")[2].partition("\n## ")[0]
    listed = {normal(n) for n in re.findall(r"^\| `([A-Za-z0-9._-]+)` \|", section, re.MULTILINE)}
    assert listed == set(declared())


def test_the_import_scan_finds_third_party_modules_and_maps_them_to_distributions() -> None:
    names = imported()
    assert {"prometheus_client", "requests", "watchdog"} <= names
    assert "re" not in names and "kvwatch" not in names
    assert distributions("yaml") == {"pyyaml"}  # an import name that differs from its distribution's
