"""docs/architecture.md names only what exists, and maps every top-level module and folder of kvwatch/."""

from __future__ import annotations

import importlib
import re

from daemon_helpers import ROOT

MAP = ROOT / "docs" / "architecture.md"
#: A repository path in a backticked span (`<name>` placeholders are templates, not paths).
PATH = re.compile(r"\b(?:kvwatch|tests|scripts|bench|samples|docs)/[\w./<>-]*")
#: A dotted kvwatch name: a module, or a module and the attributes under it.
DOTTED = re.compile(r"\bkvwatch(?:\.\w+)+")


def spans() -> list[str]:
    """Every backticked span of the map, code blocks left out."""
    text = re.sub(r"^```.*?^```", "", MAP.read_text(encoding="utf-8"), flags=re.M | re.S)
    return re.findall(r"`([^`\n]+)`", text)


def resolves(dotted: str) -> bool:
    """The longest importable module prefix of `dotted` holds the rest as attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def test_every_path_the_map_names_exists() -> None:
    """Each backticked repository path is a file or folder of the checkout."""
    named = {p.rstrip(".") for span in spans() for p in PATH.findall(span) if "<" not in p}
    assert named, "the map names no path"
    assert [] == sorted(p for p in named if not (ROOT / p).exists())


def test_every_dotted_name_the_map_names_imports() -> None:
    """Each backticked `kvwatch.x.y` is a module, or an attribute of one."""
    named = {d for span in spans() for d in DOTTED.findall(span)}
    assert named, "the map names no module"
    assert [] == sorted(d for d in named if not resolves(d))


def test_the_map_names_every_top_level_module_and_folder() -> None:
    """A new module or folder at the top of kvwatch/ gets its place in the map."""
    text = MAP.read_text(encoding="utf-8")
    top = [
        f"kvwatch/{p.name}{'/' if p.is_dir() else ''}"
        for p in (ROOT / "kvwatch").iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.suffix == ".py" and not p.name.startswith("__"))
    ]
    assert [] == sorted(name for name in top if f"`{name}" not in text)


def test_the_readme_and_the_docs_index_link_the_map() -> None:
    """The map is reachable from the front page and the index."""
    assert "(docs/architecture.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(architecture.md)" in (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
