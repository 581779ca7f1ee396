"""Agent-shaped traffic for a real engine: growing turns over a stable system prompt and tools.

Each conversation resends its whole history plus the previous reply and a new user turn, as a coding
agent does; its system prompt (~2,500 tokens of this tokenizer) and 8 tool definitions stay the same.
With `nonce`, the system prompt starts with a new request id on every request (what incident 1's
`cch=` value did; vLLM 0.32 drops Claude Code's own `x-anthropic-billing-header` line from system text
before its template, so that line no longer shows it): the prefix cache then matches nothing. Temperature
0, `max_tokens` 8, seeded: the same requests every run. Returns what the client saw per request.
"""

from __future__ import annotations

import json
import random
import urllib.request
from dataclasses import dataclass
from typing import Any

SYSTEM = "You are a coding agent working in a large repository. " + " ".join(
    f"Rule {i}: read the file before editing it, keep changes small, run the tests, report what changed."
    for i in range(60)
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ')}: takes a path relative to the repository root",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
                "required": ["path"],
            },
        },
    }
    for name in (
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "grep",
        "run_tests",
        "git_diff",
        "git_log",
    )
]


@dataclass(frozen=True)
class Sent:
    """One request as the client saw it."""

    conversation: str
    turn: int
    prompt_tokens: int
    cached_tokens: int


def post(url: str, body: dict[str, Any], timeout: float = 300.0) -> dict[str, Any]:
    """POST JSON to `url`; the decoded answer."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def conversation(
    base: str, name: str, turns: int, *, nonce: bool = False, billing: bool = False, seed: int = 11
) -> list[Sent]:
    """Send one conversation of `turns` requests to `base` (`http://host:port`); what each came back with.
    `billing` puts Claude Code's attribution line, with a new `cch=` each time, on top of the system."""
    rng = random.Random(f"{name}:{seed}")
    history: list[dict[str, Any]] = []
    sent = []
    for turn in range(1, turns + 1):
        system = SYSTEM
        if nonce:  # (a per-request id on top; vLLM 0.32 strips Claude Code's billing line itself)
            system = f"Request id: {rng.getrandbits(64):016x}\n{SYSTEM}"
        elif billing:
            header = "x-anthropic-billing-header: cc_version=2.1.116.d8c; cc_entrypoint=cli; "
            system = f"{header}cch={rng.getrandbits(20):05x};\n{SYSTEM}"
        history.append(
            {"role": "user", "content": f"[{name}] turn {turn}: fix the bug in src/module_{turn}.py " * 6}
        )
        answer = post(
            f"{base}/v1/chat/completions",
            {
                "model": "tiny",
                "messages": [{"role": "system", "content": system}, *history],
                "tools": TOOLS,
                "tool_choice": "none",
                "max_tokens": 8,
                "temperature": 0,
            },
        )
        usage = answer["usage"]
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        sent.append(Sent(name, turn, usage["prompt_tokens"], cached))
        reply = answer["choices"][0]["message"].get("content") or "done"
        history.append({"role": "assistant", "content": reply})
    return sent
