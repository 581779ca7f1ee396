"""The real-vLLM scenarios for a person to watch on kvwatch's landing page: healthy agent traffic, a
per-request id heading the system prompt (and a probe that sends one), the engine killed, the engine
restarted. vLLM is the CPU build on a tiny local model; kvwatch follows its log and probes it, all on
127.0.0.1. Run from a checkout with kvwatch installed:

    .venv/bin/python scripts/real/field_test.py [--screenshots DIR] [--keep SECONDS]

It prints kvwatch's landing page address and says what each phase should show there:

1. healthy: 16 agent turns over a stable prompt; the `billing` probe (Claude Code's attribution line,
   which vLLM 0.32 drops itself) reads reused: nothing fires;
2. nonce: a `Request id:` line heading the system prompt on every request, and a second probe,
   `request-id`, added by a reload (SIGHUP), that sends one: `prefix_hit_rate_low` and
   `probe_prefix_miss` (probe `request-id`) fire, the `billing` probe stays quiet;
3. killed: the engine core SIGKILLed: `engine_start_failed` (critical) fires;
4. restarted: vLLM started again and the `request-id` probe removed by a reload; healthy traffic:
   `engine_start_failed` resolves (`prefix_hit_rate_low` too, if the kill had not ended it), and so does
   the removed probe's `probe_prefix_miss`: nothing fires.

With `--screenshots DIR` headless Chromium saves the landing page at each phase as `DIR/N-phase.png`.
It stops everything it started on the way out (Ctrl-C included). The vLLM install (~3.5 GB) is cached
in `$KVWATCH_REAL_CACHE` (default ~/.cache/kvwatch-real). A few minutes on two CPU cores once installed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import traffic  # noqa: E402
import vllm_server  # noqa: E402


def say(text: str) -> None:
    print(f"[field-test] {text}", flush=True)


def metrics(url: str) -> str:
    """kvwatch's /metrics text ("" while it does not answer)."""
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
            return str(response.read().decode())
    except OSError:
        return ""


def firing(url: str) -> set[tuple[str, str]]:
    """(alert, the probe or source it is about) of every alert kvwatch's /metrics says is firing."""
    found = set()
    for line in metrics(url).splitlines():
        if line.startswith("kvwatch_alert_firing{") and line.endswith(" 1.0"):
            alert = re.search(r'alert="([^"]*)"', line)
            about = re.search(r'(?:probe|source)="([^"]*)"', line)
            found.add((alert.group(1) if alert else "", about.group(1) if about else ""))
    return found


