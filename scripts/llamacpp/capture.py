#!/usr/bin/env python3
"""Run a real llama-server and capture its log plus the client-side cache truth per request.

Usage: python3 scripts/llamacpp/capture.py [--bin PATH] [--models DIR] [--out DIR] [CASE ...]

  --bin     llama-server binary (default: $KVWATCH_LLAMA_CACHE/build/bin/llama-server)
  --models  directory with tiny-llama.gguf and tiny-gemma2-swa.gguf (make_models.py)
  --out     where to write llamacpp-CASE.log and llamacpp-CASE.truth.json (default: samples/)
  CASE      case names to run (default: all); `--list` prints them.

Each case starts its own llama-server on 127.0.0.1 (free port) with
`-c 4096 --parallel 2 -t 2 --log-colors off --metrics --no-ui --seed 42` plus the case's flags,
sends the server's stdout+stderr to the log file, waits for /health, drives 2 interleaved
conversations (A1 B1 A2 B2 ...) at temperature 0, then stops the server with SIGINT.
The truth file lists, in request order, the prompt and cached token counts the API returned (a
request the client cancelled gets none back: its entry has `cancelled` and `cached_tokens` null, and
`prompt_tokens` from the retry of the same messages that follows it).
Dependencies: requests (and the stdlib).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("KVWATCH_LLAMA_CACHE", Path.home() / ".cache/kvwatch/llama-b11434"))
BASE_FLAGS = (
    "-c", "4096", "--parallel", "2", "-t", "2", "--log-colors", "off",
    "--metrics", "--no-ui", "--seed", "42",
)  # fmt: skip
TRACE = ("-lv", "4")
# a small ubatch keeps the SWA cache (n_swa * n_seq + n_ubatch -> 256 cells) below the prompt
# length, as with real SWA models and long prompts; the default 512 would cover these prompts
SWA_FLAGS = (*TRACE, "-ub", "128")
MODELS = {"llama": "tiny-llama.gguf", "swa": "tiny-gemma2-swa.gguf"}
CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
CLEARED = "[Old tool result content cleared]"
HEALTH_DEADLINE_S = 120.0
REQUEST_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 30.0
NONCE_SEED = 20260
BILLING_HEADER = (
    "x-anthropic-billing-header: cc_version=2.1.116.d8c; cc_entrypoint=claude-vscode; cch={nonce};"
)


@dataclass(frozen=True)
class Case:
    """One server run: model, endpoint, prompt behaviour and server flags."""

    name: str
    summary: str
    model: str = "llama"
    endpoint: str = CHAT
    header: bool = False
    clear_results: bool = False
    cache_reuse: int = 0  # request field n_cache_reuse (llama.cpp extension), 0 = not sent
    flags: tuple[str, ...] = TRACE
    turns: int = 5
    max_tokens: int = 12
    cancel_turns: tuple[int, ...] = ()  # turns of A the client first streams and cancels, then retries


CASES = (
    Case("healthy-two-slots", "plain model, stable prompts: each conversation keeps its slot"),
    Case(
        "varying-header-chat",
        "billing header with a new cch= per request via /v1/chat/completions: prefix breaks",
        header=True,
    ),
    Case(
        "varying-header-messages",
        "the same header via /v1/messages: llama.cpp rewrites cch=fffff, reuse stays healthy",
        endpoint=MESSAGES,
        header=True,
    ),
    Case(
        "swa-varying-header",
        "SWA model + varying header (+ cache reuse 256): forcing full re-processing",
        model="swa",
        header=True,
        flags=(*SWA_FLAGS, "--cache-reuse", "256"),
        cache_reuse=256,
    ),
    Case(
        "swa-checkpoints",
        "SWA model, every 2nd turn the client clears the last tool output: checkpoint restores",
        model="swa",
        flags=SWA_FLAGS,
        clear_results=True,
    ),
    Case("default-verbosity", "plain model, stable prompts, default -lv 3", flags=()),
    Case(
        "cancelled",
        "plain model, stable prompts; A's turns 2 and 4 are streamed, cancelled after the first "
        "token (released without timings) and retried",
        cancel_turns=(2, 4),
    ),
    Case("jsonl", "plain model, --log-jsonl", flags=(*TRACE, "--log-jsonl"), turns=2),
    Case(
        "no-prefix",
        "plain model, --no-log-prefix --no-log-timestamps",
        flags=(*TRACE, "--no-log-prefix", "--no-log-timestamps"),
        turns=2,
    ),
)

TOOLS = (
    ("read_file", "Read a file from the workspace.", {"path": "string", "offset": "integer"}),
    ("write_file", "Create or overwrite a file.", {"path": "string", "content": "string"}),
    ("edit_file", "Replace one exact string in a file.", {"path": "string", "old": "string",
                                                         "new": "string"}),
    ("run_shell", "Run a shell command and return its output.", {"command": "string",
                                                                 "timeout_s": "integer"}),
    ("grep", "Search files for a regular expression.", {"pattern": "string", "glob": "string"}),
    ("list_dir", "List the entries of a directory.", {"path": "string", "depth": "integer"}),
)  # fmt: skip

AGENTS = {
    "A": (
        "You are Forge, an autonomous coding agent working in the repository /srv/forge-app. "
        "You fix bugs, write tests and keep the build green."
    ),
    "B": (
        "Scout here: a careful code review assistant for the payments service at /opt/ledger. "
        "You read diffs, point out risks and suggest small, safe changes."
    ),
}

RULES = (
    "Rules: think before acting; prefer small edits; run the tests after every change; never "
    "delete files you did not create; ask before touching CI configuration; keep answers short. "
    "When a tool fails, read its error, fix the call and try again at most twice. Report what you "
    "changed and why in one paragraph at the end."
)

USER_TURNS = {
    "A": (
        "The test test_invoice_totals fails with an off-by-one in the rounding of VAT. Find it.",
        "Tool result (read_file src/invoice.py): def total(items): return round(sum(i.net for i "
        "in items) * 1.2, 1)",
        "Tool result (run_shell pytest -q): 1 failed, 41 passed in 2.31s; expected 12.35 got 12.4",
        "Use two decimals and Decimal with ROUND_HALF_UP, then rerun the failing test only.",
        "Tool result (run_shell pytest -q -k invoice): 3 passed in 0.42s. Summarise the change.",
    ),
    "B": (
        "Please review the diff of ledger/transfer.py in the last commit for concurrency issues.",
        "Tool result (grep 'lock' ledger/): transfer.py:41 with self._lock: ... balance -= amount",
        "The balance check happens before the lock is taken. Is that a race? Explain briefly.",
        "Tool result (read_file ledger/transfer.py 30): if balance >= amount: with self._lock: ...",
        "Suggest the smallest fix and a test that would have caught the race.",
    ),
}


Messages = list[dict[str, str]]


@dataclass
class Conversation:
    """Messages of one conversation as the client resends them each turn."""

    name: str
    history: list[dict[str, str]] = field(default_factory=list)


def tool_block() -> str:
    """The fake tool definitions, as a coding agent puts them in its system prompt."""
    specs = []
    for name, description, params in TOOLS:
        properties = {key: {"type": kind} for key, kind in params.items()}
        schema = {"type": "object", "properties": properties, "required": list(params)}
        specs.append({"name": name, "description": description, "input_schema": schema})
    return "# Tools\n" + "\n".join(json.dumps(spec, sort_keys=True) for spec in specs)


def system_blocks(conversation: str, nonce: str | None) -> list[str]:
    """System prompt parts: optional billing header first, then agent, tools and rules."""
    body = "\n\n".join((AGENTS[conversation], tool_block(), RULES))
    if nonce is None:
        return [body]
    return [BILLING_HEADER.format(nonce=nonce), body]


def long_result(conversation: str, turn: int) -> str:
    """A long tool output (~300 tokens) appended to a user turn."""
    rows = (
        f"{i:4d}  def handler_{conversation.lower()}{turn}_{i}(req): return route(req, {i})"
        for i in range(1, 13)
    )
    return "\n" + "\n".join(rows)


def user_message(case: Case, conversation: str, turn: int) -> str:
    """The user turn: fixed text, plus a long tool output when the case clears them later."""
    text = USER_TURNS[conversation][turn - 1]
    return text + long_result(conversation, turn) if case.clear_results else text


def clear_last_result(history: Messages) -> None:
    """Replace the newest user message, as clients do when they drop stale tool output."""
    for message in reversed(history):
        if message["role"] == "user":
            message["content"] = CLEARED
            return


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


Server = subprocess.Popen[bytes]


def start_server(binary: Path, models: Path, case: Case, port: int, log: Path) -> Server:
    """Start llama-server for a case, stdout and stderr into the log file."""
    argv = [str(binary), "-m", MODELS[case.model], "--host", "127.0.0.1", "--port", str(port)]
    argv += [*BASE_FLAGS, *case.flags]
    print("  $", " ".join(argv), file=sys.stderr)
    with log.open("wb") as sink:  # the child keeps its own descriptor
        return subprocess.Popen(argv, cwd=models, stdout=sink, stderr=subprocess.STDOUT)


def wait_healthy(base: str, server: Server) -> None:
    """Poll /health until it answers 200, the server dies, or the deadline passes."""
    deadline = time.monotonic() + HEALTH_DEADLINE_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"llama-server exited with {server.returncode} before ready")
        try:
            if requests.get(base + "/health", timeout=2).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.2)
    raise TimeoutError("llama-server not healthy in time")


def stop_server(server: Server) -> None:
    """SIGINT for a clean shutdown; kill only if it hangs."""
    if server.poll() is None:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def chat_request(case: Case, system: list[str], history: Messages) -> dict[str, Any]:
    """OpenAI chat body: the system parts joined into one leading system message."""
    messages = [{"role": "system", "content": "\n".join(system)}, *history]
    body = {"model": "tiny", "messages": messages, "temperature": 0, "max_tokens": case.max_tokens}
    return body | ({"n_cache_reuse": case.cache_reuse} if case.cache_reuse else {})


def messages_request(case: Case, system: list[str], history: Messages) -> dict[str, Any]:
    """Anthropic body: system as a list of text blocks, the header first."""
    blocks = [{"type": "text", "text": text} for text in system]
    return {
        "model": "tiny",
        "system": blocks,
        "messages": history,
        "temperature": 0,
        "max_tokens": case.max_tokens,
    }


def reply_text(endpoint: str, body: dict[str, Any]) -> str:
    """The generated text of a response."""
    if endpoint == CHAT:
        return str(body["choices"][0]["message"]["content"] or "")
    return "".join(part.get("text", "") for part in body["content"])


def usage_truth(endpoint: str, body: dict[str, Any]) -> dict[str, int]:
    """prompt_tokens and cached_tokens as the client sees them (plus timings if present)."""
    usage = body["usage"]
    if endpoint == CHAT:
        prompt = int(usage["prompt_tokens"])
        cached = int(usage.get("prompt_tokens_details", {}).get("cached_tokens", 0))
        truth = {"prompt_tokens": prompt, "cached_tokens": cached}
    else:
        cached = int(usage.get("cache_read_input_tokens", 0))
        created = int(usage.get("cache_creation_input_tokens", 0))
        prompt = int(usage["input_tokens"]) + cached + created
        uncached = int(usage["input_tokens"])
        truth = {"prompt_tokens": prompt, "cached_tokens": cached, "input_tokens": uncached}
    timings = body.get("timings", {})
    truth.update({key: int(timings[key]) for key in ("cache_n", "prompt_n") if key in timings})
    return truth


def send_turn(base: str, case: Case, conv: Conversation, system: list[str]) -> dict[str, Any]:
    """POST one turn and return the decoded response."""
    build = chat_request if case.endpoint == CHAT else messages_request
    response = requests.post(
        base + case.endpoint, json=build(case, system, conv.history), timeout=REQUEST_TIMEOUT_S
    )
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return body


def cancel_turn(base: str, case: Case, conv: Conversation, system: list[str]) -> None:
    """Stream the turn with room for a long reply and hang up at the first chunk: llama-server cancels
    the task and releases its slot without printing timings."""
    body = chat_request(case, system, conv.history) | {"stream": True, "max_tokens": 2000}
    with requests.post(base + CHAT, json=body, stream=True, timeout=REQUEST_TIMEOUT_S) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith(b"data: "):
                break  # (the with block closes the connection: the server sees the client gone)
    time.sleep(1.0)  # let the server notice and release the slot before the retry


def drive(base: str, case: Case) -> list[dict[str, Any]]:
    """Run the interleaved conversations; return the truth records in request order."""
    nonces = random.Random(NONCE_SEED)
    conversations = [Conversation("A"), Conversation("B")]
    truth: list[dict[str, Any]] = []
    for turn in range(1, case.turns + 1):
        for conv in conversations:
            if case.clear_results and turn % 2 == 1:  # turns 3 and 5
                clear_last_result(conv.history)
            conv.history.append({"role": "user", "content": user_message(case, conv.name, turn)})
            nonce = f"{nonces.randrange(16**5):05x}" if case.header else None
            if conv.name == "A" and turn in case.cancel_turns:
                cancel_turn(base, case, conv, system_blocks(conv.name, nonce))
                truth.append({"conversation": conv.name, "turn": turn, "endpoint": CHAT, "cancelled": True})
            body = send_turn(base, case, conv, system_blocks(conv.name, nonce))
            reply = reply_text(case.endpoint, body)
            conv.history.append({"role": "assistant", "content": reply})
            record = {"conversation": conv.name, "turn": turn, "endpoint": case.endpoint}
            truth.append(record | usage_truth(case.endpoint, body))
            if truth[-2:][0].get("cancelled"):  # the cancelled attempt sent the same prompt
                truth[-2] |= {"prompt_tokens": record_prompt(truth[-1]), "cached_tokens": None}
    return truth


def record_prompt(record: dict[str, Any]) -> int:
    """A truth record's prompt tokens."""
    return int(record["prompt_tokens"])


