"""Test helpers for the live daemon: run `python -m kvwatch run` as a subprocess and read its metrics."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]


def wait_until(predicate: Callable[[], object], timeout: float = 15.0, what: str = "condition") -> None:
    """Poll `predicate` until true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout} s")
        threading.Event().wait(0.02)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


STAMP = re.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")


def shifted_sample(dest: Path, end: datetime, name: str = "vllm-write-only-offload.log") -> None:
    """Copy a vLLM sample with its year-less times moved so its last line is at `end` (UTC)."""
    text = (ROOT / "samples" / name).read_text()

    def when(m: re.Match[str]) -> datetime:
        month, day, hh, mm, ss = map(int, m.groups())
        return datetime(end.year, month, day, hh, mm, ss, tzinfo=timezone.utc)

    shift = end - when(list(STAMP.finditer(text))[-1])
    dest.write_text(STAMP.sub(lambda m: (when(m) + shift).strftime("%m-%d %H:%M:%S"), text))


def write_config(path: Path, body: str, state: Path | None = None) -> Path:
    """Write a config file whose state_dir is `state` (default: next to it)."""
    state = state or path.parent / "state"
    path.write_text(f'state_dir = "{state}"\n{body}')
    return path


def file_source(name: str, pattern: Path | str, start_at: str = "beginning", engine: str = "vllm") -> str:
    """A `[[source]]` table of type file."""
    return (
        f'[[source]]\nname = "{name}"\nengine = "{engine}"\ntype = "file"\n'
        f'path = "{pattern}"\nstart_at = "{start_at}"\n'
    )


#: Every daemon a test started; conftest kills those still running when the test ends.
STARTED: list[Kvwatch] = []


class Kvwatch:
    """A running `kvwatch run`; stderr goes to a file the test can read."""

    def __init__(
        self, args: list[str], log: Path, env: Mapping[str, str] | None = None, stdin: int | None = None
    ) -> None:
        """Start it listening on a free port of 127.0.0.1 and wait until it says where."""
        self.log = log
        self.err = open(log, "ab")  # noqa: SIM115 - closed in stop()
        start = log.stat().st_size
        full_env = {**os.environ, **(env or {})}
        full_env.pop("JOURNAL_STREAM", None)
        argv = [sys.executable, "-m", "kvwatch", "run", "--listen", "127.0.0.1:0", *args]
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=full_env, stderr=self.err, stdin=stdin)
        STARTED.append(self)
        found: list[str] = []

        def listening() -> bool:
            text = log.read_bytes()[start:].decode("utf-8", "replace")
            found.extend(re.findall(r"listening on (https?://[\d.]+:\d+)/", text))
            if self.proc.poll() is not None:
                raise AssertionError(f"kvwatch exited {self.proc.returncode}:\n{text}")
            return bool(found)

        wait_until(listening, 15.0, "kvwatch listening")
        self.url = found[0]

    def get(self, path: str, headers: Mapping[str, str] | None = None) -> tuple[int, str, str]:
        """(status, content type, body) of a GET."""
        request = urllib.request.Request(self.url + path, headers=dict(headers or {}))
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return resp.status, resp.headers["Content-Type"], resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.headers["Content-Type"], err.read().decode()

    def value(self, name: str, labels: Mapping[str, str] | None = None) -> float | None:
        """A sample's value from /metrics, None when absent."""
        _, _, body = self.get("/metrics")
        for family in text_string_to_metric_families(body):
            for sample in family.samples:
                if sample.name == name and all(sample.labels.get(k) == v for k, v in (labels or {}).items()):
                    return float(sample.value)
        return None

    def lines(self, source: str) -> float | None:
        """kvwatch_lines_total of `source`."""
        return self.value("kvwatch_lines_total", {"source": source})

    def kill(self) -> None:
        """Make sure the process is gone (a failed test must not leave daemons behind)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.err.close()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Send `sig` and wait for the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            self.err.close()

    def processed(self, source: str) -> int:
        """The lines this run processed, from its shutdown log line."""
        text = self.log.read_text(errors="replace")
        counts = re.findall(rf"source {re.escape(source)}: (\d+) lines processed by this run", text)
        assert counts, text
        return int(counts[-1])
