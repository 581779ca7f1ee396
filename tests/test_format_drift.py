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
from kvwatch.parsers.drift import sanitise

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
