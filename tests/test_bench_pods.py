"""bench/pods.py runs (for 60 s, as CI runs it) and prints the node's figures: CPU, RSS, new pod to series."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_pods_bench_runs_and_prints_cpu_rss_and_the_new_pods_latency() -> None:
    """16 containers at 200 lines/s for 60 s: the three figures are printed and the new pod got a series
    (the figures themselves are the bench's to show, not a test's to judge)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "pods.py"), "--seconds", "60", "--warmup", "5"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"daemon CPU +\d+\.\d+ % of one core", done.stdout), done.stdout
    assert re.search(r"daemon RSS +\d+\.\d+ MB at start, \d+\.\d+ MB at end", done.stdout), done.stdout
    assert re.search(r"new pod -> series +\d+\.\d+ s", done.stdout), done.stdout