def run_case(binary: Path, models: Path, out: Path, case: Case) -> list[dict[str, Any]]:
    """One server run: start, drive, stop; write the truth file."""
    log = out / f"llamacpp-{case.name}.log"
    port = free_port()
    server = start_server(binary, models, case, port, log)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, server)
        truth = drive(base, case)
    finally:
        stop_server(server)
    text = json.dumps(truth, indent=1) + "\n"
    log.with_suffix(".truth.json").write_text(text, encoding="utf-8")
    return truth


def summarise(case: Case, truth: list[dict[str, Any]], log: Path) -> str:
    """One line: reuse ratio and the signature lines found in the log."""
    prompt = sum(int(t["prompt_tokens"]) for t in truth)
    cached = sum(int(t["cached_tokens"] or 0) for t in truth)
    text = log.read_text(encoding="utf-8", errors="replace")
    marks = ("selected slot by", "memory_seq_rm", "forcing full", "restored context checkpoint")
    counts = ", ".join(f"{mark!r}: {text.count(mark)}" for mark in marks)
    ratio = cached / max(prompt, 1)
    lines = text.count("\n")
    return f"{case.name}: reuse {cached}/{prompt} = {ratio:.3f}; {lines} lines; {counts}"


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", type=Path, default=CACHE / "build/bin/llama-server")
    parser.add_argument("--models", type=Path, default=CACHE / "models")
    parser.add_argument("--out", type=Path, default=ROOT / "samples")
    parser.add_argument("--list", action="store_true", help="print the case names and exit")
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    return parser.parse_args()


def main() -> None:
    """Run the selected cases one after another."""
    args = parse_args()
    if args.list:
        for case in CASES:
            print(f"{case.name:26} {case.summary}")
        return
    unknown = set(args.cases) - {case.name for case in CASES}
    if unknown:
        sys.exit(f"unknown case(s): {', '.join(sorted(unknown))}")
    args.out.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        if args.cases and case.name not in args.cases:
            continue
        print(f"== {case.name}: {case.summary}", file=sys.stderr)
        truth = run_case(args.bin.resolve(), args.models.resolve(), args.out, case)
        print(summarise(case, truth, args.out / f"llamacpp-{case.name}.log"))


if __name__ == "__main__":
    main()
