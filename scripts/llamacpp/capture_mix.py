#!/usr/bin/env python3
"""Capture the bench's reference line mix: a real llama-server `-lv 4` log of agent-like sessions.

Usage: python3 scripts/llamacpp/capture_mix.py [--bin PATH] [--models DIR] [-o LOG]

Starts llama-server as capture.py does (its base flags, `-lv 4`, two slots) with a context of
8192 (4096 per slot, the model's training context), then runs two agents at once, each going round
three conversations (six conversations on two slots, so slots are re-selected and the prompt cache
saves and loads). Every conversation grows turn by turn, as a coding agent resends its history;
every third turn carries a long tool output (~2,700 tokens, two 2048-token batches), and two turns
later the client clears it (capture.CLEARED), as agents do with stale tool output; prompts stay
below the slot's 4096 tokens.
`python3 bench/mix_llamacpp.py LOG` measures its line kinds (bench/llamacpp-mix.json).
Dependencies: requests (and the stdlib).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
from pathlib import Path

import capture

CASE = capture.Case(
    "agent-mix",
    "six growing agent conversations, two at a time on two slots, some long tool outputs",
    flags=capture.TRACE,
    max_tokens=24,
)
TURNS = 7
LONG_EVERY = 3
LONG_MARK = "\nTool result (read_file):\n"
LONG_ROWS = 72  # rows of a long tool output, ~37 tokens each


def long_output(name: str, turn: int) -> str:
    """A long tool output: a file listing as an agent's read_file returns it."""
    rows = (
        f"{i:4d}  def step_{name.lower()}{turn}_{i}(ctx): return ctx.run('{name}', {i}, {turn * i})"
        for i in range(1, LONG_ROWS + 1)
    )
    return LONG_MARK + "\n".join(rows)


def clear_long(history: capture.Messages) -> None:
    """Replace the long tool outputs sent so far, as agents drop stale tool output."""
    for message in history:
        if message["role"] == "user" and LONG_MARK in message["content"]:
            message["content"] = capture.CLEARED


def agent(base: str, names: tuple[str, ...], errors: list[BaseException]) -> None:
    """One agent: goes round its conversations for TURNS turns each."""
    try:
        conversations = [capture.Conversation(name) for name in names]
        for turn in range(1, TURNS + 1):
            for conv in conversations:
                family = "A" if conv.name in "ACE" else "B"
                if turn % LONG_EVERY == 2 and turn > LONG_EVERY:
                    clear_long(conv.history)
                text = capture.USER_TURNS[family][(turn - 1) % 5]
                if turn % LONG_EVERY == 0:
                    text += long_output(conv.name, turn)
                conv.history.append({"role": "user", "content": f"[{conv.name}] {text}"})
                system = capture.system_blocks(family, None)
                system[0] = f"Session {conv.name}. " + system[0]
                body = capture.send_turn(base, CASE, conv, system)
                reply = capture.reply_text(CASE.endpoint, body)
                conv.history.append({"role": "assistant", "content": reply})
    except BaseException as exc:  # reported by the main thread
        errors.append(exc)


def start_server(binary: Path, models: Path, port: int, log: Path) -> capture.Server:
    """capture.start_server with `-c 8192` in place of its base flags' `-c 4096`."""
    flags = list(capture.BASE_FLAGS)
    flags[flags.index("-c") + 1] = "8192"
    argv = [str(binary), "-m", capture.MODELS["llama"], "--host", "127.0.0.1", "--port", str(port)]
    argv += [*flags, *CASE.flags]
    print("  $", " ".join(argv), file=sys.stderr)
    with log.open("wb") as sink:  # the child keeps its own descriptor
        return subprocess.Popen(argv, cwd=models, stdout=sink, stderr=subprocess.STDOUT)


def main() -> None:
    """Start the server, run both agents concurrently, stop it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", type=Path, default=capture.CACHE / "build/bin/llama-server")
    parser.add_argument("--models", type=Path, default=capture.CACHE / "models")
    parser.add_argument("-o", "--output", type=Path, default=Path("llamacpp-agent-mix.log"))
    args = parser.parse_args()
    port = capture.free_port()
    log = args.output.resolve()
    server = start_server(args.bin.resolve(), args.models.resolve(), port, log)
    errors: list[BaseException] = []
    try:
        base = f"http://127.0.0.1:{port}"
        capture.wait_healthy(base, server)
        agents = [
            threading.Thread(target=agent, args=(base, pair, errors))
            for pair in (("A", "C", "E"), ("B", "D", "F"))
        ]
        for thread in agents:
            thread.start()
        for thread in agents:
            thread.join()
    finally:
        capture.stop_server(server)
    if errors:
        sys.exit(f"capture failed: {errors[0]!r}")
    print(log)


if __name__ == "__main__":
    main()
