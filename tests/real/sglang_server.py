"""A real SGLang 0.5.23 on the CPU for the tests: install it (cached), make the tiny model, start, stop.

    venv = install_sglang()                 # scripts/real/install_sglang.sh; fails with its output
    model = tiny_model(venv)                # scripts/real/tiny_model.py, cached beside the venv
    server = SglangServer(venv, model, log, flags=("--log-requests",))
    server.wait_ready()
    usage = chat(server.url, messages)      # the response's usage
    server.stop()

The server runs in its own session (SGLang forks a scheduler and a detokenizer) under `nice`; stop() and
kill() signal the whole group. Its stdout and stderr go to `log`, appended: a restart writes to the same
file, as a service's log does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts" / "real"
CACHE = Path(os.environ.get("KVWATCH_REAL_CACHE", str(Path.home() / ".cache" / "kvwatch-real")))
INSTALL_DEADLINE_S = 1200.0  # cold: ~3 min alone on 2 cores, several times that when the cores are shared
START_DEADLINE_S = 300.0  # ~20 s idle, ~70 s on 2 busy cores (the tokenizer process's imports dominate)
REQUEST_TIMEOUT_S = 180.0

#: What makes SGLang 0.5.23 serve on a CPU without sgl-kernel (see scripts/real/install_sglang.sh):
#: `--device cpu` with the transformers model implementation and torch's own attention; the KV pool sized
#: by hand (from RAM it takes ~15 GB); metrics and cached counts in responses on.
BASE_FLAGS = (
    "--device", "cpu", "--model-impl", "transformers", "--attention-backend", "torch_native",
    "--max-total-tokens", "65536", "--enable-metrics", "--enable-cache-report",
)  # fmt: skip
ENV = {
    # 1 takes SGLang's native CPU path, which needs sgl-kernel's CPU build (`No module named 'sgl_kernel'`)
    "SGLANG_USE_CPU_ENGINE": "0",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "PYTHONUNBUFFERED": "1",
}


def _tail(path: Path, lines: int = 40) -> str:
    if not path.exists():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def install_sglang() -> Path:
    """The venv holding SGLang 0.5.23 (installed on first use); a failed install fails with its output."""
    done = subprocess.run(
        [str(SCRIPTS / "install_sglang.sh")],
        capture_output=True,
        text=True,
        timeout=INSTALL_DEADLINE_S,
        check=False,
        env={**os.environ, "KVWATCH_REAL_CACHE": str(CACHE)},
    )
    if done.returncode != 0:
        raise AssertionError(
            f"installing SGLang 0.5.23 failed (exit {done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
        )
    venv = Path(done.stdout.strip().splitlines()[-1])
    assert (venv / "bin" / "python").exists(), f"install_sglang.sh printed {venv}, which holds no python"
    return venv


def tiny_model(venv: Path, name: str = "tiny-llama", tools_first: bool = False) -> Path:
    """The tiny model of scripts/real/tiny_model.py, made with `venv`'s python (cached; remade on change)."""
    script = SCRIPTS / "tiny_model.py"
    stamp = hashlib.sha256(script.read_bytes() + str(tools_first).encode()).hexdigest()[:16]
    dest = CACHE / name
    marker = dest / ".kvwatch-made"
    if marker.exists() and marker.read_text() == stamp:
        return dest
    argv = [str(venv / "bin" / "python"), str(script), str(dest)]
    if tools_first:
        argv.append("--tools-before-system")
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, check=False, env={**os.environ, **ENV}
    )
    if done.returncode != 0:
        raise AssertionError(f"tiny_model.py failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    marker.write_text(stamp)
    return dest


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SglangServer:
    """`python -m sglang.launch_server` on 127.0.0.1 with the tiny model, logging to `log`."""

    def __init__(
        self, venv: Path, model: Path, log: Path, flags: Sequence[str] = (), port: int | None = None
    ) -> None:
        """Start it (wait_ready() waits for /health)."""
        self.venv, self.model, self.log, self.flags = venv, model, log, tuple(flags)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._offset = 0
        self.start()

    def start(self) -> None:
        """Start (again) on the same port, appending to the same log."""
        argv = [
            "nice", str(self.venv / "bin" / "python"), "-m", "sglang.launch_server",
            "--model-path", str(self.model), "--host", "127.0.0.1", "--port", str(self.port),
            *BASE_FLAGS, *self.flags,
        ]  # fmt: skip
        self._offset = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **ENV},
                start_new_session=True,
            )
        if self not in STARTED:
            STARTED.append(self)

    def wait_ready(self, deadline: float = START_DEADLINE_S) -> float:
        """Poll /health until 200 (SGLang answers 503 until its warm-up request is done); seconds taken.

        SGLang binds its port only after loading (a minute on busy cores): when another process took the
        free port meanwhile (`address already in use`, and the server does not exit), it starts again on
        another port, at most twice."""
        began = time.monotonic()
        retries = 2
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"sglang exited {self.proc.returncode} while starting:\n{_tail(self.log)}"
                )
            if retries and self._port_taken():
                retries -= 1
                self.kill()
                self.port = free_port()
                self.url = f"http://127.0.0.1:{self.port}"
                self.start()
                continue
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as resp:
                    if resp.status == 200:
                        return time.monotonic() - began
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() - began > deadline:
                raise AssertionError(f"sglang not healthy within {deadline:.0f} seconds\n{_tail(self.log)}")
            time.sleep(0.5)

    def _port_taken(self) -> bool:
        """Whether this start's log says its port was taken (uvicorn: `address already in use`)."""
        with self.log.open("rb") as log:
            log.seek(self._offset)
            return b"address already in use" in log.read()

    def signal(self, sig: int) -> None:
        """Send `sig` to the server's process group."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def kill(self) -> None:
        """SIGKILL the whole group and reap the launcher."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM, then SIGKILL after `timeout`; the scheduler and detokenizer go with the group."""
        if self.proc is None:
            return
        self.signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout)
        self.kill()

    def metrics(self) -> str:
        """SGLang's own /metrics text."""
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as resp:
            return str(resp.read().decode())


#: Every server a test started; the fixtures stop them (and tests/conftest.py's teardown would not).
STARTED: list[SglangServer] = []


def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST JSON, return the JSON answer (an HTTP error fails with its body)."""
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as resp:
            answer: dict[str, Any] = json.load(resp)
            return answer
    except urllib.error.HTTPError as err:
        raise AssertionError(f"{url}: HTTP {err.code}: {err.read()[:2000]!r}") from None


def chat(
    base: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, max_tokens: int = 8
) -> dict[str, Any]:
    """One /v1/chat/completions at temperature 0; the whole response."""
    body: dict[str, Any] = {"model": "tiny", "messages": messages, "max_tokens": max_tokens, "temperature": 0}
    if tools:
        body["tools"] = tools
    return post(base + "/v1/chat/completions", body)
