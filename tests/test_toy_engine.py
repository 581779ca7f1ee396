"""Adding an engine is one package plus one registry line: a toy engine from a temporary package.

The package (written to tmp_path, put on sys.path) holds all the toy knows: its line format and parser,
one metric family, its request records (engine-neutral `RequestRecord`s, which `prefix_reuse_broken`
judges), its docs row and a golden. It is registered with one line, never by editing a kvwatch file,
then its log goes through the real `kvwatch replay`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_docs import code, tables

from kvwatch.cli import main
from kvwatch.engines import BUILTIN, ENGINES, detect_engine

PACKAGE = '''
"""A toy engine: `[toy] t=<RFC 3339 time> request slot=N prompt=N cached=N` lines."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kvwatch.engines.base import Engine
from kvwatch.engines.families import Family
from kvwatch.model import RequestRecord
from kvwatch.parsers.base import ParseError
from kvwatch.times import parse_rfc3339

LINE = re.compile(r"^\\[toy\\] t=(\\S+) request slot=(\\d+) prompt=(\\d+) cached=(\\d+)$")
DOCS_ROW = "| `kvwatch_toy_requests_total` | counter | source | requests | toy requests completed |"


@dataclass(slots=True)
class ToyRequest(RequestRecord):
    """One toy request (an engine-neutral request record)."""


MARKERS = ("[toy] ",)


def looks_like(head):
    return head.startswith("[toy] t=")


class ToyParser:
    markers = MARKERS

    def __init__(self, source, settings, options):
        self.source = source

    def parse(self, line):
        if "[toy] " not in line.text:
            return None
        match = LINE.search(line.text)
        when = parse_rfc3339(match.group(1)) if match else None
        if match is None or when is None:
            return ParseError("toy: a torn request line")
        slot, prompt, cached = (int(g) for g in match.groups()[1:])
        return [ToyRequest(self.source, when, prompt, cached, slot=slot, conversation=f"slot {slot}")]

    def flush(self):
        return []


def metrics(registry):
    requests = Family("kvwatch_toy_requests", "Toy requests completed.", "counter", ("source",), registry)
    return {ToyRequest: lambda event: requests.inc((event.source,), 1)}


class Toy(Engine):
    """The toy ships its dashboard row and rules in its own package (capabilities.ShipsAssets)."""

    package = "toyengine"


