#!/usr/bin/env python3
"""Capture LMCache 0.5.6's real log: samples/lmcache-0.5.6-real-engine.log (+ .truth.json).

    python3 scripts/real/capture_lmcache.py [--out DIR]

Installs LMCache (scripts/real/install_lmcache.sh, cached) and runs tests/real/lmcache_driver.py with
its python: LMCache's own cache engine, in-process, MockGPUConnector and the local_cpu backend, chunk
size 64. The log is LMCache's stderr, untouched; the truth file is the driver's stdout (one object per
operation: what it asked, and the lookup and retrieve counts LMCache's API returned).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME = "lmcache-0.5.6-real-engine"


def install() -> Path:
    """The LMCache venv (install_lmcache.sh prints it last)."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "real" / "install_lmcache.sh")], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"install_lmcache.sh failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def capture(venv: Path, out: Path) -> tuple[Path, Path]:
    """Run the driver once; the log and the truth file written."""
    log, truth = out / f"{NAME}.log", out / f"{NAME}.truth.json"
    with log.open("wb") as err:
        done = subprocess.run(
            [str(venv / "bin" / "python"), str(ROOT / "tests" / "real" / "lmcache_driver.py")],
            stdout=subprocess.PIPE,
            stderr=err,
            check=False,
            env={**os.environ, "LMCACHE_TRACK_USAGE": "false"},
        )
    if done.returncode != 0:
        sys.exit(f"lmcache_driver.py failed (exit {done.returncode}): see {log}")
    ops = [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
    truth.write_text(json.dumps(ops, indent=1) + "\n")
    return log, truth


def main(argv: list[str] | None = None) -> int:
    """Capture into --out (samples/ by default)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "samples")
    args = parser.parse_args(argv)
    for path in capture(install(), args.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
