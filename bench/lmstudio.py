"""LM Studio bench: `kvwatch replay` against `mtail --one_shot` (bench/lmstudio.mtail) on one generated
LM Studio 0.4.x server log (bench/gen_lmstudio.py); wall and CPU time, the ratio, and equal counts.

    python bench/lmstudio.py --mb 50 --repeat 3
"""

from __future__ import annotations

import argparse
import io
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_lmstudio import generate

HERE = Path(__file__).resolve().parent


def timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (children) of one run, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.stdout


def total(text: str, name: str) -> float:
    """The sum of a family's samples in an exposition."""
    return sum(float(v) for v in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


def main() -> int:
    """Generate, run both, print the comparison; exit 1 when the counts differ."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--repeat", type=int, default=1, help="rounds, the tools taking turns; best kept")
    args = parser.parse_args()
    workdir = Path(os.environ.get("KVWATCH_BENCH_DIR", tempfile.gettempdir())) / "kvwatch-bench"
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"lmstudio-{args.mb:g}mb.log"
    buffer = io.StringIO()
    totals = generate(buffer, args.mb)
    log.write_text(buffer.getvalue(), encoding="utf-8")
    program = str(HERE / "lmstudio.mtail")
    kv_argv = [sys.executable, "-m", "kvwatch", "replay", "--format", "prom", "--year", "2026", str(log)]
    mt_argv = [
        "mtail",
        "--one_shot",
        "--one_shot_format",
        "prometheus",
        "--progs",
        program,
        "--logs",
        str(log),
    ]
    kvs, mts = [], []
    for round_ in range(args.repeat):
        kvs.append(timed(kv_argv))
        mts.append(timed(mt_argv))
        print(f"round {round_ + 1}: kvwatch {kvs[-1][0]:6.2f} s, mtail {mts[-1][0]:6.2f} s", flush=True)
    kv, mt = min(kvs), min(mts)
    pairs = [
        ("completions", "kvwatch_lmstudio_chat_completions_total", "lmstudio_completions"),
        ("requests", "kvwatch_lmstudio_requests_total", "lmstudio_requests"),
        ("prompt tokens", "kvwatch_lmstudio_prompt_tokens_total", "lmstudio_prompt_tokens"),
        ("cached tokens", "kvwatch_lmstudio_cached_tokens_total", "lmstudio_cached_tokens"),
        ("lines", "kvwatch_lines_total", "lines_total"),
    ]
    print(
        f"{log.name}: {totals['lines']} lines, {totals['bytes'] / 1e6:.1f} MB, {totals['requests']} requests"
    )
    print(f"best of {args.repeat}:")
    print(f"kvwatch replay  wall {kv[0]:6.2f} s  cpu {kv[1]:6.2f} s")
    print(f"mtail one_shot  wall {mt[0]:6.2f} s  cpu {mt[1]:6.2f} s")
    print(f"kvwatch is {mt[0] / kv[0]:.2f}x mtail's speed (target >= 3x)")
    same = True
    for label, ours, theirs in pairs:
        a, b = total(kv[2], ours), total(mt[2], theirs)
        same &= a == b
        print(f"  {label:14} kvwatch {a:14.0f}  mtail {b:14.0f}  {'equal' if a == b else 'DIFFER'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
