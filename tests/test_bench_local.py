"""The local servers' benches (bench/gen_lmstudio.py + bench/lmstudio.mtail, bench/gen_ollama.py +
bench/ollama.mtail): on a small log, kvwatch and mtail agree with each other and with the generator."""

from __future__ import annotations

import importlib
import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from versus import total  # noqa: E402 - the benches' comparison

#: Per bench: (what the generator counts, kvwatch's family, mtail's counter); the lines each counts.
COUNTS = {
    "lmstudio": [
        ("completions", "kvwatch_lmstudio_chat_completions_total", "lmstudio_completions"),
        ("requests", "kvwatch_lmstudio_requests_total", "lmstudio_requests"),
        ("prompt", "kvwatch_lmstudio_prompt_tokens_total", "lmstudio_prompt_tokens"),
        ("cached", "kvwatch_lmstudio_cached_tokens_total", "lmstudio_cached_tokens"),
        ("lines", "kvwatch_lines_total", "lines_total"),
    ],
    "ollama": [
        ("requests", "kvwatch_ollama_requests_total", "ollama_requests"),
        ("prompt", "kvwatch_ollama_prompt_tokens_total", "ollama_prompt_tokens"),
        ("cached", "kvwatch_ollama_cached_tokens_total", "ollama_cached_tokens"),
        ("lines", "kvwatch_lines_recognized_total", "lines_total"),
    ],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COUNTS))
def test_kvwatch_and_mtail_count_what_the_generator_wrote(name: str, tmp_path: Path) -> None:
    """Requests, prompt and cached tokens, lines: equal in both, and what the generator wrote."""
    buffer = io.StringIO()
    want = importlib.import_module(f"gen_{name}").generate(buffer, 0.3)
    log = tmp_path / f"{name}.log"
    log.write_text(buffer.getvalue())
    kv = subprocess.run(
        [sys.executable, "-m", "kvwatch", "replay", "--format", "prom", "--year", "2026", str(log)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    mtail = shutil.which("mtail")
    assert mtail is not None
    program = str(ROOT / "bench" / f"{name}.mtail")
    mt = subprocess.run(
        [mtail, "--one_shot", "--one_shot_format", "prometheus", "--progs", program, "--logs", str(log)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for key, ours, theirs in COUNTS[name]:
        assert want[key] == total(kv, ours) == total(mt, theirs), key
    assert 0 == total(kv, "kvwatch_parse_errors_total")
