"""A simulated kubelet (a Kubernetes cluster cannot run here): a node's pod log tree under a temporary
directory, written as the kubelet and containerd write it.

- `<root>/<namespace>_<pod>_<uid>/<container>/<restart>.log`, each line in the CRI framing (cri_helpers);
- rotation as kubelet's `containerLogManager.rotateLog`: the rotated files still plain are gzipped
  (`<name>.tmp` written, renamed to `.gz`, the plain one removed), then the live file is renamed to
  `<restart>.log.YYYYMMDD-HHMMSS` and the runtime reopens `<restart>.log`; never copytruncate; at most
  `max_files` files per container (the oldest rotated ones removed);
- a container restart writes `<restart+1>.log`; the dead container's log is kept until the next one;
- a deleted pod's folder goes away.
`Node.play` writes lines at a given rate from a thread, rotating whenever the live file has passed
`max_size` bytes, checked every `check` seconds (the kubelet: 10 MiB, every 10 s; scaled down here).
"""

from __future__ import annotations

import gzip
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from cri_helpers import Runtime, cri_line


@dataclass
class Container:
    """One container of a pod, with its live log file open for appending (as the runtime holds it)."""

    directory: Path
    runtime: Runtime
    restart: int = 0
    rotations: int = 0
    lines: int = 0
    handle: object = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def live(self) -> Path:
        """The file the runtime writes now."""
        return self.directory / f"{self.restart}.log"

    def open(self) -> None:
        """(Re)open the live file for appending."""
        self.handle = open(self.live, "ab", buffering=0)  # noqa: SIM115 - closed by close()

    def close(self) -> None:
        """Close the live file."""
        if self.handle is not None:
            self.handle.close()  # type: ignore[attr-defined]
            self.handle = None


class Node:
    """A node's pod log tree; thread-safe per container."""

    def __init__(self, root: Path, runtime: Runtime = "containerd", max_files: int = 5) -> None:
        self.root = root
        self.runtime = runtime
        self.max_files = max_files
        self.pods: dict[tuple[str, str], Path] = {}
        self.containers: dict[tuple[str, str, str], Container] = {}
        self.clock = datetime(2026, 8, 20, 8, 0, tzinfo=timezone.utc)
        root.mkdir(parents=True, exist_ok=True)

    def start_pod(self, namespace: str, pod: str, containers: Iterable[str]) -> None:
        """Create a pod's folder and its containers' `0.log`."""
        folder = self.root / f"{namespace}_{pod}_{uuid.uuid4()}"
        self.pods[(namespace, pod)] = folder
        for name in containers:
            (folder / name).mkdir(parents=True)
            box = self.containers[(namespace, pod, name)] = Container(folder / name, self.runtime)
            box.open()

    def write(
        self,
        namespace: str,
        pod: str,
        container: str,
        message: bytes,
        *,
        stream: str = "stderr",
        split: int = 16384,
    ) -> None:
        """Append one line as the runtime writes it (pieces past `split` bytes)."""
        box = self.containers[(namespace, pod, container)]
        with box.lock:
            self.clock += timedelta(microseconds=1500)
            box.handle.write(cri_line(message, stream, self.clock, self.runtime, split))  # type: ignore[attr-defined]
            box.lines += 1

    def rotate(self, namespace: str, pod: str, container: str) -> None:
        """kubelet's rotateLog: gzip the rotated files still plain, drop the oldest past max_files, rename
        the live file to `<restart>.log.<time>` and reopen."""
        box = self.containers[(namespace, pod, container)]
        with box.lock:
            live = box.live
            rotated = sorted(p for p in box.directory.glob(f"{live.name}.*") if not p.name.endswith(".tmp"))
            for old in rotated:
                if not old.name.endswith(".gz"):
                    tmp = old.with_name(old.name + ".tmp")
                    tmp.write_bytes(gzip.compress(old.read_bytes()))
                    tmp.rename(old.with_name(old.name + ".gz"))
                    old.unlink()
            kept = sorted(box.directory.glob(f"{live.name}.*.gz"))
            for old in kept[: max(len(kept) - (self.max_files - 2), 0)]:
                old.unlink()
            box.rotations += 1
            stamp = (self.clock + timedelta(seconds=box.rotations)).strftime("%Y%m%d-%H%M%S")
            live.rename(live.with_name(f"{live.name}.{stamp}"))
            box.close()
            box.open()

    def restart(self, namespace: str, pod: str, container: str) -> None:
        """The container restarts: the runtime writes `<restart+1>.log`; the log before the last goes."""
        box = self.containers[(namespace, pod, container)]
        with box.lock:
            box.close()
            for old in box.directory.glob(f"{box.restart - 1}.log*"):
                old.unlink()
            box.restart += 1
            box.open()

    def delete_pod(self, namespace: str, pod: str) -> None:
        """The pod is deleted: its folder goes away."""
        folder = self.pods.pop((namespace, pod))
        for key in [k for k in self.containers if k[:2] == (namespace, pod)]:
            self.containers.pop(key).close()
        shutil.rmtree(folder)

    def files(self, namespace: str, pod: str, container: str) -> list[str]:
        """The container's file names now."""
        return sorted(os.listdir(self.containers[(namespace, pod, container)].directory))

    def play(
        self,
        namespace: str,
        pod: str,
        container: str,
        lines: Iterable[bytes],
        *,
        rate: float = 400.0,
        max_size: int = 20_000,
        check: float = 0.05,
    ) -> threading.Thread:
        """Write `lines` at `rate` lines a second from a thread, rotating as the kubelet does."""
        box = self.containers[(namespace, pod, container)]

        def run() -> None:
            started, checked = time.monotonic(), 0.0
            for index, line in enumerate(lines):
                self.write(namespace, pod, container, line)
                now = time.monotonic()
                if now - checked >= check:
                    checked = now
                    if box.live.stat().st_size > max_size:
                        self.rotate(namespace, pod, container)
                ahead = started + (index + 1) / rate - now
                if ahead > 0:
                    time.sleep(ahead)  # (pacing the writer, not waiting for kvwatch)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread


def chunks(lines: list[bytes], parts: int) -> Iterator[list[bytes]]:
    """The lines in `parts` runs, in order."""
    size = -(-len(lines) // parts)
    for start in range(0, len(lines), size):
        yield lines[start : start + size]
