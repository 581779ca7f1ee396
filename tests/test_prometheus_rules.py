"""prometheus/kvwatch-rules.yml: promtool accepts the rules, and their unit tests (fires, silent) pass."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

PROMETHEUS = Path(__file__).resolve().parents[1] / "prometheus"
RULES = PROMETHEUS / "kvwatch-rules.yml"
RULE_TESTS = PROMETHEUS / "kvwatch-rules.test.yml"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    """Run promtool (Debian package `prometheus`); a missing promtool fails the test."""
    exe = shutil.which("promtool")
    assert exe is not None, "promtool not found: apt-get install prometheus"
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=120, check=False)


def test_promtool_check_rules() -> None:
    """`promtool check rules` accepts the rules file."""
    result = promtool("check", "rules", str(RULES))
    assert 0 == result.returncode, result.stdout + result.stderr


def test_promtool_test_rules() -> None:
    """Every rule's unit tests pass under `promtool test rules`."""
    result = promtool("test", "rules", str(RULE_TESTS))
    assert 0 == result.returncode, result.stdout + result.stderr


def test_every_rule_is_tested_and_annotated() -> None:
    """Each alert has a severity, a summary and a description, and the unit tests evaluate it."""
    rules = re.split(r"^      - alert: ", RULES.read_text(encoding="utf-8"), flags=re.M)[1:]
    names = {rule.split()[0] for rule in rules}
    tested = set(re.findall(r"^\s+alertname: (\w+)$", RULE_TESTS.read_text(encoding="utf-8"), flags=re.M))
    incomplete = [
        rule.split()[0]
        for rule in rules
        if not all(
            re.search(rf"^ +{key}: ", rule, flags=re.M) for key in ("severity", "summary", "description")
        )
    ]
    assert (len(rules), names, []) == (len(names), tested, incomplete)
