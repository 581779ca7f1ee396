"""Memory figures (issue #20 item 1): a replay's peak RSS over its process tree, a daemon's RSS over time.

`tree_peak(argv)` runs a command and samples, every few milliseconds, the RSS of the process and of every
descendant it forks (from /proc), and reports the peak of their sum and each process's own peak (VmHWM).
`daemon_rss(seconds)` runs `kvwatch run` on a file that a writer appends only vLLM stats and KV Transfer
lines to, 20,000 lines/s (two engines, stamped with the wall clock's second), and samples its RSS.

    python bench/memory.py replay FILE      # kvwatch replay --format json FILE: peak RSS, parent + children
    python bench/memory.py burst [LINES]    # the same on bench/gen_burst.py output (400k lines at one stamp)
    python bench/memory.py daemon [SECONDS] # the daemon's RSS over time at 20k stats lines/s (default 60 s)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from daemon import _LINES, BATCH_EVERY, RATE, scrape, start_kvwatch  # noqa: E402  (bench/ is not a package)
from gen_burst import burst  # noqa: E402
from gen_vllm import Generator, startup  # noqa: E402

SAMPLE_EVERY = 0.005
BURST_LINES = 400_000
_STAMP = "\x00STAMP\x00"


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


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MB (2^20 bytes)."""
    status = _status(pid)
    return status.get("VmRSS", 0) / 1024, status.get("VmHWM", 0) / 1024


@dataclass
class DaemonMemory:
    """The daemon's RSS over a run at 20k stats lines/s."""

    seconds: float
    samples: list[tuple[float, float]] = field(default_factory=list)  # (seconds since start, VmRSS MB)
    hwm_mb: float = 0.0
    lines_written: int = 0
    lines_counted: int | None = None

    @property
    def growth_mb(self) -> float:
        """RSS at the end minus RSS at the first sample after the first minute (half the run if shorter)."""
        later = [mb for at, mb in self.samples if at >= min(60.0, self.seconds / 2)]
        return self.samples[-1][1] - later[0] if later else 0.0

    def report(self) -> str:
        """The RSS-over-time table."""
        counted = "n/a" if self.lines_counted is None else f"{self.lines_counted:,}"
        rows = [
            f"daemon: kvwatch run following a file of vLLM stats + KV Transfer lines only, {RATE:,} lines/s "
            f"(2 engines, stamped with the wall clock's second), {self.seconds:.0f} s",
            "  seconds  RSS MB",
            *(f"  {at:7.0f}  {mb:6.1f}" for at, mb in self.samples),
            f"  peak RSS (VmHWM) {self.hwm_mb:.1f} MB; RSS grew {self.growth_mb:+.1f} MB after "
            f"{min(60.0, self.seconds / 2):.0f} s; lines written {self.lines_written:,}, counted by kvwatch "
            + counted,
        ]
        return "\n".join(rows)

    def targets(self) -> list[tuple[str, str, bool]]:
        """Issue #20 item 1's daemon target as (target, measured, met)."""
        flat = abs(self.growth_mb) < 5.0
        return [
            (
                f"daemon at {RATE // 1000}k stats lines/s: peak RSS < 100 MB, flat, every line counted",
                f"{self.hwm_mb:.1f} MB, {self.growth_mb:+.1f} MB after {min(60.0, self.seconds / 2):.0f} s",
                self.hwm_mb < 100 and flat and self.lines_counted == self.lines_written,
            )
        ]


class StatsWriter:
    """Only stats and KV Transfer lines (gen_burst's), stamped with the second they are written in."""

    def __init__(self, seed: int = 20) -> None:
        self.gen = Generator(seed)
        self.pool = burst(self.gen, _STAMP, 20_000)
        self.at = 0

    def startup(self) -> str:
        """The server's start-up block."""
        return "".join(json.loads(raw)["log"] for raw in startup(int(time.time()), self.gen.totals))

    def batch(self, n: int, now: float) -> str:
        """The next `n` lines of the pool (an even n keeps each KV line behind its stats line)."""
        end = self.at + n
        lines = self.pool[self.at : end]
        self.at = end % len(self.pool)
        return "".join(lines).replace(_STAMP, time.strftime("%m-%d %H:%M:%S", time.gmtime(now)))


def daemon_rss(seconds: float = 60.0, every: float | None = None, workdir: str | None = None) -> DaemonMemory:
    """`kvwatch run` at RATE stats lines/s for `seconds`; its VmRSS every `every` seconds."""
    result = DaemonMemory(seconds)
    every = every or max(5.0, seconds / 20)
    writer = StatsWriter()
    with tempfile.TemporaryDirectory(prefix="kvwatch-memory-", dir=workdir) as tmp:
        work = Path(tmp)
        log = work / "vllm.log"
        log.write_text(writer.startup())
        written = len(log.read_text().splitlines())
        proc, url = start_kvwatch(work, f'type = "file"\npath = "{log}"\n')
        fd = os.open(log, os.O_WRONLY | os.O_APPEND)
        try:
            per_batch = int(RATE * BATCH_EVERY)
            start = time.perf_counter()
            next_batch, next_sample = start, start
            while (now := time.perf_counter()) < start + seconds:
                if now >= next_sample:
                    result.samples.append((now - start, rss_mb(proc.pid)[0]))
                    next_sample += every
                if now >= next_batch:
                    os.write(fd, writer.batch(per_batch, time.time()).encode())
                    written += per_batch
                    next_batch += BATCH_EVERY
                time.sleep(max(0.0, min(next_batch, next_sample) - time.perf_counter()))
            result.samples.append((time.perf_counter() - start, rss_mb(proc.pid)[0]))
            result.lines_written = written
            deadline = time.perf_counter() + 30
            while time.perf_counter() < deadline:
                found = _LINES.search(scrape(url))
                result.lines_counted = int(float(found.group(1))) if found else None
                if result.lines_counted == written:
                    break
                time.sleep(0.05)
            result.hwm_mb = rss_mb(proc.pid)[1]
        finally:
            os.close(fd)
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
    return result


def burst_report(path: Path, result: TreePeak) -> list[str]:
    """The replay line and its target."""
    return [
        f"replay: kvwatch replay --format json {path.name}: {result.report()}",
        f"  [{'met' if result.peak_mb < 100 else 'MISSED'}] replay of {path.name}: peak RSS of parent + "
        f"children < 100 MB: {result.peak_mb:.1f} MB",
    ]


def main() -> int:
    """`python bench/memory.py replay FILE | burst [LINES] | daemon [SECONDS]`."""
    args = sys.argv[1:]
    workdir = Path(os.environ.get("KVWATCH_BENCH_DIR", str(Path(tempfile.gettempdir()) / "kvwatch-bench")))
    if args[:1] == ["daemon"] and len(args) <= 2:
        memory = daemon_rss(float(args[1]) if len(args) == 2 else 60.0)
        print(memory.report())
        for target, measured, met in memory.targets():
            print(f"  [{'met' if met else 'MISSED'}] {target}: {measured}")
        return 0
    if args[:1] == ["replay"] and len(args) == 2:
        path = Path(args[1])
    elif args[:1] == ["burst"] and len(args) <= 2:
        path = burst_file(int(args[1]) if len(args) == 2 else BURST_LINES, workdir)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    result = replay_peak(path)
    print("\n".join(burst_report(path, result)))
    return 1 if result.returncode else 0


if __name__ == "__main__":
    raise SystemExit(main())
