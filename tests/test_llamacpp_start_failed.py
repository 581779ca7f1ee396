"""A real llama-server (b11434, built by scripts/llamacpp/build.sh) given a model path that does not exist:
`kvwatch replay` of its log fires engine_start_failed, naming llama.cpp and the first error it printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from llama_helpers import BuildProgress, capture, llama_server_binary, terminal_lines

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_missing_model_fires_engine_start_failed(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    """llama-server exits on the missing model; replay's JSON and text say it failed to start, and why."""
    binary = llama_server_binary(BuildProgress(terminal_lines(pytestconfig)))
    missing = tmp_path / "missing.gguf"
    log = tmp_path / "llama.log"
    argv = [str(binary), "-m", str(missing), "--host", "127.0.0.1", "--port", str(capture.free_port())]
    with log.open("wb") as sink:
        done = subprocess.run(argv, stdout=sink, stderr=subprocess.STDOUT, timeout=120, check=False)
    text = log.read_text(encoding="utf-8", errors="replace")
    assert done.returncode != 0, text
    assert "failed to load model" in text, text

    replay = [sys.executable, "-m", "kvwatch", "replay", "--engine", "llamacpp", "--year", "2026"]
    out = subprocess.run(
        [*replay, "--format", "json", str(log)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert out.returncode == 0, out.stderr
    alerts = [a for a in json.loads(out.stdout)["alerts"] if a["alert"] == "engine_start_failed"]
    assert [a["state"] for a in alerts] == ["firing"], out.stdout
    evidence = alerts[0]["evidence"]
    assert (evidence["engine"], evidence["phase"]) == ("llama.cpp", "startup")
    assert str(missing) in evidence["error"], evidence
    assert alerts[0]["severity"] == "critical"

    shown = subprocess.run([*replay, str(log)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert "engine_start_failed  llama.cpp failed to start: " in shown.stdout, shown.stdout
