"""format_drift: an engine's known lines with fields kvwatch does not know are read for what it knows,
counted by sanitised shape, and told as an info alert within 5 minutes of event time."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from corpora import SAMPLES

from kvwatch.cli import main
from kvwatch.engines import detect_engine, make_parser
from kvwatch.model import LogLine, UnreadFields
from kvwatch.parsers.base import ParserSettings
from kvwatch.parsers.drift import sanitise
from kvwatch.times import parse_rfc3339

# (0.1.14's batch lines are `. `-separated fixed shapes, not key lists)
SGLANG = sorted(p for p in SAMPLES.glob("sglang-*.log") if "v0-1-14" not in p.name)
_FIRST_STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[^\]]*\] [^\n]*#mystery-req-42")
_BATCH = re.compile(r"(Prefill batch|Decode batch)[^\n]*")


def replay(path: Path) -> dict[str, Any]:
    """`kvwatch replay --format json --year 2026` of a file."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert 0 == main(["replay", "--format", "json", "--year", "2026", str(path)])
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


def total(report: dict[str, Any], family: str) -> float:
    return sum(s["value"] for s in report["metrics"].get(family, []))


@pytest.mark.parametrize("sample", SGLANG, ids=lambda p: p.stem)
def test_a_new_key_on_every_batch_line_is_read_around_and_told(sample: Path, tmp_path: Path) -> None:
    """Every batch line of an SGLang sample gains a key of no release (`#mystery-req-42: 7`, in the
    middle or at the end): the figures kvwatch knows stay the same, the key is counted, and format_drift
    fires (info) within 5 minutes of the first such line, naming sglang and the shape without numbers."""
    text = sample.read_text(encoding="utf-8")
    mutated = _BATCH.sub(lambda m: m[0].replace(", ", ", #mystery-req-42: 7, ", 1), text)
    assert mutated != text
    path = tmp_path / sample.name
    path.write_text(mutated, encoding="utf-8")
    before, after = replay(sample), replay(path)
    for family in (
        "kvwatch_sglang_prefill_cached_tokens_total",
        "kvwatch_sglang_prefill_computed_tokens_total",
    ):
        assert total(before, family) == total(after, family), family
    assert total(after, "kvwatch_unknown_fields_total") > 0
    assert not [a for a in before["alerts"] if a["alert"] == "format_drift"]
    [drift] = [a for a in after["alerts"] if a["alert"] == "format_drift" and a["state"] == "firing"]
    assert drift["severity"] == "info" and drift["evidence"]["engine"] == "sglang"
    assert all(
        "#mystery-req-N" in shape and not re.search(r"\d", shape) for shape in drift["evidence"]["shapes"]
    )


def test_a_batch_line_of_an_unknown_shape_is_told_not_dropped(tmp_path: Path) -> None:
    """A `Prefill batch` line no release printed is a drifted shape: counted and alerted, numbers masked."""
    lines = [
        "[2026-06-04 10:00:00] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 0, "
        "token usage: 0.01, #running-req: 0, #queue-req: 0, cuda graph: False, "
        "input throughput (token/s): 10.00",
        "[2026-06-04 10:00:05] Prefill batch v2 | seqs=1 new=64 cached=1536",
    ]
    path = tmp_path / "drift.log"
    path.write_text("\n".join(lines) + "\n")
    report = replay(path)
    [drift] = [a for a in report["alerts"] if a["alert"] == "format_drift"]
    assert {"Prefill batch N | seqs=N new=N cached=N": 1} == drift["evidence"]["shapes"]


def test_sanitise_masks_numbers_and_cuts() -> None:
    """A shape holds no number, no id, no quoted text, and at most 120 characters."""
    assert "a N b N" == sanitise("a 12 b 3.5.x")
    assert 'Reqid: N, msg="…" cuda:N' == sanitise('Reqid:  chatcmpl-9f3a, msg="a prompt" cuda:0')
    assert 120 == len(sanitise("x" * 500))


