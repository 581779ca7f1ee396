"""Engines by configuration: `[[engine]]` tables read, checked and refused with their fields; a line
tried; the shipped examples replayed to their goldens; a catastrophic pattern cut off by its timeout
while a real daemon tails the file, the source still flowing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from daemon_helpers import Kvwatch, file_source, wait_until, write_config

from kvwatch.cli import main
from kvwatch.config import ConfigError, load_config
from kvwatch.engines import ENGINES
from kvwatch.engines.custom import make_engine
from kvwatch.engines.custom.events import CustomNotice
from kvwatch.engines.custom.parser import CustomParser
from kvwatch.model import LogLine, RequestRecord
from kvwatch.parsers.base import ParserSettings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "custom-engines"

#: A request log of a made-up server: `req t=<epoch> prompt=N cached=N conv=ID`, and a catastrophic
#: second branch, `(a+)+$`, that a line of a's ending in something else sends into backtracking.
REQUESTS = r"""
[[engine]]
name = "toyreq"
markers = ["req "]
time = { group = "t", format = "epoch" }
timeout_ms = 20

[[engine.pattern]]
name = "request"
event = "request"
regex = '''req t=(?P<t>[\d.]+) prompt=(?P<prompt>\d+) cached=(?P<cached>\d+) conv=(?P<conv>\w+)|(a+)+$'''
fields = { prompt_tokens = "prompt", cached_tokens = "cached", conversation = "conv" }
labels = { conv = 2 }
"""


def problems(tmp_path: Path, body: str) -> list[str]:
    """The problems `load_config` reports for a config of `body`."""
    path = write_config(tmp_path / "c.toml", body)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    return err.value.problems


def test_a_bad_pattern_is_reported_with_the_position_of_its_error(tmp_path: Path, registry: None) -> None:
    """A stray `)`: the field, the regex module's message and the position of the `)`."""
    body = REQUESTS.replace(r"prompt=(?P<prompt>\d+)", r"prompt=(?P<prompt>\d+))")
    at = body.split("regex = " + "'" * 3)[1].index("))") + 1
    found = problems(tmp_path, body)
    assert 1 == len(found)
    assert found[0].startswith(
        f"engine[0].pattern[0].regex: does not compile: unbalanced parenthesis at position {at}: "
    )
    assert r"prompt=(?P<prompt>\d+)⟨here⟩) cached" in found[0]


def test_a_missing_group_an_unknown_field_and_an_unbounded_label_are_each_named(
    tmp_path: Path, registry: None
) -> None:
    """Each problem names its exact field and says what is wrong; the engine is not registered."""
    body = REQUESTS.replace(
        'cached_tokens = "cached"', 'cached_tokens = "hits", hit_rate = "cached"'
    ).replace("labels = { conv = 2 }", 'labels = ["conv"]')
    found = problems(tmp_path, body)
    assert [
        "engine[0].pattern[0].fields.cached_tokens.group: the regex names no group 'hits' (it names: cached, "
        "conv, prompt, t)",
        "engine[0].pattern[0].fields.hit_rate: not a field of this event (its fields: prompt_tokens, "
        "cached_tokens, slot, conversation, entry)",
        "engine[0].pattern[0].labels: label 'conv' is unbounded: give its cap on distinct values, "
        "labels = { conv = 32 }",
    ] == found
    assert "toyreq" not in ENGINES


def test_a_built_in_engine_name_is_refused(tmp_path: Path, registry: None) -> None:
    """`name = "vllm"` would shadow the built-in engine: refused."""
    found = problems(tmp_path, REQUESTS.replace('name = "toyreq"', 'name = "vllm"'))
    assert ["engine[0].name: 'vllm' is a built-in engine's name; choose another"] == found
    assert "vLLM" == ENGINES["vllm"].display


