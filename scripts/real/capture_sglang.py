#!/usr/bin/env python3
"""Capture real SGLang 0.5.23 logs (CPU, tiny model) as samples: samples/sglang-0.5.23-real-*.log.

    python3 scripts/real/capture_sglang.py [--out DIR] [CASE ...]     # CASE: healthy, nonce, restart

Installs SGLang (scripts/real/install_sglang.sh, cached), makes the tiny model, and per case starts a
server with tests/real/sglang_server.py's flags plus the case's, drives agent-shaped traffic
(tests/real/agent_talk.py), stops the server with SIGTERM and writes its log. The venv and model paths
in the log are replaced by `/opt/sglang` and `/models/tiny-llama` (the samples name no host's paths);
nothing else is edited. Token counts are the same on every run (temperature 0, seeded prompts); times,
throughputs and process ids are not.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from real.agent_talk import Conversation  # noqa: E402 - the tests' helpers
from real.sglang_server import SglangServer, chat, install_sglang, tiny_model  # noqa: E402

DECODE = ("--decode-log-interval", "4")


@dataclass(frozen=True)
class Case:
    """One capture: the sample's name, the server's flags and the traffic."""

    name: str
    flags: tuple[str, ...]
    drive: Callable[[SglangServer], None]


def _sender(server: SglangServer) -> Callable[..., dict[str, object]]:
    return lambda messages, tools: chat(server.url, messages, tools)


def healthy(server: SglangServer) -> None:
    """Two agent sessions, interleaved, five turns each."""
    sessions = [Conversation(seed=11), Conversation(seed=12)]
    for _ in range(5):
        for session in sessions:
            session.turn(_sender(server))


def nonce(server: SglangServer) -> None:
    """One agent session of eight turns with a new `cch=` nonce at the front of each system prompt."""
    session = Conversation(seed=21, nonce=True)
    for _ in range(8):
        session.turn(_sender(server))


def restart(server: SglangServer) -> None:
    """Four turns with `--log-requests`, SIGKILL, a restart with `--disable-radix-cache`, three turns."""
    session = Conversation(seed=31)
    for _ in range(4):
        session.turn(_sender(server))
    server.kill()
    server.flags = (*server.flags, "--disable-radix-cache")
    server.start()
    server.wait_ready()
    after = Conversation(seed=32)
    for _ in range(3):
        after.turn(_sender(server))


CASES = (
    Case("healthy", DECODE, healthy),
    Case("nonce", DECODE, nonce),
    Case("restart", (*DECODE, "--log-requests", "--log-requests-level", "0"), restart),
)


def capture(case: Case, venv: Path, model: Path, out: Path) -> Path:
    """Run one case; the sample written."""
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "sglang.log"
        server = SglangServer(venv, model, log, case.flags)
        try:
            server.wait_ready()
            case.drive(server)
        finally:
            server.stop()
        text = log.read_text(errors="replace")
    text = text.replace(str(venv), "/opt/sglang").replace(str(model), "/models/tiny-llama")
    dest = out / f"sglang-0.5.23-real-{case.name}.log"
    dest.write_text(text)
    return dest


def main(argv: list[str] | None = None) -> int:
    """Capture the cases asked for (all by default)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "samples")
    parser.add_argument("cases", nargs="*", metavar="CASE", help=", ".join(c.name for c in CASES))
    args = parser.parse_args(argv)
    unknown = set(args.cases) - {c.name for c in CASES}
    if unknown:
        parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    venv = install_sglang()
    model = tiny_model(venv)
    for case in CASES:
        if not args.cases or case.name in args.cases:
            print(capture(case, venv, model, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