def wait(predicate: Callable[[], object], timeout: float, what: str) -> None:
    """Poll until `predicate()` is true; exit naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"[field-test] {what}: not within {timeout:.0f} s")
        time.sleep(1)


def screenshot(url: str, folder: Path | None, name: str) -> None:
    """The landing page as `folder/name.png` (headless Chromium), if asked for."""
    if folder is None:
        return
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        raise SystemExit("[field-test] --screenshots needs chromium on PATH")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    with tempfile.TemporaryDirectory(prefix="kvwatch-chromium-") as profile:
        subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={profile}", f"--screenshot={path}", "--window-size=1400,2000", url + "/"],
            capture_output=True, timeout=120, check=True,
        )  # fmt: skip
    say(f"  screenshot {path}")


def config_text(work: Path, log: Path, base: str, request_id_probe: bool) -> str:
    """kvwatch's config: vLLM's log, prefix_hit_rate_low on (60 s, 3 busy lines), the probes."""
    text = (
        f'state_dir = "{work / "state"}"\n[alerting]\nresolve_after = 5\n'
        "[detectors.prefix_hit_rate_low]\nenabled = true\nwindow = 60.0\nmin_intervals = 3\n"
        f'[[source]]\nname = "vllm"\nengine = "vllm"\ntype = "file"\npath = "{log}"\nstart_at = "beginning"\n'
        f'[[probe]]\nname = "billing"\nurl = "{base}/v1/messages"\nmodel = "tiny"\n'
        "interval = 20\njitter = 0\n"
    )
    if request_id_probe:
        text += (
            f'[[probe]]\nname = "request-id"\nurl = "{base}/v1/chat/completions"\nmodel = "tiny"\n'
            'interval = 20\njitter = 0\nnonce_form = "request-id"\n'
        )
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--screenshots", type=Path, help="save the landing page at each phase here")
    parser.add_argument("--keep", type=float, default=0, help="seconds to keep each phase up for a person")
    args = parser.parse_args()
    shots: Path | None = args.screenshots
    work = Path(tempfile.mkdtemp(prefix="kvwatch-field-vllm-"))
    say(f"working in {work}")
    engine: vllm_server.VllmServer | None = None
    kvwatch: subprocess.Popen[bytes] | None = None
    try:
        venv = vllm_server.install()
        model = vllm_server.tiny_model(venv, vllm_server.cache_dir() / "models" / "tiny")
        engine = vllm_server.VllmServer(venv, model, work / "vllm.log", env={"VLLM_SERVER_DEV_MODE": "1"})
        engine.start()
        say("starting vLLM (1-5 minutes on a busy CPU) ...")
        engine.wait_healthy()
        # (an empty cache before any probe runs: a reset between a probe's two requests would read as a miss)
        engine.post("/reset_prefix_cache", {})
        port = vllm_server.free_port()
        config = work / "kvwatch.toml"
        config.write_text(config_text(work, engine.log, engine.url, False))
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
        wait(lambda: metrics(url), 60, "kvwatch answering")
        say(f"kvwatch's landing page: {url}/")

        say("1 healthy: 16 agent turns over a stable prompt ...")
        sent = traffic.conversation(engine.url, "A", 8) + traffic.conversation(engine.url, "B", 8)
        say(f"  cached tokens per turn: {[s.cached_tokens for s in sent]}")
        ran = re.compile(r'kvwatch_probe_runs_total\{[^}]*outcome="ok"[^}]*probe="billing"[^}]*\} [1-9]')
        wait(lambda: ran.search(metrics(url)), 120, "the billing probe's first run")
        wait(lambda: "Prefix cache hit rate" in engine.text().rsplit("Avg prompt", 3)[-1], 90, "a stats line")
        time.sleep(3)  # (for the page to show the last stats line read)
        say(f"  firing: {sorted(firing(url)) or 'nothing'}")
        screenshot(url, shots, "1-healthy")
        time.sleep(args.keep)

        say("2 nonce: a request id heading the system prompt; the request-id probe added (SIGHUP) ...")
        config.write_text(config_text(work, engine.log, engine.url, True))
        kvwatch.send_signal(signal.SIGHUP)
        wanted = {("prefix_hit_rate_low", "vllm"), ("probe_prefix_miss", "request-id")}
        rounds = 0
        deadline = time.monotonic() + 400
        while not wanted <= firing(url):
            if time.monotonic() > deadline:
                raise SystemExit(f"[field-test] nonce phase: firing only {sorted(firing(url))}")
            rounds += 1
            traffic.conversation(engine.url, f"N{rounds}", 4, nonce=True)
        say(f"  firing: {sorted(firing(url))}")
        screenshot(url, shots, "2-nonce")
        time.sleep(args.keep)

        say("3 killed: SIGKILL of the engine core ...")
        engine.kill_engine_core()
        engine.wait_exit(120)
        wait(lambda: ("engine_start_failed", "vllm") in firing(url), 90, "engine_start_failed firing")
        say(f"  firing: {sorted(firing(url))}")
        screenshot(url, shots, "3-killed")
        time.sleep(args.keep)

        say("4 restarted: vLLM again, the request-id probe removed (SIGHUP), healthy traffic ...")
        mark = engine.log.stat().st_size
        engine.start()
        engine.wait_healthy()
        config.write_text(config_text(work, engine.log, engine.url, False))  # (and vLLM's new port)
        kvwatch.send_signal(signal.SIGHUP)
        rounds = 0
        deadline = time.monotonic() + 400
        while firing(url):
            if time.monotonic() > deadline:
                raise SystemExit(f"[field-test] restart phase: still firing {sorted(firing(url))}")
            rounds += 1
            traffic.conversation(engine.url, f"R{rounds}", 6)
        # (a restarted engine starts from a cold cache: kvwatch's window starts again at its first stats line)
        busy = re.compile(r"Avg prompt throughput: (?!0\.0 )")
        wait(lambda: busy.search(engine.log.read_bytes()[mark:].decode("utf-8", "replace")), 120,
             "the restart's first busy stats line")  # fmt: skip
        time.sleep(6)  # (kvwatch reads it within a second; the page draws it)
        say(f"  firing: {sorted(firing(url)) or 'nothing'}")
        screenshot(url, shots, "4-restarted")
        time.sleep(args.keep)
        return 0
    finally:
        if kvwatch is not None:
            kvwatch.terminate()
            kvwatch.wait(30)
        if engine is not None:
            engine.stop()
        say(f"stopped everything; logs kept in {work}")


if __name__ == "__main__":
    sys.exit(main())