def test_check_config_try_shows_what_a_line_yields(
    registry: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--try LINE`: per engine and pattern, the event with its fields, or why none."""
    line = (
        "2025-11-20T10:00:05.000000Z  INFO kvbm: KVBM [worker-3] Cache Hit Rates - Host: 0.0% (0/11998), "
        "Disk: 15.7% (1884/11998)"
    )
    assert 0 == main(["check-config", str(EXAMPLES / "kvbm.toml"), "--try", line, "--try", "no marker"])
    out = capsys.readouterr().out
    assert (
        "  kvbm / hit_rates: cache_rate at 2025-11-20T10:00:05Z: engine='worker-3', prompt_throughput=1.0"
    ) in out
    assert "external_hit=0.0" in out and "prefix_hit=0.157" in out
    assert "  kvbm: holds none of its markers ('Cache Hit Rates - Host:')" in out


@pytest.mark.parametrize("name", ["kvbm", "trtllm"])
def test_the_shipped_examples_replay_to_their_goldens(
    name: str, registry: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Detected by the config's engines from its head, read, judged: the example's golden, alerts too."""
    argv = ["replay", "--config", str(EXAMPLES / f"{name}.toml"), "--format", "golden"]
    assert 0 == main([*argv, str(EXAMPLES / f"{name}.log")])
    assert (EXAMPLES / f"{name}.golden").read_text() == capsys.readouterr().out


def test_label_values_beyond_the_cap_become_other_and_are_counted(tmp_path: Path, registry: None) -> None:
    """Three conversations with a cap of two: the third reads as "other", with an overflow notice."""
    spec = load_config(write_config(tmp_path / "c.toml", REQUESTS)).engines[0]
    parser = CustomParser(spec, dict(make_engine(spec).kinds), "s", ParserSettings())
    events = []
    for i, conv in enumerate(("a1", "b2", "c3")):
        result = parser.parse(LogLine("s", f"req t={100 + i} prompt=900 cached=800 conv={conv}"))
        assert isinstance(result, list)
        events += result
    records = [e for e in events if isinstance(e, RequestRecord)]
    assert [("a1",), ("b2",), ("other",)] == [e.labels for e in records]  # type: ignore[attr-defined]
    assert ["c3", 102.0] == [records[2].conversation, records[2].time]
    assert [("label_overflow", "conv")] == [(e.kind, e.label) for e in events if isinstance(e, CustomNotice)]


@pytest.mark.slow
def test_a_catastrophic_pattern_on_a_1_mib_line_is_cut_off_while_the_daemon_keeps_reading(
    tmp_path: Path, registry: None
) -> None:
    """`(a+)+$` on a 1 MiB line: the match is cut off by its timeout, counted and logged once; the
    lines after it are read as before."""
    log = tmp_path / "req.log"
    log.write_text("req t=1767225600 prompt=1000 cached=900 conv=x\n")
    cfg = write_config(tmp_path / "kv.toml", REQUESTS + file_source("app", log, engine="toyreq"))
    kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv.err")
    wait_until(lambda: kv.value("kvwatch_toyreq_requests_total", {"source": "app", "conv": "x"}) == 1)
    with log.open("a") as out:
        out.write("req " + "a" * ((1 << 20) - 8) + "!\n")  # (under the line cap: handed on whole)
        out.write("req " + "a" * ((1 << 20) - 8) + "!\n")
        out.write("req t=1767225660 prompt=2000 cached=1900 conv=x\n")
    wait_until(
        lambda: kv.value("kvwatch_toyreq_requests_total", {"source": "app", "conv": "x"}) == 2,
        timeout=60,
        what="the line after the cut-off ones",
    )
    assert 2 == kv.value("kvwatch_toyreq_patterns_cut_off_total", {"source": "app", "pattern": "request"})
    assert 2000 + 1000 == kv.value("kvwatch_toyreq_prompt_tokens_total", {"source": "app", "conv": "x"})
    assert 0 == kv.stop()
    said = kv.log.read_text()
    assert 1 == said.count("pattern request took longer than 20 ms on a line of 1048573 characters")


def test_check_config_lists_the_engines_a_config_defines(
    registry: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary names each configured engine, its patterns' events and its markers."""
    assert 0 == main(["check-config", str(EXAMPLES / "trtllm.toml")])
    out = capsys.readouterr().out
    assert "engines: 1 defined by [[engine]]\n" in out
    assert "  trtllm: 1 pattern(s) yielding cache_rate; markers '[TRT-LLM] [I] iter = '\n" in out


OFFLOAD = r"""
[[engine]]
name = "tier"
markers = ["tier stats"]
time = "none"

[[engine.pattern]]
event = "offload"
regex = '''tier stats stored=(?P<stored>[\d.]+)MiB loaded=(?P<loaded>\d+) lookups=(?P<lookups>\d+)'''
fields.store_bytes = { group = "stored", unit = "MiB", kind = "cumulative" }
fields.load_bytes = { group = "loaded", unit = "bytes", kind = "interval" }
fields.lookups = { group = "lookups", kind = "cumulative" }
"""


def test_cumulative_numbers_become_increases_and_a_drop_is_a_restart(tmp_path: Path, registry: None) -> None:
    """Cumulative MiB and lookups: the first line gives none, then the increase (in bytes); a value
    below the last is a restart, its increase the value itself; an interval number is taken as is."""
    spec = load_config(write_config(tmp_path / "c.toml", OFFLOAD)).engines[0]
    parser = CustomParser(spec, dict(make_engine(spec).kinds), "s", ParserSettings())
    got = []
    for i, (stored, loaded, lookups) in enumerate([("1.5", 7, 10), ("3.5", 0, 25), ("0.5", 3, 4)]):
        line = LogLine("s", f"tier stats stored={stored}MiB loaded={loaded} lookups={lookups}", 100.0 + i)
        result = parser.parse(line)
        assert isinstance(result, list)
        got += [(e.time, e.store_bytes, e.load_bytes, e.lookups) for e in result]  # type: ignore[attr-defined]
    # (the first line: only its interval load is known, so the store counts 0 beside it)
    assert [
        (100.0, 0, 7, None),
        (101.0, 2 * 1024 * 1024, 0, 15),
        (102.0, 512 * 1024, 3, 4),
    ] == got


def test_a_marker_line_no_pattern_matches_is_format_drift(
    tmp_path: Path, registry: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kvbm example's lines reworded (`Disk:` as `SSD:`, the engine named: none is recognised by its
    patterns now): they still hold the engine's marker and no
    pattern reads them, so format_drift fires naming the configured engine and the sanitised shape;
    the example as shipped fires none (its golden)."""
    log = tmp_path / "kvbm.log"
    log.write_text((EXAMPLES / "kvbm.log").read_text().replace("Disk: ", "SSD: "))
    argv = [
        "replay",
        "--config",
        str(EXAMPLES / "kvbm.toml"),
        "--engine",
        "kvbm",
        "--format",
        "json",
        str(log),
    ]
    assert 0 == main(argv)
    alerts = json.loads(capsys.readouterr().out)["alerts"]
    [drift] = [a for a in alerts if a["alert"] == "format_drift" and a["state"] == "firing"]
    assert drift["severity"] == "info" and drift["evidence"]["engine"] == "kvbm"
    [shape] = drift["evidence"]["shapes"]
    assert "Cache Hit Rates - Host: N% (N/N), SSD: N% (N/N)" in shape and not re.search(r"\d", shape)