#: Per engine: a sample, and mutations an upgrade could make of the lines kvwatch reads in it (a key
#: renamed, the wording changed), each with the engine that reads the drifted lines.
ENGINE_MUTATIONS = [
    ("vllm-aggregated.log", "Running: ", "Active: ", "vllm"),
    ("vllm-aggregated.log", "Avg prompt throughput", "Mean prompt throughput", "vllm"),
    (
        "vllm-offload-readback.log",
        "External prefix",
        "Remote prefix",
        None,
    ),  # (a label not needed: read around)
    ("llamacpp-healthy-two-slots.log", "new prompt, ", "fresh prompt, ", "llamacpp"),
    ("llamacpp-healthy-two-slots.log", "prompt eval time", "prompt processing time", "llamacpp"),
    ("ollama-0.29-debug.log", 'msg="loading cache slot"', 'msg="loading kv slot"', "ollama"),
    ("ollama-mlx-stuck.log", " cached=", " reused=", "ollama"),
    ("ollama-0.30-two-runners.log", "new prompt, ", "fresh prompt, ", "llamacpp"),  # (its runners')
    ("lmstudio-v0-4-mlx-healthy.log", "Prompt cache: using", "Prompt KV cache: using", "lmstudio"),
    ("lmstudio-v0-4-mlx-vision.log", "cached_tokens=", "hit_tokens=", "lmstudio"),
    ("lmcache-0.4.4-healthy.log", "LMCache hit tokens", "LMCache hits", "lmcache"),
    ("lmcache-0.4.4-healthy.log", "] Stored ", "] Saved ", "lmcache"),
    (
        "lmcache-0.5.6-sglang-0.5.9-healthy.log",
        "retrieve skipped: lookup=",
        "retrieve skipped: hit=",
        "lmcache",
    ),
    ("sglang-v0-5-17-agentic-broken.log", "#cached-token: ", "#cache-hit-token: ", "sglang"),
    ("usage-openai.log", '"usage":', '"token_usage":', "usage"),
]


def firing_drift(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for a in report["alerts"] if a["alert"] == "format_drift" and a["state"] == "firing"]


def first_unread(path: Path) -> float:
    """The event time of the first line of `path` its engine's parser could not wholly read."""
    text = path.read_text(encoding="utf-8")
    engine = detect_engine(text[:20000])
    assert engine is not None
    parser = make_parser(engine, path.stem, ParserSettings(year=2026))
    for line in text.splitlines():
        result = parser.parse(LogLine(path.stem, line, None))
        unread = [e.time for e in result if isinstance(e, UnreadFields)] if isinstance(result, list) else []
        if unread:
            return unread[0]
    raise AssertionError("no line unread")


@pytest.mark.parametrize(
    ("name", "old", "new", "engine"), ENGINE_MUTATIONS, ids=lambda v: str(v).strip(' "=:,]')
)
def test_an_engine_upgrade_that_renames_or_rewords_its_lines_is_told(
    name: str, old: str, new: str, engine: str | None, tmp_path: Path
) -> None:
    """Each engine's sample lines with a key renamed or their wording changed: format_drift fires (info)
    within 5 minutes of the first changed line's event time, naming the engine, each shape sanitised
    (no number, no id) and its count; replay's text lists the shapes with their exact counts. The
    original sample: no drift, nothing counted. (A label renamed that is not needed is read around.)"""
    text = (SAMPLES / name).read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new), encoding="utf-8")
    before, after = replay(SAMPLES / name), replay(path)
    assert not firing_drift(before) and total(before, "kvwatch_unknown_fields_total") == 0
    counted = total(after, "kvwatch_unknown_fields_total")
    assert counted > 0
    [drift] = firing_drift(after)
    assert drift["severity"] == "info"
    if engine is None:  # an unknown label on a line read for the rest
        assert list(drift["evidence"]["shapes"]) == ["stats +Remote prefix cache hit rate"]
        return
    assert drift["evidence"]["engine"] == engine
    shapes = drift["evidence"]["shapes"]
    assert all(not re.search(r"\d", shape) for shape in shapes), shapes
    assert any(word in shape for shape in shapes for word in re.findall(r"[A-Za-z_]{3,}", new)), shapes
    at = parse_rfc3339(drift["at"])
    assert at is not None and 0 <= at - first_unread(path) <= 300
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["replay", "--year", "2026", str(path)])
    listed = out.getvalue().split("lines not (wholly) read, by sanitised shape", 1)[1].split("\n\n")[0]
    assert sum(int(line.split()[0]) for line in listed.splitlines()[1:]) == counted