ENGINE = Toy(
    name="toy",
    display="Toy",
    home=__name__,  # (this module: MARKERS and looks_like)
    parser=ToyParser,
    events=(ToyRequest,),
    signals=frozenset({"server_requests"}),
    metrics=metrics,
)
'''

#: The toy's dashboard row (its row panel first) and rules, as files of its package.
DASHBOARD = [
    {"type": "row", "title": "Toy", "gridPos": {"h": 1, "w": 24, "x": 0, "y": 0}, "panels": []},
    {"type": "stat", "title": "Toy requests", "gridPos": {"h": 8, "w": 24, "x": 0, "y": 1}},
]
RULES = """\
groups:
  - name: kvwatch-cache
    rules:
      - alert: KvwatchToyIdle
        expr: rate(kvwatch_toy_requests_total[15m]) == 0
"""

#: Eight large prompts on slot 0, each reusing next to nothing: the prefix is broken.
LOG = "".join(
    f"[toy] t=2026-03-01T10:00:{second:02d}Z request slot=0 prompt=20000 cached={second * 3}\n"
    for second in range(0, 40, 5)
)

GOLDEN = """\
kvwatch_alert_firing{alert="prefix_reuse_broken",source="toy"} 1
kvwatch_lines_recognized_total{source="toy"} 8
kvwatch_lines_total{source="toy"} 8
kvwatch_lines_truncated_total{source="toy"} 0
kvwatch_parse_errors_total{source="toy"} 0
kvwatch_pinned_cache_share_ratio{source="toy"} 0.125
kvwatch_pinned_cache_tokens{source="toy"} 0
kvwatch_toy_requests_total{source="toy"} 8
ALERT 2026-03-01T10:00:20Z firing prefix_reuse_broken{source="toy"} warning: 4 of the last 4 prompts \
on slot 0 were large and re-processed in full (90 of 80000 tokens reused, 79910 computed again)
"""


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The toy's package on sys.path, registered (one line); the registry is restored afterwards."""
    package = tmp_path / "toyengine"
    package.mkdir()
    (package / "__init__.py").write_text(PACKAGE.lstrip())
    (package / "toy.golden").write_text(GOLDEN)
    (package / "dashboard.json").write_text(json.dumps(DASHBOARD))
    (package / "rules.yml").write_text(RULES)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toyengine", raising=False)
    import toyengine  # type: ignore[import-not-found]

    monkeypatch.setitem(ENGINES, "toy", toyengine.ENGINE)  # the one registry line
    return package


def test_a_toy_engine_replays_to_its_golden_and_fires_prefix_reuse_broken(
    toy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Detected from its log's head, parsed, counted and judged: the golden, with the existing alert."""
    log = tmp_path / "toy.log"
    log.write_text(LOG)
    assert "toy" == detect_engine(LOG)
    assert 0 == main(["replay", "--format", "golden", "--year", "2026", str(log)])
    out = capsys.readouterr().out
    assert (toy / "toy.golden").read_text() == out
    assert 'firing prefix_reuse_broken{source="toy"} warning' in out


def test_the_toy_docs_row_documents_the_family_it_exports(
    toy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The package's docs row names, as docs/metrics.md does, exactly the family the replay exposes."""
    import toyengine

    log = tmp_path / "toy.log"
    log.write_text(LOG)
    assert 0 == main(["replay", "--format", "prom", "--engine", "toy", str(log)])
    exposed = {
        line.split()[2]: line.split()[3]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("# TYPE kvwatch_toy_")
    }
    table = tables(
        "| metric | type | labels | unit | meaning |\n|---|---|---|---|---|\n" + toyengine.DOCS_ROW
    )
    assert exposed == {code(row[0]): row[1] for row in table[0][1:]}


def test_the_toy_row_and_rule_join_the_shipped_dashboard_and_rules(toy: Path) -> None:
    """Its package's dashboard row follows the last engine's, before kvwatch's own; its rule joins its group
    after the other engines' (the shipped files, once regenerated, would carry them)."""
    from kvwatch.assets.build import build, frame, shipped_parts

    built = build(frame(), shipped_parts())
    rows = [p["title"] for p in json.loads(built["kvwatch.json"])["panels"] if p["type"] == "row"]
    assert rows.index("Toy") == rows.index("Probes") - 1 == rows.index("Alerts") - 2
    assert rows.index("Toy") > rows.index("Gateway usage and pinned cache")
    cache = built["kvwatch-rules.yml"].split("  - name: kvwatch-relay")[0]
    toy_rule = "      - alert: KvwatchToyIdle\n        expr: rate(kvwatch_toy_requests_total[15m]) == 0\n\n"
    # (after every engine's rules, before kvwatch's own parts': the probe's)
    assert (
        cache.index("KvwatchPinnedCacheLength")
        < cache.index(toy_rule)
        < cache.index("KvwatchProbePrefixMiss")
    )


def test_the_toy_is_gone_once_unregistered() -> None:
    """Registration lasts as long as the fixture: the shipped engines are the registry's own."""
    assert BUILTIN == set(ENGINES)


def test_kvwatch_help_names_the_toy_as_every_engine(toy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kvwatch --help` names every registered engine, the toy too (from the registry, not a list kept
    in the help), and replay's `--engine` offers it."""
    import toyengine

    with pytest.raises(SystemExit):
        main(["--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert [] == [e.display for e in ENGINES.values() if e.display not in said]
    assert toyengine.ENGINE.display in said
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    assert "toy" in capsys.readouterr().out
