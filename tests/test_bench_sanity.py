"""The benchmark compares like with like: on tiny generated logs kvwatch's counts equal mtail's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parent.parent / "bench" / "run.py"

pytestmark = pytest.mark.slow  # generates logs, runs mtail and kvwatch on them


def test_bench_counts_agree_with_mtail(tmp_path: Path) -> None:
    """`bench/run.py --check-only` generates tiny vLLM and llama.cpp logs and compares counts."""
    proc = subprocess.run(
        [sys.executable, str(RUN), "--check-only", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "counts agree" in proc.stdout
    assert "DIFFERENT" not in proc.stdout
    # bench/floor.py (the bare Python scan shown beside kvwatch) is held to kvwatch's counts too
    assert "[same] vLLM json-file: floor.py: store bytes per engine" in proc.stdout


def test_bench_counts_agree_with_lmcache_lines_in_the_vllm_log(tmp_path: Path) -> None:
    """`--vllm-lmcache`: the vLLM log with LMCache's lines (json-file, ANSI escapes, 2 TP workers); kvwatch's
    lookups and stored and retrieved tokens equal mtail's and the generator's."""
    proc = subprocess.run(
        [sys.executable, str(RUN), "--check-only", "--vllm-lmcache", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "counts agree" in proc.stdout
    for what in ("lookups", "stored tokens, all workers", "retrieved tokens, all workers"):
        assert f"[same] vLLM json-file + LMCache: LMCache {what}: " in proc.stdout
        assert f"[same] vLLM json-file + LMCache: LMCache {what} (kvwatch = generator): " in proc.stdout


@pytest.mark.slow
def test_one_timestamp_replay_stays_small_with_its_child(tmp_path: Path) -> None:
    """`bench/memory.py burst`: 200k stats/KV lines sharing one second (96 MB, so a forked child frames
    them) replay under 100 MB of RSS, the parent's and the child's summed."""
    proc = subprocess.run(
        [sys.executable, str(RUN.parent / "memory.py"), "burst", "200000"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "KVWATCH_BENCH_DIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "; 2 processes," in proc.stdout, proc.stdout
    assert "[met] replay of burst-200000.log" in proc.stdout, proc.stdout


@pytest.mark.parametrize("beside", [True, False])
def test_the_bench_runs_the_kvwatch_a_user_runs(
    beside: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The venv's own `kvwatch` script beside the Python running the bench (`.venv/bin/python bench/run.py`
    with the venv not on PATH), not `python -m kvwatch` from the checkout; without one, the one on PATH."""
    sys.path.insert(0, str(RUN.parent))
    try:
        import run as bench_run
    finally:
        sys.path.remove(str(RUN.parent))
    bin_dir = tmp_path / "venv-bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text("")
    if beside:
        (bin_dir / "kvwatch").write_text("")
    on_path = tmp_path / "path-bin"
    on_path.mkdir()
    (on_path / "kvwatch").write_text("#!/bin/sh\n")
    (on_path / "kvwatch").chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("PATH", str(on_path))
    argv = bench_run.kvwatch_argv(Path("x.log"))
    assert argv == [str((bin_dir if beside else on_path) / "kvwatch"), "replay", "--format", "prom", "x.log"]
