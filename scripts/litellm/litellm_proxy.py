"""Run LiteLLM's proxy (litellm[proxy] 1.108.7, installed by install_litellm.sh) in front of an engine,
with kvwatch's callback (kvwatch/engines/usage/litellm_hook.py) writing usage records kvwatch follows.

Shared by the real-gateway tests and the field test:

    venv = install()                                  # install_litellm.sh: cached between runs
    proxy = LitellmProxy(venv, workdir, engine_url)   # config.yaml + litellm_hook.py written in workdir
    proxy.start(); proxy.wait_healthy()               # /health/liveliness, with a deadline
    proxy.chat(...), proxy.messages(...)              # requests as a client sends them
    proxy.stop()

The proxy listens on 127.0.0.1 only, offline (`LITELLM_LOCAL_MODEL_COST_MAP=True`, telemetry off), with a
master key (LiteLLM refuses to start without one). `strip_header` adds the callback removing Claude
Code's billing line before LiteLLM forwards a request.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HOOK = ROOT / "kvwatch" / "engines" / "usage" / "litellm_hook.py"
VERSION = "1.108.7"
MASTER_KEY = "sk-kvwatch-local-test"
START_TIMEOUT_S = 180.0


class ProxyError(RuntimeError):
    """The install or the proxy failed; the message says why."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def install() -> Path:
    """The litellm venv (installed on first use, reused after)."""
    done = subprocess.run(
        ["bash", str(HERE / "install_litellm.sh")], capture_output=True, text=True, timeout=1800, check=False
    )
    if done.returncode != 0:
        noise = "WARNING: Location "
        stderr = "\n".join(line for line in done.stderr.splitlines() if not line.startswith(noise))
        raise ProxyError(f"scripts/litellm/install_litellm.sh failed ({done.returncode}):\n{stderr[-3000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def config_yaml(engine_url: str, strip_header: bool) -> str:
    """LiteLLM's config: model `tiny` on the engine's chat API, kvwatch's callback(s).

    `hosted_vllm/`: LiteLLM sends /v1/messages to the engine's /v1/chat/completions (with `openai/` it
    would go to /v1/responses)."""
    callbacks = ["litellm_hook.usage_log"] + (["litellm_hook.strip_billing_header"] if strip_header else [])
    return (
        "model_list:\n"
        "  - model_name: tiny\n"
        "    litellm_params:\n"
        "      model: hosted_vllm/tiny\n"
        f"      api_base: {engine_url}/v1\n"
        "      api_key: none\n"
        "litellm_settings:\n"
        f"  callbacks: {json.dumps(callbacks)}\n"
    )


class LitellmProxy:
    """One proxy process; its log is `workdir/litellm.log`, its usage records `workdir/usage.jsonl`."""

    def __init__(
        self,
        venv: Path,
        workdir: Path,
        engine_url: str,
        strip_header: bool = False,
        usage: Path | None = None,
    ) -> None:
        """Not started yet; `usage`: where the callback writes (default `workdir/usage.jsonl`)."""
        self.venv, self.workdir = venv, workdir
        self.engine_url, self.strip_header = engine_url, strip_header
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.usage = usage or workdir / "usage.jsonl"
        self.log = workdir / "litellm.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Write the config and the callback beside it, and start the proxy on a free port."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(HOOK, self.workdir / "litellm_hook.py")
        config = self.workdir / "config.yaml"
        config.write_text(config_yaml(self.engine_url, self.strip_header))
        self.port = free_port()
        env = {
            **os.environ,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_TELEMETRY_DISABLED": "true",
            "LITELLM_MASTER_KEY": MASTER_KEY,
            "KVWATCH_USAGE_LOG": str(self.usage),
            "NO_PROXY": "127.0.0.1,localhost",
        }
        argv = [str(self.venv / "bin" / "litellm"), "--config", str(config), "--host", "127.0.0.1",
                "--port", str(self.port), "--num_workers", "1"]  # fmt: skip
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                ["nice", "-n", "5", *argv], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=env, cwd=self.workdir, start_new_session=True,
            )  # fmt: skip

    def wait_healthy(self, timeout: float = START_TIMEOUT_S) -> float:
        """Seconds until /health/liveliness answered; ProxyError with the log's tail if it exits or hangs."""
        assert self.proc is not None
        began = time.monotonic()
        while time.monotonic() - began < timeout:
            if self.proc.poll() is not None:
                raise ProxyError(f"LiteLLM exited {self.proc.returncode}:\n{self._tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/health/liveliness", timeout=5) as response:
                    if response.status == 200:
                        return time.monotonic() - began
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        self.stop()
        raise ProxyError(f"LiteLLM not answering within {timeout:.0f} seconds\n{self._tail()}")

    def _tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])

    def post(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
        """POST JSON through the proxy, as a client with the master key; the decoded answer."""
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {MASTER_KEY}",
                     **(headers or {})},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                answer: dict[str, Any] = json.loads(response.read())
                return answer
        except urllib.error.HTTPError as err:
            raise ProxyError(f"{path}: HTTP {err.code}: {err.read()[:2000]!r}\n{self._tail()}") from None

    def stop(self) -> None:
        """SIGTERM the process group, SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(20)
