"""What kvwatch costs on one Kubernetes node: `python bench/pods.py [--seconds 600]`.

A node's pod log tree under a temporary directory, written as the kubelet and containerd write it (CRI
lines, `<n>.log` per container, rotation past 10 MiB checked every 10 s: rename to
`<n>.log.YYYYMMDD-HHMMSS`, reopen, gzip the older ones): `--containers` containers (16), half vLLM and
half SGLang, each writing `--rate` lines a second (200) of its engine's sample logs cycled and stamped
with the wall clock (vLLM: access, request and stats lines, KV offload lines; SGLang: prefill and decode
batch lines, requests). `kvwatch run` (the venv's, beside this Python) follows them with one `pods`
source, scraped every 15 s as Prometheus would. After a warm-up it prints:
  - the daemon's CPU over the run (utime + stime from /proc, % of one core; goal < 5%),
  - its RSS at the start and end of the run and at most (goal < 100 MB, and flat),
  - for a pod created half-way: the time from its first line to its first series on /metrics (goal < 10 s),
  - the machine's load average over the run (the CPU figure is the daemon's own seconds, but a loaded
    machine makes every one of them dearer).
Run by hand for 10 minutes (the default); `tests/test_bench_pods.py` runs it for 60 s.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VLLM = ("vllm-offload-readback.log", "vllm-write-only-offload.log", "vllm-aggregated.log")
SGLANG = ("sglang-v0-5-17-agentic-broken.log", "sglang-v0-5-23-hicache-unused.log", "sglang-v0-4-9-pd.log")
MAX_SIZE = 10 << 20  # kubelet's containerLogMaxSize
CHECK = 10.0  # kubelet's rotation check
TICK = 0.1  # seconds between two writes of a container (its lines in one write)
LATE = 'source="bench_llm_late-vllm-decode-0_vllm"'  # (the series of the pod created half-way)
_VLLM_TIME = re.compile(rb"\b\d\d-\d\d \d\d:\d\d:\d\d\b")
_SGLANG_TIME = re.compile(rb"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\b")


def lines_of(names: tuple[str, ...]) -> list[bytes]:
    """The samples' lines, in order (their times replaced as they are written)."""
    out: list[bytes] = []
    for name in names:
        out += [line for line in (ROOT / "samples" / name).read_bytes().split(b"\n") if line]
    return out


def cri(message: bytes, now: datetime) -> bytes:
    """One line as containerd writes it (UTC, trailing zeros trimmed)."""
    fraction = f"{now.microsecond * 1000:09d}".rstrip("0")
    when = now.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"
    return f"{when} stderr F ".encode() + message + b"\n"


@dataclass
class Container:
    """One container of the node: its folder, live file, lines to cycle."""

    directory: Path
    lines: list[bytes]
    engine: str
    position: int = 0
    handle: object = None
    written: int = 0

    @property
    def live(self) -> Path:
        return self.directory / "0.log"

    def open(self) -> None:
        self.handle = open(self.live, "ab", buffering=0)  # noqa: SIM115 - closed on rotation and at the end

    def write(self, count: int) -> None:
        """`count` lines of its mix, stamped now, in one write."""
        now = datetime.now(timezone.utc)
        vllm_now = now.strftime("%m-%d %H:%M:%S").encode()
        sglang_now = now.strftime("%Y-%m-%d %H:%M:%S").encode()
        out = []
        for _ in range(count):
            line = self.lines[self.position % len(self.lines)]
            self.position += 1
            if self.engine == "vllm":
                line = _VLLM_TIME.sub(vllm_now, line, count=1)
            else:
                line = _SGLANG_TIME.sub(sglang_now, line, count=1)
            out.append(cri(line, now))
        self.handle.write(b"".join(out))  # type: ignore[attr-defined]
        self.written += count

    def rotate(self) -> None:
        """kubelet's rotateLog: gzip the rotated files still plain, rename the live one, reopen."""
        for old in self.directory.glob("0.log.*"):
            if not old.name.endswith(".gz"):
                old.with_name(old.name + ".gz").write_bytes(gzip.compress(old.read_bytes(), 1))
                old.unlink()
        self.live.rename(self.directory / f"0.log.{datetime.now(timezone.utc):%Y%m%d-%H%M%S}")
        self.handle.close()  # type: ignore[attr-defined]
        self.open()


@dataclass
class Node:
    """The pod log tree and its writer thread."""

    root: Path
    rate: float
    containers: list[Container] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_pod(self, namespace: str, pod: str, container: str, lines: list[bytes], engine: str) -> Container:
        folder = self.root / f"{namespace}_{pod}_{uuid.uuid4()}" / container
        folder.mkdir(parents=True)
        box = Container(folder, lines, engine)
        box.open()
        with self.lock:
            self.containers.append(box)
        return box

    def run(self) -> None:
        """Write every container's share each TICK; look at sizes every CHECK seconds."""
        per_tick = self.rate * TICK
        carry, checked, tick = 0.0, time.monotonic(), time.monotonic()
        while not self.stop.is_set():
            carry += per_tick
            count, carry = int(carry), carry - int(carry)
            with self.lock:
                boxes = list(self.containers)
            for box in boxes:
                if count:
                    box.write(count)
            if time.monotonic() - checked >= CHECK:
                checked = time.monotonic()
                for box in boxes:
                    if box.live.stat().st_size > MAX_SIZE:
                        box.rotate()
            tick += TICK
            self.stop.wait(max(tick - time.monotonic(), 0))


