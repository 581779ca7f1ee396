"""README.md and docs/ against the code: the alerts, the config keys, the metric families, links, length.

Every list compared here is read from the code (detector modules, the config reader, the registries the
daemon and replay expose), so a new alert, key or metric that the docs miss fails a test.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from corpora import sample_logs
from daemon_helpers import Kvwatch

from kvwatch import cli
from kvwatch.config import parse_config
from kvwatch.config.fields import Fields
from kvwatch.config.types import AlertingConfig, ServerConfig
from kvwatch.detectors import DetectorSettings
from kvwatch.notify.testalert import TEST_ALERT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 210
#: A metric name as the docs write it (kvwatch's own, and the process and platform collectors').
METRIC = re.compile(r"`((?:kvwatch|process|python)_[a-z0-9_]+)")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def pages() -> list[Path]:
    """README.md and every docs page a user reads (docs/contract holds machine-read files)."""
    return [README, *sorted(DOCS.glob("*.md"))]


def tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table of `text`: its rows (header first, separator left out), each a list of cells."""
    found: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                current.append(cells)
        elif current:
            found.append(current)
            current = []
    return found


def code(cell: str) -> str | None:
    """The backticked name a cell starts with, None if it starts otherwise."""
    match = re.match(r"`([^`]+)`", cell)
    return match.group(1) if match else None


def section(text: str, heading: str) -> str:
    """The text under the `## heading` line, up to the next `## ` heading."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no '## {heading}' section"
    return match.group(1)


def fired_alerts() -> dict[str, set[str]]:
    """Each alert a detector can fire and its severities, read from the Finding(...) calls in detectors/."""
    alerts: dict[str, set[str]] = {}
    for path in sorted((ROOT / "kvwatch" / "detectors").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Finding":
                given = {k.arg: k.value for k in node.keywords}
                name, severity = given["alert"], given["severity"]
                assert isinstance(name, ast.Constant) and isinstance(severity, ast.Constant), path
                alerts.setdefault(name.value, set()).add(severity.value)
    return alerts


def test_the_alerts_found_are_the_detectors_that_can_be_configured() -> None:
    """Every alert name in the detector code is a `[detectors.<name>]` table, and every table fires one."""
    assert set(fired_alerts()) == {f.name for f in dataclasses.fields(DetectorSettings)}


def test_readme_alert_table_lists_exactly_the_alerts_the_code_fires() -> None:
    """The README's alert table: one row per alert, with the severities its detector gives it."""
    rows = [row for table in tables(section(README.read_text(), "Alerts")) for row in table[1:]]
    listed = {code(row[0]): set(re.findall(r"info|warning|critical", row[1])) for row in rows}
    assert None not in listed, rows
    assert len(listed) == len(rows), "an alert is listed twice"
    assert fired_alerts() == listed


def test_alerts_page_has_a_section_per_alert() -> None:
    """docs/alerts.md: a `## \\`name\\`` section per alert, and none for an alert that does not exist."""
    headings = re.findall(r"^## `([a-z_]+)`", (DOCS / "alerts.md").read_text(), re.M)
    assert sorted(fired_alerts()) == sorted(headings)


def schema_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> set[str]:
    """Every key the config reader accepts, as `table.key` (`source.container`, `source.usage.cached`).

    Each table is read by a Fields that knows, when done, every key it asked for; a config with one of
    each table and source type is read with Fields.done recording them. Detector settings are the
    fields of each detector's Settings, which `prepare` checks the tables against.
    """
    seen: set[str] = set()
    done = Fields.done

    def record(fields: Fields) -> None:
        where = re.sub(r"\[\d+\]", "", fields.where)
        seen.update(f"{where}.{key}" if where else key for key in fields.asked)
        done(fields)

    monkeypatch.setattr(Fields, "done", record)
    probe: dict[str, Any] = {
        "state_dir": "state",
        "server": {},
        "source": [
            {"name": "f", "type": "file", "engine": "usage", "path": "x.log", "usage": {}},
            {"name": "d", "type": "docker", "container": "c"},
            {"name": "j", "type": "journald", "unit": "u.service"},
            {"name": "s", "type": "stdin"},
            {"name": "p", "type": "pods", "select": [{"engine": "vllm", "roles": {"r": "*"}}]},
        ],
        "notifier": [
            {
                "name": "n",
                "type": "webhook",
                "url": "https://example.invalid/hook",
                "basic_auth": {"username": "u", "password_file": "p"},
            }
        ],
        "silence": [{"matchers": {"alert": "no_signal"}, "ends_at": "2030-01-01T00:00:00Z"}],
        "alerting": {},
        "probe": [{"name": "p", "url": "http://127.0.0.1:1/v1", "headers": {"X-A": "b"}}],
        "log": {},
    }
    parse_config(probe, tmp_path)
    for detector in dataclasses.fields(DetectorSettings):
        settings = detector.default_factory()  # type: ignore[misc]  # (a default_factory field)
        seen.update(f"detectors.{detector.name}.{s.name}" for s in dataclasses.fields(settings))
    return {key for key in seen if not any(other.startswith(key + ".") for other in seen)}


