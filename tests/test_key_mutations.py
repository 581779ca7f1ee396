"""Parsers read by key and keep what they know: every engine whose lines are key lists (vLLM's stats
lines, Ollama's slog records, gateway usage JSON; SGLang's batch lines in tests/test_format_drift.py)
gives the same figures when its sample lines gain a key kvwatch does not know, in the middle or at the
end, or have their keys reordered. (llama.cpp's slot lines, LM Studio's and LMCache's messages are fixed
sentences with numbers, not key lists: a new shape of those is a new line, read where its source says.)"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from corpora import SAMPLES

from kvwatch.cli import main

Figures = dict[str, list[tuple[tuple[tuple[str, str], ...], float]]]


def figures(path: Path) -> Figures:
    """Every counter family but kvwatch's own line counts, from `kvwatch replay --format json`."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["replay", "--format", "json", "--year", "2026", str(path)])
    metrics = json.loads(out.getvalue())["metrics"]
    own = ("kvwatch_lines", "kvwatch_unknown", "kvwatch_parse")
    return {
        name: sorted((tuple(sorted(s["labels"].items())), s["value"]) for s in samples)
        for name, samples in metrics.items()
        if name.endswith("_total") and not name.startswith(own)
    }


_RUNNING = re.compile(r"(Running: \d+ reqs, )")


def vllm_extra_key(line: str) -> str:
    """A stats line with a key of no release after `Running:` and one at its end (before V0's `.`)."""
    if "Avg prompt throughput" not in line or "Running:" not in line:
        return line
    body = _RUNNING.sub(r"\1Mystery gauge: 3.5%, ", line.rstrip("\n"), count=1)
    end = "." if body.endswith(".") else ""
    return body.removesuffix(".") + ", Mystery counter: 12 widgets" + end + "\n"


def vllm_reordered(line: str) -> str:
    """A stats line whose `Running:` and `Waiting:` (V0: `Swapped:`) fields swap places."""
    return re.sub(r"(Running: \d+ reqs), ((?:Waiting|Swapped): \d+ reqs)", r"\2, \1", line)


def ollama_extra_key(line: str) -> str:
    """A slog record with an attribute of no release in front of its last one and at its end."""
    if " level=" not in line or " msg=" not in line:
        return line
    return line.rstrip("\n") + ' mystery=7 other="a b"\n'


def usage_reordered(line: str) -> str:
    """A usage JSON line with its keys reversed and an unknown key first."""
    text = line.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return line
    try:
        record = json.loads(text)
    except ValueError:
        return line
    return json.dumps({"zz_mystery": {"n": 1}, **dict(reversed(list(record.items())))}) + "\n"


def cases() -> list[tuple[Path, Callable[[str], str]]]:
    found: list[tuple[Path, Callable[[str], str]]] = []
    for path in sorted(SAMPLES.glob("vllm-*.log")):
        # (docker json-file: the lines are inside JSON strings; an engine that died at start printed
        # no stats line to mutate)
        if path.name != "vllm-docker.log" and "Avg prompt throughput" in path.read_text(encoding="utf-8"):
            found += [(path, vllm_extra_key), (path, vllm_reordered)]
    found += [(path, ollama_extra_key) for path in sorted(SAMPLES.glob("ollama-*.log"))]
    found += [(path, usage_reordered) for path in sorted(SAMPLES.glob("usage-*.log"))]
    return found


@pytest.mark.parametrize(
    ("sample", "mutate"), cases(), ids=lambda v: getattr(v, "__name__", getattr(v, "stem", ""))
)
def test_unknown_and_reordered_keys_leave_the_figures_unchanged(
    sample: Path, mutate: Callable[[str], str], tmp_path: Path
) -> None:
    """The mutated sample (some of its lines changed) gives exactly the original's figures."""
    text = sample.read_text(encoding="utf-8")
    mutated = "".join(mutate(line) for line in text.splitlines(keepends=True))
    assert mutated != text
    path = tmp_path / sample.name
    path.write_text(mutated, encoding="utf-8")
    assert figures(sample) == figures(path)
