"""One generated log, `kvwatch replay` against `mtail --one_shot` in turns: wall and CPU time, the ratio,
the load average, and whether the two count the same (the local servers' benches share it)."""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import io
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

HERE = Path(__file__).resolve().parent

#: (what it counts, kvwatch's family, mtail's counter)
Pair = tuple[str, str, str]


def compile_bytecode() -> None:
    """Byte-compile the kvwatch package as `pip install` does for a wheel, so start-up is timed as users
    see it: an editable install run with PYTHONDONTWRITEBYTECODE would recompile every module each run."""
    spec = importlib.util.find_spec("kvwatch")
    if spec is not None and spec.origin is not None:
        compileall.compile_dir(str(Path(spec.origin).parent), quiet=1)


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


def bench(
    doc: str,
    name: str,
    generate: Callable[[TextIO, float], dict[str, int]],
    pairs: Sequence[Pair],
    target: float = 3.0,
    *,
    kv_args: Sequence[str] = (),
) -> int:
    """Generate `name`'s log (--mb), run both --repeat times in turn, print the comparison against
    bench/`name`.mtail; exit status 1 when the counts differ."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=50.0, help="the log's size in MB (10^6 bytes)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds, the two in turn; the fastest counts")
    args = parser.parse_args()
    workdir = Path(os.environ.get("KVWATCH_BENCH_DIR", tempfile.gettempdir())) / "kvwatch-bench"
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"{name}-{args.mb:g}mb.log"
    buffer = io.StringIO()
    totals = generate(buffer, args.mb)
    log.write_text(buffer.getvalue(), encoding="utf-8")
    compile_bytecode()
    load_before = os.getloadavg()
    kv_argv = [sys.executable, "-m", "kvwatch", "replay", *kv_args]
    kv_argv += ["--format", "prom", "--year", "2026", str(log)]
    program = str(HERE / f"{name}.mtail")
    mt_argv = ["mtail", "--one_shot", "--one_shot_format", "prometheus", "--progs", program]
    mt_argv += ["--logs", str(log)]
    rounds = [(timed(kv_argv), timed(mt_argv)) for _ in range(max(1, args.repeat))]
    kv = min((r[0] for r in rounds), key=lambda run: run[0])
    mt = min((r[1] for r in rounds), key=lambda run: run[0])
    size = f"{totals['bytes'] / 1e6:.1f} MB"
    print(f"{log.name}: {totals['lines']} lines, {size}, {totals['requests']} requests")
    for number, (k, m) in enumerate(rounds, 1):
        print(
            f"round {number}: kvwatch wall {k[0]:6.2f} s cpu {k[1]:6.2f} s | "
            f"mtail wall {m[0]:6.2f} s cpu {m[1]:6.2f} s | {m[0] / k[0]:.2f}x"
        )
    print(f"kvwatch replay  wall {kv[0]:6.2f} s  cpu {kv[1]:6.2f} s  (fastest of {len(rounds)})")
    print(f"mtail one_shot  wall {mt[0]:6.2f} s  cpu {mt[1]:6.2f} s  (fastest of {len(rounds)})")
    print(f"kvwatch is {mt[0] / kv[0]:.2f}x mtail's speed (target >= {target:g}x)")
    # (on a loaded machine a single-threaded process gets a smaller share of the cores than mtail's
    # threads: CPU time says what each costs)
    print(f"by CPU time: kvwatch is {mt[1] / kv[1]:.2f}x mtail's")
    load_after = os.getloadavg()
    print(f"load average (1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    same = True
    for label, ours, theirs in [*pairs, ("lines", "kvwatch_lines_total", "lines_total")]:
        a, b = total(kv[2], ours), total(mt[2], theirs)
        same &= a == b
        print(f"  {label:14} kvwatch {a:14.0f}  mtail {b:14.0f}  {'equal' if a == b else 'DIFFER'}")
    return 0 if same else 1
