"""Memory figures (issue #20 item 1): a replay's peak RSS over its process tree, a daemon's RSS over time.

`tree_peak(argv)` runs a command and samples, every few milliseconds, the RSS of the process and of every
descendant it forks (from /proc), and reports the peak of their sum and each process's own peak (VmHWM).

    python bench/memory.py replay FILE      # kvwatch replay --format json FILE: peak RSS, parent + children
    python bench/memory.py burst [LINES]    # the same on bench/gen_burst.py output (400k lines at one stamp)
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SAMPLE_EVERY = 0.005


@dataclass
class TreePeak:
    """A command's memory: the peak of its process tree's summed RSS, and each process's VmHWM."""

    argv: list[str]
    peak_mb: float = 0.0
    hwm_mb: dict[int, float] = field(default_factory=dict)
    processes: int = 0
    seconds: float = 0.0
    returncode: int = 0

    def report(self) -> str:
        """One line for the bench's output."""
        parts = ", ".join(f"{mb:.1f}" for mb in self.hwm_mb.values())
        return (
            f"peak RSS of the process tree (parent + children, summed at each sample) {self.peak_mb:.1f} MB; "
            f"{self.processes} processes, each's own peak (VmHWM) MB: {parts}; {self.seconds:.2f} s"
        )


def _status(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def descendants(pid: int) -> list[int]:
    """The process and every live descendant (from /proc/PID/task/*/children)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            tasks = list(Path(f"/proc/{current}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return found


def tree_peak(argv: list[str]) -> TreePeak:
    """Run `argv` (output discarded) and sample its process tree's RSS until it exits."""
    result = TreePeak(argv)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    while proc.poll() is None:
        total = 0
        for pid in descendants(proc.pid):
            status = _status(pid)
            total += status.get("VmRSS", 0)
            if "VmHWM" in status:
                result.hwm_mb[pid] = max(result.hwm_mb.get(pid, 0.0), status["VmHWM"] / 1024)
        result.peak_mb = max(result.peak_mb, total / 1024)
        time.sleep(SAMPLE_EVERY)
    result.seconds = time.perf_counter() - start
    result.returncode = proc.returncode
    result.processes = len(result.hwm_mb)
    return result


def replay_peak(path: Path) -> TreePeak:
    """`kvwatch replay --format json FILE` under tree_peak."""
    return tree_peak([sys.executable, "-m", "kvwatch", "replay", "--format", "json", str(path)])


def burst_file(lines: int, workdir: Path) -> Path:
    """bench/gen_burst.py's log of `lines` lines, generated once per size."""
    path = workdir / f"burst-{lines}.log"
    if not path.exists():
        workdir.mkdir(parents=True, exist_ok=True)
        gen = [sys.executable, str(BENCH / "gen_burst.py"), "--lines", str(lines), "-o", str(path)]
        subprocess.run(gen, check=True)
    return path


def main() -> int:
    """`python bench/memory.py replay FILE` or `python bench/memory.py burst [LINES]`."""
    args = sys.argv[1:]
    if args[:1] == ["replay"] and len(args) == 2:
        path = Path(args[1])
    elif args[:1] == ["burst"] and len(args) <= 2:
        path = burst_file(int(args[1]) if len(args) == 2 else 400_000, Path("/tmp/kvwatch-bench"))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    result = replay_peak(path)
    print(f"kvwatch replay --format json {path}: {result.report()}")
    print(
        f"  [{'met' if result.peak_mb < 100 else 'MISSED'}] replay peak RSS < 100 MB: {result.peak_mb:.1f} MB"
    )
    return 1 if result.returncode else 0


if __name__ == "__main__":
    raise SystemExit(main())