def config_rows() -> dict[str, list[str]]:
    """docs/configuration.md's key tables (first header cell `key`): each key's row."""
    rows: dict[str, list[str]] = {}
    for table in tables((DOCS / "configuration.md").read_text()):
        if table[0][0] != "key":
            continue
        for row in table[1:]:
            key = code(row[0])
            assert key is not None and key not in rows, row
            rows[key] = row
    return rows


def test_configuration_page_documents_every_key_and_no_other(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/configuration.md has a row for each key the config reader accepts, and for no other."""
    keys = schema_keys(monkeypatch, tmp_path)
    assert {"source.container", "source.usage.cached", "detectors.hit_rate_gap.min_gap"} <= keys
    documented = set(config_rows())
    assert sorted(keys - documented) == [], "keys missing from docs/configuration.md"
    assert sorted(documented - keys) == [], "docs/configuration.md names keys that do not exist"


def test_configuration_page_gives_the_code_defaults() -> None:
    """The default column of every detector, `[server]` and `[alerting]` key is the code's default."""
    defaults: dict[str, object] = {}
    for detector in dataclasses.fields(DetectorSettings):
        settings = detector.default_factory()  # type: ignore[misc]  # (a default_factory field)
        given = dataclasses.asdict(settings)
        defaults.update({f"detectors.{detector.name}.{k}": v for k, v in given.items()})
    defaults.update({f"server.{k}": v for k, v in dataclasses.asdict(ServerConfig()).items()})
    defaults.update({f"alerting.{k}": v for k, v in dataclasses.asdict(AlertingConfig()).items()})
    rows = config_rows()
    for key, default in defaults.items():
        cell = rows[key][2].strip("`")
        value = None if cell == "none" else tomllib.loads(f"v = {cell}")["v"]
        assert (key, value) == (key, default)


def exposed_families(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """Name and type of every family on a running daemon's /metrics and in a replay of every sample."""
    daemon = Kvwatch(["--stdin", "--engine", "vllm"], tmp_path / "daemon.log", stdin=subprocess.PIPE)
    try:
        _, _, body = daemon.get("/metrics")
    finally:
        assert daemon.proc.stdin is not None
        daemon.proc.stdin.close()
        assert daemon.stop() == 0
    logs = [str(p) for p in sample_logs(rotated=False)]
    assert cli.main(["replay", "--format", "prom", "--year", "2026", *logs]) == 0
    body += capsys.readouterr().out
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", body, re.M))


@pytest.mark.slow  # a daemon and a replay of every sample: ~5 s
def test_metrics_page_lists_every_family_with_its_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/metrics.md: a row per exposed family with its type; no page names a metric that does not exist."""
    exposed = exposed_families(tmp_path, capsys)
    assert {"kvwatch_lines_total", "kvwatch_notifications_total", "kvwatch_source_up"} <= set(exposed)
    rows = [row for t in tables((DOCS / "metrics.md").read_text()) if t[0][0] == "metric" for row in t[1:]]
    documented = {code(row[0]): row[1] for row in rows}
    assert None not in documented, rows
    assert exposed == documented
    names = set(exposed) | {n + s for n, t in exposed.items() if t == "histogram" for s in HISTOGRAM_SUFFIXES}
    names.add(TEST_ALERT)  # (an alert name that looks like a metric's)
    for page in pages():
        unknown = sorted(set(METRIC.findall(page.read_text())) - names)
        assert unknown == [], f"{page.relative_to(ROOT)} names metrics that do not exist"


def test_every_relative_link_resolves_to_a_file_in_the_repository() -> None:
    """Links in README.md and docs/*.md to anything but a URL or an anchor point at a file of the repo."""
    checked = 0
    for page in pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:|#", target):
                continue
            path = (page.parent / target.split("#", 1)[0]).resolve()
            assert path.is_relative_to(ROOT) and path.exists(), f"{page.relative_to(ROOT)}: {target}"
            checked += 1
    assert checked > len(pages())


def test_readme_is_a_front_page() -> None:
    """README.md stays short: the reference lives in docs/."""
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES
    assert "## Alerts" in lines


def test_every_list_of_engines_users_read_is_the_registrys() -> None:
    """docs/replay.md's synopsis and `tried:` example, docs/configuration.md's `source.engine` row and
    the example config's `engine:` comment list every registered engine, in the registry's order."""
    from kvwatch.engines import choices, names

    replay = (DOCS / "replay.md").read_text(encoding="utf-8")
    assert f"[--engine {'|'.join(choices())}]" in replay
    assert f"(tried: {', '.join(names())})" in replay
    configuration = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert f"| `source.engine` | {', '.join(f'`{c}`' for c in choices())}" in configuration
    example = (ROOT / "kvwatch" / "assets" / "kvwatch.example.toml").read_text(encoding="utf-8")
    comment = " ".join(line.lstrip("# ") for line in example.splitlines() if line.startswith("#"))
    assert f"`engine`: {' | '.join(choices())} (default" in comment
