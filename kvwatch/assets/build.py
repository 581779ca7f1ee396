"""The shipped dashboard and rules files, assembled from their parts: each engine's, then kvwatch's own.

A part is a package or folder that may hold `dashboard.json` (a list of Grafana panels, its row first,
`gridPos.y` counted from the row; ids are given here), `rules.yml` (`groups:` of rules, merged by group
name) and `rules.test.yml` (`tests:` for promtool). The frame (parts/frame/) holds the rest: the
dashboard around the panels, the rules file's header and group order, the rule tests' header. Parts come
in registry order (kvwatch.engines.ENGINES), then PARTS. `python -m kvwatch.assets.build` rewrites the
shipped files, grafana/kvwatch.json and prometheus/kvwatch-rules{,.test}.yml (`--check`: only say
whether they are current).
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvwatch.assets import SHIPPED
from kvwatch.engines import ENGINES
from kvwatch.engines.base import Engine
from kvwatch.engines.capabilities import ShipsAssets

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

#: kvwatch's own parts (kvwatch/assets/parts/<name>/), after the engines': probe, alerts relay, health.
PARTS = ("probe", "alerts", "health")
DASHBOARD = "kvwatch.json"
RULES = "kvwatch-rules.yml"
RULE_TESTS = "kvwatch-rules.test.yml"
REGENERATE = "python -m kvwatch.assets.build"

GROUP = "  - name: "
RULE = "      - "
TEST = "  - name: "


@dataclass(frozen=True)
class Part:
    """One contributor's files (None: it has none of that kind); `name` says whose in errors."""

    name: str
    dashboard: str | None = None
    rules: str | None = None
    rule_tests: str | None = None


def _read(folder: Traversable, name: str) -> str | None:
    entry = folder.joinpath(name)
    return entry.read_text(encoding="utf-8") if entry.is_file() else None


def part_of(name: str, folder: Traversable) -> Part:
    """The part whose files are in `folder`."""
    return Part(
        name, _read(folder, "dashboard.json"), _read(folder, "rules.yml"), _read(folder, "rules.test.yml")
    )


def _package(engine: Engine) -> str:
    """The package holding the engine's dashboard row and rules."""
    return engine.package if isinstance(engine, ShipsAssets) else f"kvwatch.engines.{engine.name}"


def shipped_parts() -> list[Part]:
    """Every registered engine's part (from its package), then kvwatch's own, in that order."""
    here = resources.files("kvwatch.assets")
    engines = [part_of(e.name, resources.files(_package(e))) for e in ENGINES.values()]
    return [*engines, *(part_of(name, here / "parts" / name) for name in PARTS)]


def frame() -> Part:
    """The frame: the dashboard without its panels, the rules file's and the rule tests' headers."""
    return part_of("frame", resources.files("kvwatch.assets") / "parts" / "frame")


def _numbered(panel: dict[str, Any], ids: Iterator[int], y0: int) -> dict[str, Any]:
    """The panel with the next id (placed after its type) and its y moved down by y0; rows' panels too."""
    out: dict[str, Any] = {}
    for key, value in panel.items():
        if key == "id":
            continue
        out[key] = value
        if key == "type":
            out["id"] = next(ids)
    if "gridPos" in panel:
        out["gridPos"] = {**panel["gridPos"], "y": panel["gridPos"]["y"] + y0}
    if panel.get("panels"):
        out["panels"] = [_numbered(inner, ids, y0) for inner in panel["panels"]]
    return out


def build_dashboard(frame_text: str, parts: Sequence[Part]) -> str:
    """The dashboard: the frame with every part's panels in order, ids from 1, each part below the last."""
    dashboard = json.loads(frame_text)
    ids = itertools.count(1)
    panels: list[dict[str, Any]] = []
    y0 = 0
    for part in parts:
        if part.dashboard is None:
            continue
        own = json.loads(part.dashboard)
        if not isinstance(own, list) or not own or own[0].get("type") != "row":
            raise ValueError(f"{part.name}/dashboard.json: must be a list of panels, its row first")
        panels.extend(_numbered(panel, ids, y0) for panel in own)
        y0 += max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in own)
    dashboard["panels"] = panels
    return json.dumps(dashboard, indent=2, ensure_ascii=False) + "\n"


