"""The seeds' first incident on real parts, for a person to watch: vLLM (the CPU build, a tiny model whose
template renders the tools before the system prompt), LiteLLM's proxy in front of it with kvwatch's
callback, and kvwatch following both, all on 127.0.0.1. Run from a checkout with kvwatch installed:

    .venv/bin/python scripts/litellm/field_test.py

It prints kvwatch's landing page address, plays a Claude-Code-shaped conversation on /v1/messages (a new
billing-line nonce per request) and the same conversation on /v1/chat/completions, waits until
`pinned_cache_length` and `hit_rate_gap` fire, restarts LiteLLM with kvwatch's header-stripping hook,
plays the conversation again, and waits until both resolve. It stops everything it started on the way
out (Ctrl-C included). Installs (vLLM ~3.5 GB, LiteLLM) are cached in `$KVWATCH_REAL_CACHE`
(default ~/.cache/kvwatch-real). A few minutes on two CPU cores once installed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(ROOT / "scripts" / "real")]

import claude_traffic  # noqa: E402
import litellm_proxy  # noqa: E402
import vllm_server  # noqa: E402

TURNS = 20


def say(text: str) -> None:
    print(f"[field-test] {text}", flush=True)


def firing(url: str) -> dict[tuple[str, str], float]:
    """(alert, entry) -> 1 firing / 0 resolved, from kvwatch's /metrics."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
        text = response.read().decode()
    found = {}
    for line in text.splitlines():
        if line.startswith("kvwatch_alert_firing{"):
            alert = re.search(r'alert="([^"]*)"', line)
            entry = re.search(r'entry="([^"]*)"', line)
            found[(alert.group(1) if alert else "", entry.group(1) if entry else "")] = float(
                line.rsplit(" ", 1)[1]
            )
    return found


def wait(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"[field-test] {what}: not within {timeout:.0f} s")
        time.sleep(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=float, default=30, help="seconds to keep everything up at the end")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kvwatch-field-"))
    say(f"working in {work}")
    started: list[object] = []
    kvwatch: subprocess.Popen[bytes] | None = None
    try:
        venv = vllm_server.install()
        model = vllm_server.tiny_model(venv, vllm_server.cache_dir() / "models" / "tiny-tools-first", True)
        engine = vllm_server.VllmServer(venv, model, work / "vllm.log")
        engine.start()
        started.append(engine)
        say("starting vLLM (1-5 minutes on a busy CPU) ...")
        engine.wait_healthy()
        gateway = litellm_proxy.LitellmProxy(litellm_proxy.install(), work / "litellm", engine.url)
        gateway.start()
        started.append(gateway)
        gateway.wait_healthy()
        port = litellm_proxy.free_port()
        config = work / "kvwatch.toml"
        config.write_text(
            f'state_dir = "{work / "state"}"\n[alerting]\nresolve_after = 0\n'
            f'[[source]]\nname = "litellm"\nengine = "usage"\ntype = "file"\npath = "{gateway.usage}"\n'
            'start_at = "beginning"\n'
            f'[[source]]\nname = "vllm"\nengine = "vllm"\ntype = "file"\npath = "{engine.log}"\n'
        )
        kvwatch = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kvwatch",
                "run",
                "--config",
                str(config),
                "--listen",
                f"127.0.0.1:{port}",
            ],
            stderr=(work / "kvwatch.log").open("ab"),
        )
        url = f"http://127.0.0.1:{port}"
        say(f"kvwatch's landing page: {url}/")
        say(f"playing {TURNS} Claude Code turns on /v1/messages (billing line, new nonce each) ...")
        sent = claude_traffic.messages_conversation(gateway.post, TURNS, form="joined")
        say(f"  cached tokens per turn: {[s.cached_tokens for s in sent]}")
        say(f"playing the same {TURNS} turns on /v1/chat/completions, without the line ...")
        claude_traffic.chat_conversation(gateway.post, TURNS)
        wanted = [("pinned_cache_length", "/v1/messages"), ("hit_rate_gap", "/v1/messages")]
        wait(lambda: all(firing(url).get(k) == 1 for k in wanted), 120, "the incident firing")
        say("FIRING: pinned_cache_length and hit_rate_gap on /v1/messages (see the landing page)")
        time.sleep(args.keep)
        gateway.stop()
        say("restarting LiteLLM with kvwatch's strip_billing_header hook ...")
        fixed = litellm_proxy.LitellmProxy(
            gateway.venv, work / "litellm-fixed", engine.url, strip_header=True, usage=gateway.usage
        )
        fixed.start()
        started.append(fixed)
        fixed.wait_healthy()
        healed = claude_traffic.messages_conversation(fixed.post, TURNS, form="joined", seed=8)
        say(f"  cached tokens per turn: {[s.cached_tokens for s in healed]}")
        wait(lambda: all(firing(url).get(k) == 0 for k in wanted), 180, "the incident resolving")
        say("RESOLVED: both alerts (see the landing page)")
        time.sleep(args.keep)
        return 0
    finally:
        if kvwatch is not None:
            kvwatch.terminate()
            kvwatch.wait(30)
        for thing in reversed(started):
            stop = getattr(thing, "stop", None)
            if callable(stop):
                stop()
        say(f"stopped everything; logs kept in {work}")


if __name__ == "__main__":
    sys.exit(main())
