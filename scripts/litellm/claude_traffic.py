"""Claude-Code-shaped traffic through a gateway: `/v1/messages` with tools, a system prompt whose first
block is the billing line (`x-anthropic-billing-header: cc_version=…; cc_entrypoint=…; cch=<nonce>;`,
a new nonce per request), growing turns; and the same conversation without the line through
`/v1/chat/completions`, as a second client would send it.

`form` says how the billing line is written:
* `"claude"`: exactly as Claude Code sends it (its own system block, first). vLLM ≥ 0.32 removes a
  system text part that starts with `x-anthropic-billing-header` before its chat template (both APIs),
  so through LiteLLM to vLLM 0.32 it no longer breaks the prefix.
* `"joined"`: the same line at the front of the one system block that also holds the prompt, after a
  newline that the gateway added before it (`"\\nx-anthropic-billing-header: …"`): the form vLLM's
  check (`text.startswith(...)`) misses, which is what an engine without that check (vLLM < 0.32,
  SGLang, the seeds' deployment) sees for the `"claude"` form too.

Temperature 0 and 8 output tokens: the same requests every run. Returns what the client saw.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SYSTEM = "You are Claude Code, a coding agent working in a large repository. " + " ".join(
    f"Rule {i}: read the file before editing it, keep changes small, run the tests, report what changed."
    for i in range(6)
)
TOOL_NAMES = ("Read", "Write", "Edit", "Glob", "Grep", "Bash", "TodoWrite", "WebFetch")
#: Anthropic tool definitions (what Claude Code sends), and the same as OpenAI function tools.
TOOLS = [
    {
        "name": name,
        "description": f"{name}: "
        + " ".join(f"step {i} takes a path relative to the repository root." for i in range(2)),
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
            "required": ["path"],
        },
    }
    for name in TOOL_NAMES
]
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]},
    }
    for t in TOOLS
]
HEADER = "x-anthropic-billing-header: cc_version=2.1.37.3a1; cc_entrypoint=cli; cch={nonce};"


@dataclass(frozen=True)
class Sent:
    """One request as the client saw it: prompt tokens (cached included) and cached tokens."""

    entry: str
    turn: int
    prompt_tokens: int
    cached_tokens: int


Post = Callable[[str, dict[str, Any]], dict[str, Any]]


def user_turn(turn: int) -> str:
    """The user's text of a turn (long enough that each turn adds a few blocks)."""
    return f"turn {turn}: fix the failing test in src/module_{turn}.py and explain the change. " * 4


def messages_conversation(post: Post, turns: int, form: str = "claude", seed: int = 7) -> list[Sent]:
    """`turns` Claude-Code-shaped /v1/messages requests; a new nonce on each."""
    rng = random.Random(seed)
    history: list[dict[str, Any]] = []
    sent = []
    for turn in range(1, turns + 1):
        header = HEADER.format(nonce=f"{rng.getrandbits(20):05x}")
        if form == "claude":
            system: Any = [{"type": "text", "text": header}, {"type": "text", "text": SYSTEM}]
        elif form == "joined":
            system = [{"type": "text", "text": f"\n{header}\n{SYSTEM}"}]
        else:
            system = [{"type": "text", "text": SYSTEM}]
        history.append({"role": "user", "content": user_turn(turn)})
        answer = post(
            "/v1/messages",
            {"model": "tiny", "max_tokens": 8, "temperature": 0, "system": system, "tools": TOOLS,
             "messages": history},
        )  # fmt: skip
        usage = answer["usage"]
        cached = int(usage.get("cache_read_input_tokens") or 0)
        prompt = int(usage["input_tokens"]) + cached + int(usage.get("cache_creation_input_tokens") or 0)
        sent.append(Sent("/v1/messages", turn, prompt, cached))
        text = "".join(b.get("text", "") for b in answer.get("content", []) if isinstance(b, dict)) or "done"
        history.append({"role": "assistant", "content": text})
    return sent


def chat_conversation(post: Post, turns: int) -> list[Sent]:
    """The same conversation without the billing line, through /v1/chat/completions."""
    history: list[dict[str, Any]] = []
    sent = []
    for turn in range(1, turns + 1):
        history.append({"role": "user", "content": user_turn(turn)})
        answer = post(
            "/v1/chat/completions",
            {"model": "tiny", "max_tokens": 8, "temperature": 0, "tools": OPENAI_TOOLS, "tool_choice": "none",
             "messages": [{"role": "system", "content": SYSTEM}, *history]},
        )  # fmt: skip
        usage = answer["usage"]
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        sent.append(Sent("/v1/chat/completions", turn, int(usage["prompt_tokens"]), cached))
        history.append(
            {"role": "assistant", "content": answer["choices"][0]["message"].get("content") or "done"}
        )
    return sent
