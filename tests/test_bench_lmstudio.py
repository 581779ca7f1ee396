"""The LM Studio bench (bench/gen_lmstudio.py, bench/lmstudio.mtail): on a small log, kvwatch and mtail agree
with each other and with the generator."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from gen_lmstudio import generate  # noqa: E402 - the bench's generator


def total(text: str, name: str) -> float:
    return sum(float(v) for v in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


@pytest.mark.slow
def test_kvwatch_and_mtail_count_the_same_requests_and_tokens(tmp_path: Path) -> None:
    """Requests, prompt and cached tokens, lines: equal in both, and what the generator wrote."""
    buffer = io.StringIO()
    want = generate(buffer, 0.3)
    log = tmp_path / "lmstudio.log"
    log.write_text(buffer.getvalue())
    kv = subprocess.run(
        [sys.executable, "-m", "kvwatch", "replay", "--format", "prom", "--year", "2026", str(log)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    mtail = shutil.which("mtail")
    assert mtail is not None
    program = str(ROOT / "bench" / "lmstudio.mtail")
    mt = subprocess.run(
        [mtail, "--one_shot", "--one_shot_format", "prometheus", "--progs", program, "--logs", str(log)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for key, ours, theirs in [
        ("completions", "kvwatch_lmstudio_chat_completions_total", "lmstudio_completions"),
        ("requests", "kvwatch_lmstudio_requests_total", "lmstudio_requests"),
        ("prompt", "kvwatch_lmstudio_prompt_tokens_total", "lmstudio_prompt_tokens"),
        ("cached", "kvwatch_lmstudio_cached_tokens_total", "lmstudio_cached_tokens"),
        ("lines", "kvwatch_lines_total", "lines_total"),
    ]:
        assert want[key] == total(kv, ours) == total(mt, theirs), key
    assert 0 == total(kv, "kvwatch_parse_errors_total")
