"""The code base stays ruff- and mypy-clean, and the pipeline's layering holds."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
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


def module_name(path: Path) -> str:
    """`kvwatch/daemon/feed.py` -> `kvwatch.daemon.feed`; a package's `__init__.py` is the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def every_import(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import a module holds, wherever it stands: its body, a function's (run on first use) or a
    type checker's block (a cycle through any of them is still a loop of the design)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def imported(node: ast.Import | ast.ImportFrom, modules: set[str]) -> set[str]:
    """The kvwatch modules an import statement names (kvwatch imports absolutely, never relatively)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        names = [f"{node.module}.{alias.name}" for alias in node.names]
    found = set()
    for name in names:
        module = name
        while module and module not in modules:  # `from kvwatch.x import Name`: the module kvwatch.x
            module = module.rpartition(".")[0]
        if module:
            found.add(module)
    return found


def import_graph() -> dict[str, set[str]]:
    """kvwatch's modules, each with the kvwatch modules it imports (anywhere in it).

    Importing `a.b.c` from outside package `a.b` runs `a/b/__init__.py` first, so that is an edge too.
    """
    paths = {module_name(path): path for path in (ROOT / "kvwatch").rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        edges = graph.setdefault(name, set())
        for node in every_import(ast.parse(path.read_text())):
            for target in imported(node, set(paths)):
                parts = target.split(".")
                outers = {".".join(parts[:i]) for i in range(1, len(parts))}
                edges |= {target} | {o for o in outers if not (name == o or name.startswith(o + "."))}
        edges.discard(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle() -> None:
    """No kvwatch module imports itself back, through any chain or package `__init__`, at module level
    or inside a function."""
    graph = import_graph()
    assert {"kvwatch.daemon.daemon", "kvwatch.config.load"} <= graph["kvwatch.daemon"] | graph[
        "kvwatch.config"
    ]
    assert "kvwatch.config" in graph["kvwatch.daemon.daemon"]  # (through the package's __init__)
    assert [] == cycles(graph)


def room_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph seen as rooms: kvwatch's top-level packages and modules (`kvwatch.sources`,
    `kvwatch.model`), each with the rooms it imports; the package's own `__init__` (its version and
    port, imported by all) is none."""

    def room(module: str) -> str | None:
        parts = module.split(".")
        return ".".join(parts[:2]) if len(parts) > 1 else None

    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        here = room(module)
        if here is not None:
            edges = rooms.setdefault(here, set())
            edges |= {r for r in map(room, targets) if r is not None and r != here}
    return rooms


def test_no_import_runs_back_up_between_rooms() -> None:
    """kvwatch's rooms import each other in no loop, so each stands above all it imports and no import
    runs from a lower stage up to a higher one (0 today: hold it). The sources, for one, read their
    settings from their own value types, never from the config, whose loader imports the engines."""
    rooms = room_graph(import_graph())
    assert {"kvwatch.sources", "kvwatch.engines"} <= rooms["kvwatch.config"]
    assert "kvwatch.config" not in rooms["kvwatch.sources"]
    assert [] == cycles(rooms)


def test_the_rooms_of_a_loop_of_modules_loop_too() -> None:
    """Modules of two rooms that import each other through other modules make the rooms a loop."""
    graph = {"kvwatch.a.x": {"kvwatch.b.y"}, "kvwatch.b.y": {"kvwatch.b.z"}, "kvwatch.b.z": {"kvwatch.a"}}
    assert [["kvwatch.a", "kvwatch.b"]] == cycles(room_graph(graph))
    assert [] == cycles(room_graph({"kvwatch.a.x": {"kvwatch.b.y", "kvwatch"}, "kvwatch": {"kvwatch.a"}}))


def engine_packages() -> set[str]:
    """The engines' packages (kvwatch/engines/<name>/)."""
    return {f"kvwatch.engines.{p.parent.name}" for p in (ROOT / "kvwatch" / "engines").glob("*/__init__.py")}


def test_no_module_outside_the_engines_imports_or_names_an_engine() -> None:
    """An engine's knowledge stays in its package: no module outside kvwatch/engines/ imports one (the
    registry, kvwatch/engines/__init__.py, reaches them) or names one's module or path."""
    engines = engine_packages()
    assert {"kvwatch.engines.vllm", "kvwatch.engines.llamacpp"} <= engines
    graph = import_graph()
    named = re.compile(r"kvwatch[./]engines[./](" + "|".join(e.rpartition(".")[2] for e in engines) + r")\b")
    offenders = {}
    for path in (ROOT / "kvwatch").rglob("*.py"):
        module = module_name(path)
        if module == "kvwatch.engines" or module.startswith("kvwatch.engines."):
            continue
        imports = sorted(t for t in graph[module] if any(t == e or t.startswith(e + ".") for e in engines))
        names = sorted({m.group(0) for m in named.finditer(path.read_text())})
        if imports or names:
            offenders[module] = imports + names
    assert {} == offenders


def test_windows_and_detectors_import_nothing_of_the_engines() -> None:
    """Windows and detectors are handed what they know of the engines (kvwatch.windows.facts): no module
    of theirs imports the registry, its capabilities or an engine (at module level or in a function)."""
    graph = import_graph()
    judged = sorted(
        m for m in graph if m.split(".")[:2] in (["kvwatch", "windows"], ["kvwatch", "detectors"])
    )
    assert {"kvwatch.windows.window", "kvwatch.detectors.no_signal"} <= set(judged)
    offenders = {
        m: sorted(t for t in graph[m] if t == "kvwatch.engines" or t.startswith("kvwatch.engines."))
        for m in judged
    }
    assert {} == {m: found for m, found in offenders.items() if found}


def test_the_cycle_test_sees_imports_inside_functions() -> None:
    """An import inside a function body is an edge of the graph (the registry loaded on first use)."""
    tree = ast.parse("def f():\n    from kvwatch.engines import ENGINES\n")
    found = [node.module for node in every_import(tree) if isinstance(node, ast.ImportFrom)]
    assert ["kvwatch.engines"] == found


def test_cycles_finds_a_loop() -> None:
    """The cycle finder sees a loop through three modules and none in a chain."""
    assert [["a", "b", "c"]] == cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert [] == cycles({"a": {"b"}, "b": {"c"}})


def test_no_module_family_in_one_folder() -> None:
    """No folder under kvwatch/ holds three or more `<prefix>_<something>.py` modules: they want a package."""
    families = set()
    for folder in [ROOT / "kvwatch", *(p for p in (ROOT / "kvwatch").rglob("*") if p.is_dir())]:
        prefixes = Counter(p.stem.split("_")[0] for p in folder.glob("*.py") if "_" in p.stem.strip("_"))
        families |= {(str(folder.relative_to(ROOT)), prefix) for prefix, n in prefixes.items() if n >= 3}
    assert set() == families, "a family of modules wants a package of its own"