def cpu_seconds(pid: int) -> tuple[float, float]:
    """utime and stime of a process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def rss_mb(pid: int) -> float:
    """A process's resident set, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def scrape(port: int) -> str:
    """/metrics of the daemon."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        body: bytes = resp.read()
        return body.decode()


def kvwatch() -> list[str]:
    """The kvwatch a user runs: the venv's script beside this Python, else on PATH."""
    beside = Path(sys.executable).with_name("kvwatch")
    return [str(beside)] if beside.exists() else ["kvwatch"]


def main(argv: list[str] | None = None) -> int:
    """Run the bench; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="how long to measure (default 600)")
    parser.add_argument("--containers", type=int, default=16)
    parser.add_argument("--rate", type=float, default=200.0, help="lines a second per container")
    parser.add_argument("--warmup", type=float, default=10.0)
    args = parser.parse_args(argv)
    vllm, sglang = lines_of(VLLM), lines_of(SGLANG)
    with tempfile.TemporaryDirectory(prefix="kvwatch-pods-bench-") as tmp:
        node = Node(Path(tmp) / "pods", args.rate)
        node.root.mkdir()
        for index in range(args.containers):
            engine = "vllm" if index % 2 == 0 else "sglang"
            pod = f"{engine}-{index}-decode-0"
            node.add_pod("llm", pod, engine, vllm if engine == "vllm" else sglang, engine)
        port = _free_port()
        config = Path(tmp) / "kvwatch.toml"
        config.write_text(
            f'state_dir = "{tmp}/state"\n[server]\nport = {port}\n'
            f'[[source]]\nname = "bench"\ntype = "pods"\nroot = "{node.root}"\nstart_at = "beginning"\n'
            '[[source.select]]\ncontainer = "vllm"\nengine = "vllm"\n'
            '[[source.select]]\ncontainer = "sglang"\nengine = "sglang"\n'
        )
        log = open(Path(tmp) / "kvwatch.err", "wb")  # noqa: SIM115 - closed below
        daemon = subprocess.Popen([*kvwatch(), "run", "--config", str(config)], stderr=log)
        writer = threading.Thread(target=node.run, daemon=True)
        try:
            _wait_ready(port, daemon)
            writer.start()
            time.sleep(args.warmup)
            cpu0, wall0, rss = cpu_seconds(daemon.pid), time.monotonic(), [rss_mb(daemon.pid)]
            load = [os.getloadavg()[0]]
            end, half, latency, last_scrape = wall0 + args.seconds, wall0 + args.seconds / 2, None, 0.0
            late: Container | None = None
            born = 0.0
            while time.monotonic() < end:
                now = time.monotonic()
                if now - last_scrape >= 15.0:
                    last_scrape = now
                    scrape(port)
                    rss.append(rss_mb(daemon.pid))
                    load.append(os.getloadavg()[0])
                if late is None and now >= half:
                    late = node.add_pod("llm", "late-vllm-decode-0", "vllm", vllm, "vllm")
                    born = time.monotonic()
                if (
                    late is not None
                    and latency is None
                    and 'source="bench_llm_late-vllm-decode-0_vllm"' in scrape(port)
                ):
                    latency = time.monotonic() - born
                time.sleep(0.1 if late is not None and latency is None else 1.0)
            (user, system), wall = cpu_seconds(daemon.pid), time.monotonic() - wall0
            user, system = (user - cpu0[0]) / wall * 100, (system - cpu0[1]) / wall * 100
            rss.append(rss_mb(daemon.pid))
            written = sum(box.written for box in node.containers)
        finally:
            node.stop.set()
            daemon.terminate()
            daemon.wait(30)
            log.close()
        print(f"pods bench: {args.containers} containers x {args.rate:.0f} lines/s for {args.seconds:.0f} s "
              f"({written} lines written, vLLM and SGLang half each)")  # fmt: skip
        cpu = f"{user + system:6.2f} % of one core ({user:.2f} user, {system:.2f} system)"
        print(f"  daemon CPU        {cpu}    (goal < 5 %)")
        memory = f"{rss[0]:6.1f} MB at start, {rss[-1]:.1f} MB at end, {max(rss):.1f} MB at most"
        print(f"  daemon RSS        {memory}    (goal < 100 MB, flat)")
        shown = f"{latency:6.2f} s" if latency is not None else "  none"
        print(f"  new pod -> series {shown}                   (goal < 10 s)")
        print(f"  load average      {min(load):.2f} to {max(load):.2f} (1 min, sampled every 15 s)")
        return 0 if latency is not None else 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(port: int, daemon: subprocess.Popen[bytes]) -> None:
    """Until /-/ready answers 200 (the tree looked at)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            raise SystemExit(f"kvwatch exited {daemon.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("kvwatch not ready within 30 s")


if __name__ == "__main__":
    raise SystemExit(main())
