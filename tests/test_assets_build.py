"""kvwatch.assets.build: the shipped dashboard and rules files are the assembly of their parts."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from daemon_helpers import ROOT

from kvwatch.assets import SHIPPED
from kvwatch.assets.build import (
    DASHBOARD,
    PARTS,
    REGENERATE,
    RULE_TESTS,
    RULES,
    Part,
    build,
    build_dashboard,
    build_rules,
    frame,
    shipped_parts,
)
from kvwatch.engines import ENGINES

#: Where each assembled file is in the repository (grafana/kvwatch.json, prometheus/...).
IN_REPO = {name: where for name, where in SHIPPED.items() if "/" in where}

FRAME = Part(
    "frame",
    json.dumps({"title": "t", "panels": [], "version": 1}),
    "# header\n#\ngroups:\n  - name: first\n    rules: []\n\n  - name: second\n    rules: []\n",
    "# tests\nrule_files:\n  - kvwatch-rules.yml\ntests:\n",
)


def row(title: str) -> dict[str, Any]:
    """A row panel at the top of its part."""
    return {"type": "row", "title": title, "gridPos": {"h": 1, "w": 24, "x": 0, "y": 0}, "panels": []}


def panel(title: str, x: int, y: int, h: int) -> dict[str, Any]:
    """A panel of its part, `y` counted from the part's row."""
    return {"type": "stat", "id": 99, "title": title, "gridPos": {"h": h, "w": 12, "x": x, "y": y}}


def rules(*groups: tuple[str, str]) -> str:
    """A part's rules.yml: (group, alert name) pairs, one rule each."""
    return "groups:\n" + "".join(
        f"  - name: {group}\n    rules:\n      - alert: {alert}\n        expr: |\n          up == 0\n\n"
        for group, alert in groups
    )


def test_the_shipped_files_are_the_assembly_of_their_parts() -> None:
    """Each shipped file is byte for byte what the assembler makes of the engines' and kvwatch's parts."""
    for name, text in build(frame(), shipped_parts()).items():
        assert (ROOT / IN_REPO[name]).read_text(encoding="utf-8") == text, (
            f"{IN_REPO[name]} is not the assembly of its parts: run `{REGENERATE}`"
        )


def test_parts_come_in_registry_order_then_kvwatchs_own() -> None:
    """Every registered engine's part first (each with a dashboard row and rules), then kvwatch's own."""
    parts = shipped_parts()
    assert [*ENGINES, *PARTS] == [p.name for p in parts]
    assert all(p.dashboard is not None and p.rules is not None for p in parts[: len(ENGINES)])


def test_each_part_follows_the_last_with_ids_from_one() -> None:
    """Ids count from 1 over every panel (a part's own ids ignored, placed after the type); each part starts
    below the lowest panel of the one before; the frame's other keys keep their place."""
    one = Part("one", json.dumps([row("One"), panel("a", 0, 1, 8), panel("b", 12, 1, 4)]))
    two = Part("two", json.dumps([row("Two"), panel("c", 0, 1, 3)]))
    dashboard = json.loads(build_dashboard(FRAME.dashboard or "", [one, Part("none"), two]))
    assert ["title", "panels", "version"] == list(dashboard)
    placed = [(p["id"], p["title"], p["gridPos"]["y"]) for p in dashboard["panels"]]
    assert [(1, "One", 0), (2, "a", 1), (3, "b", 1), (4, "Two", 9), (5, "c", 10)] == placed
    assert all(["type", "id", "title", "gridPos"] == list(p)[:4] for p in dashboard["panels"])


def test_a_dashboard_part_without_its_row_first_is_refused_by_name() -> None:
    """A part's panels must open with its row (else it would join the row above)."""
    with pytest.raises(ValueError, match=r"^odd/dashboard.json: must be a list of panels, its row first$"):
        build_dashboard(FRAME.dashboard or "", [Part("odd", json.dumps([panel("a", 0, 0, 8)]))])


def test_rules_merge_by_group_in_the_frames_order_and_a_new_group_follows() -> None:
    """The frame's header and group order stay; each part's rules join their group in part order; a group
    the frame lacks comes after its groups; the text parses to exactly that."""
    parts = [
        Part("one", rules=rules(("second", "OneB"), ("first", "OneA"))),
        Part("two", rules=rules(("third", "TwoC"), ("first", "TwoA"))),
    ]
    text = build_rules(FRAME.rules or "", parts)
    assert text.startswith("# header\n#\ngroups:\n  - name: first\n    rules:\n      - alert: OneA\n")
    assert "          up == 0\n\n      - alert: TwoA\n" in text
    parsed = yaml.safe_load(text)
    assert [("first", ["OneA", "TwoA"]), ("second", ["OneB"]), ("third", ["TwoC"])] == [
        (g["name"], [r["alert"] for r in g["rules"]]) for g in parsed["groups"]
    ]


def test_a_rules_part_that_is_not_a_list_of_groups_is_refused_with_its_line() -> None:
    """A rule outside any group is an error naming the part and line."""
    with pytest.raises(ValueError, match=r"^odd/rules.yml: line 1: expected an item starting '- name:'$"):
        build_rules(FRAME.rules or "", [Part("odd", rules="groups:\n      - alert: Loose\n")])


def test_the_shipped_rules_parse_to_the_parts_rules_merged() -> None:
    """Read as YAML, the shipped rules and rule tests are the parts' own, merged (the text assembly loses
    nothing and invents nothing)."""
    parts = shipped_parts()
    merged: dict[str, list[Any]] = {g["name"]: [] for g in yaml.safe_load(frame().rules or "")["groups"]}
    for part in parts:
        for group in yaml.safe_load(part.rules or "groups: []")["groups"]:
            merged.setdefault(group["name"], []).extend(group["rules"])
    shipped = yaml.safe_load((ROOT / IN_REPO[RULES]).read_text(encoding="utf-8"))
    assert merged == {g["name"]: g["rules"] for g in shipped["groups"]}
    tests = [t for part in parts if part.rule_tests for t in yaml.safe_load(part.rule_tests)["tests"]]
    assert tests == yaml.safe_load((ROOT / IN_REPO[RULE_TESTS]).read_text(encoding="utf-8"))["tests"]
    assert DASHBOARD in build(frame(), parts)