def _header(text: str, key: str, where: str) -> tuple[list[str], list[str]]:
    """(the lines before `key:`, the lines after it)."""
    lines = text.splitlines()
    if f"{key}:" not in lines:
        raise ValueError(f"{where}: no top-level `{key}:`")
    at = lines.index(f"{key}:")
    return lines[:at], lines[at + 1 :]


def _blocks(lines: Iterable[str], start: str, where: str) -> list[list[str]]:
    """The items of a YAML list as raw lines, each from a line starting with `start` (trailing blanks cut)."""
    blocks: list[list[str]] = []
    for number, line in enumerate(lines, 1):
        if line.startswith(start):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
        elif line.strip() and not line.lstrip().startswith("#"):
            raise ValueError(f"{where}: line {number}: expected an item starting {start.strip()!r}")
    for block in blocks:
        while not block[-1].strip():
            block.pop()
    return blocks


def _groups(text: str, where: str) -> dict[str, list[list[str]]]:
    """group name -> its rules (raw lines each), in the order the text has them."""
    groups: dict[str, list[list[str]]] = {}
    for block in _blocks(_header(text, "groups", where)[1], GROUP, where):
        name = block[0].removeprefix(GROUP).strip()
        head = block[1].strip() if len(block) > 1 else ""
        if head not in ("rules:", "rules: []"):
            raise ValueError(f"{where}: group {name}: `rules:` must follow its name")
        groups.setdefault(name, []).extend(_blocks(block[2:], RULE, f"{where}: group {name}"))
    return groups


def build_rules(frame_text: str, parts: Sequence[Part]) -> str:
    """The rules file: the frame's header, then its groups (any new one after them), each holding the
    rules every part gives it, in part order; a blank line between rules and between groups."""
    header = _header(frame_text, "groups", "frame/rules.yml")[0]
    groups = _groups(frame_text, "frame/rules.yml")
    for part in parts:
        if part.rules is not None:
            for name, rules in _groups(part.rules, f"{part.name}/rules.yml").items():
                groups.setdefault(name, []).extend(rules)
    out = [*header, "groups:"]
    for number, (name, rules) in enumerate(groups.items()):
        out.extend([""] * (number > 0) + [f"{GROUP}{name}", "    rules:"])
        for index, rule in enumerate(rules):
            out.extend([""] * (index > 0) + rule)
    return "\n".join(out) + "\n"


def build_rule_tests(frame_text: str, parts: Sequence[Part]) -> str:
    """The rule tests: the frame's header, then every part's tests in part order, a blank line between."""
    header = _header(frame_text, "tests", "frame/rules.test.yml")[0]
    tests = [
        block
        for part in parts
        if part.rule_tests is not None
        for block in _blocks(
            _header(part.rule_tests, "tests", f"{part.name}/rules.test.yml")[1], TEST, part.name
        )
    ]
    out = [*header, "tests:"]
    for index, test in enumerate(tests):
        out.extend([""] * (index > 0) + test)
    return "\n".join(out) + "\n"


def build(framing: Part, parts: Sequence[Part]) -> dict[str, str]:
    """Shipped file name -> its text, assembled from the frame and the parts."""
    if framing.dashboard is None or framing.rules is None or framing.rule_tests is None:
        raise ValueError("the frame needs dashboard.json, rules.yml and rules.test.yml")
    return {
        DASHBOARD: build_dashboard(framing.dashboard, parts),
        RULES: build_rules(framing.rules, parts),
        RULE_TESTS: build_rule_tests(framing.rule_tests, parts),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Write the assembled files where they are shipped (grafana/, prometheus/: `kvwatch.assets.SHIPPED`);
    `--check`: exit 1 naming those that differ."""
    args = sys.argv[1:] if argv is None else list(argv)
    check = args == ["--check"]
    if args and not check:
        print(f"usage: {REGENERATE} [--check]", file=sys.stderr)
        return 2
    directory = Path(__file__).resolve().parent
    stale = []
    for name, text in build(frame(), shipped_parts()).items():
        path = directory / SHIPPED[name]
        if path.read_bytes() != text.encode("utf-8"):
            stale.append(name)
            if not check:
                path.write_bytes(text.encode("utf-8"))
    for name in stale:
        print(f"{'stale' if check else 'wrote'} {(directory / SHIPPED[name]).resolve()}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
