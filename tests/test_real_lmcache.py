"""LMCache 0.5.6's own cache engine, run in-process on the CPU, and kvwatch reading its real log.

scripts/real/install_lmcache.sh installs LMCache into `$KVWATCH_REAL_CACHE` (cached; a broken install
fails here, never skips); tests/real/lmcache_driver.py runs the engine (MockGPUConnector, local_cpu)
through stores, full and partial retrieves, a store of a prefix already held and misses, and prints
what it asked and what LMCache answered. kvwatch replays the log LMCache wrote, told the engine and
left to find it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kvwatch.cli import main

pytestmark = pytest.mark.slow  # installs LMCache and torch, runs its engine

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("KVWATCH_REAL_CACHE", str(Path.home() / ".cache" / "kvwatch-real")))


def install_lmcache() -> Path:
    """LMCache 0.5.6's venv (installed on first use); a failed install fails with its output."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "real" / "install_lmcache.sh")],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
        env={**os.environ, "KVWATCH_REAL_CACHE": str(CACHE)},
    )
    if done.returncode != 0:
        raise AssertionError(
            f"installing LMCache 0.5.6 failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
        )
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """The driver's log (LMCache's stderr) and its own account of each operation."""
    venv = install_lmcache()
    log = tmp_path_factory.mktemp("lmcache") / "lmcache.log"
    with log.open("wb") as err:
        done = subprocess.run(
            [str(venv / "bin" / "python"), str(ROOT / "tests" / "real" / "lmcache_driver.py")],
            stdout=subprocess.PIPE,
            stderr=err,
            timeout=600,
            check=False,
        )
    assert 0 == done.returncode, log.read_text(errors="replace")[-6000:]
    ops = [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
    return log, ops


def replay_json(capsys: pytest.CaptureFixture[str], log: Path, engine: str) -> dict[str, float]:
    """`kvwatch replay --format json`'s kvwatch_lmcache_* samples, summed by name."""
    assert 0 == main(["replay", "--engine", engine, "--format", "golden", str(log)])
    out = capsys.readouterr().out
    sums: dict[str, float] = {}
    for name, value in re.findall(r"^(kvwatch_\w+)\{[^}]*\} (\S+)$", out, re.M):
        sums[name] = sums.get(name, 0.0) + float(value)
    return sums


def test_lmcache_engine_logs_what_it_did(run: tuple[Path, list[dict[str, Any]]]) -> None:
    """LMCache's own lines: one `Stored` per store that wrote, one `Retrieved` per retrieve, with its req_id."""
    log, ops = run
    text = log.read_text(errors="replace")
    stored = re.findall(r"\[req_id=(\w+)\] Stored (\d+) out of total (\d+) tokens\. size: [\d.]+ GB", text)
    retrieved = re.findall(r"\[req_id=(\w+)\] Retrieved (\d+) out of (\d+) required tokens \(from (\d+) total", text)
    answered = {op["req"]: op for op in ops if op["op"] == "retrieve"}
    assert {req: int(got) for req, got, _, _ in retrieved} == {
        req: op["retrieved"] for req, op in answered.items() if op["retrieved"] > 0
    }
    assert {"r1", "r2", "r5"} <= {req for req, _, _ in stored}
    assert "r4" not in {req for req, _, _ in stored}, "a store of a prefix already held writes nothing"


@pytest.mark.parametrize("engine", ["lmcache", "auto"])
def test_replay_reads_lmcache_s_real_log(
    run: tuple[Path, list[dict[str, Any]]], engine: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """kvwatch's sums over LMCache's real log equal the driver's account (told the engine, and auto-detected)."""
    log, ops = run
    sums = replay_json(capsys, log, engine)
    text = log.read_text(errors="replace")
    stored = sum(int(n) for n in re.findall(r"\] Stored (\d+) out of total", text))
    retrieved = sum(op["retrieved"] for op in ops if op["op"] == "retrieve")
    assert stored > 0 and retrieved > 0
    assert sums.get("kvwatch_lmcache_stored_tokens_total") == stored
    assert sums.get("kvwatch_lmcache_retrieved_tokens_total") == retrieved
    assert 0 == sums.get("kvwatch_parse_errors_total")
