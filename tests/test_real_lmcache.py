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
            f"installing LMCache 0.5.6 failed (exit {done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
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


def replay_sums(capsys: pytest.CaptureFixture[str], log: Path, engine: str) -> dict[str, float]:
    """`kvwatch replay --format golden`'s kvwatch_* samples, summed by name over their labels."""
    assert 0 == main(["replay", "--engine", engine, "--format", "golden", str(log)])
    out = capsys.readouterr().out
    sums: dict[str, float] = {}
    for name, value in re.findall(r"^(kvwatch_\w+)\{[^}]*\} (\S+)$", out, re.M):
        sums[name] = sums.get(name, 0.0) + float(value)
    return sums


def test_lmcache_engine_logs_what_it_did(run: tuple[Path, list[dict[str, Any]]]) -> None:
    """LMCache's own lines: a `Retrieved` per retrieve (misses too), a `Stored` of whole chunks per store."""
    log, ops = run
    text = log.read_text(errors="replace")
    stored = re.findall(r"\[req_id=(\w+)\] Stored (\d+) out of total (\d+) tokens\. size: [\d.]+ GB", text)
    retrieved = re.findall(
        r"\[req_id=(\w+)\] Retrieved (\d+) out of (\d+) required tokens \(from (\d+) total", text
    )
    answered = {op["req"]: op for op in ops if op["op"] == "retrieve"}
    # Every retrieve logs its count, a miss `Retrieved 0 out of N` too; lookup() logs nothing.
    assert {req: (op["retrieved"], op["tokens"]) for req, op in answered.items()} == {
        req: (int(got), int(asked)) for req, got, asked, _ in retrieved
    }
    # Stores write whole chunks only (chunk 64: the last partial chunk is not saved by default), and a
    # prefix already held, handed over whole (r4), is written and logged again.
    chunk = 64
    expected = {
        op["req"]: (op["tokens"] // chunk * chunk - (op["tokens"] - op["offered"]), op["offered"])
        for op in ops
        if op["op"] == "store"
    }
    assert expected == {req: (int(n), int(m)) for req, n, m in stored}
    assert expected["r4"] == expected["r1"] == (448, 484)


@pytest.mark.parametrize("engine", ["lmcache", "auto"])
def test_replay_reads_lmcache_s_real_log(
    run: tuple[Path, list[dict[str, Any]]], engine: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """kvwatch's sums over LMCache's real log equal the driver's account (engine told, or auto-detected)."""
    log, ops = run
    sums = replay_sums(capsys, log, engine)
    text = log.read_text(errors="replace")
    stored = sum(int(n) for n in re.findall(r"\] Stored (\d+) out of total", text))
    retrieved = sum(op["retrieved"] for op in ops if op["op"] == "retrieve")
    assert stored > 0 and retrieved > 0
    assert sums.get("kvwatch_lmcache_stored_tokens_total") == stored
    assert sums.get("kvwatch_lmcache_retrieved_tokens_total") == retrieved
    assert 0 == sums.get("kvwatch_parse_errors_total")
    # Misses and partial hits of the engine asked for whole prompts are no failed loads: no alert.
    assert (0, None) == (sums.get("kvwatch_lmcache_retrieve_short_total"), sums.get("kvwatch_alert_firing"))
