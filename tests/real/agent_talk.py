"""Agent-shaped traffic for the real-engine tests: a stable system prompt and tools, turns that grow.

Each turn resends the whole history plus the previous reply and a new user message, as a coding agent
does. With `nonce=True` the system prompt starts with Claude Code's attribution line and a new `cch=`
value per request (the incident: the prefix breaks a few tokens in). Seeded: the same text every run;
no real prompt is ever sent.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_WORD_TEXT = (
    "the file code test function return value error request cache token prefix model agent tool "
    "user read write edit run search list path line string number config option flag version build "
    "server"
)
WORDS = _WORD_TEXT.split()
HEADER = "x-anthropic-billing-header: cc_version=2.1.116.d8c; cc_entrypoint=cli; cch={nonce};\n"


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


@dataclass
class Conversation:
    """One agent session; `send` posts a message list (+ tools) and returns the response."""

    seed: int
    nonce: bool = False
    system_words: int = 600
    turn_words: int = 80
    rng: random.Random = field(init=False)
    system: str = field(init=False)
    tools: list[dict[str, Any]] = field(init=False)
    history: list[dict[str, Any]] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        """The session's fixed system prompt and tool definitions."""
        self.rng = random.Random(self.seed)
        self.system = f"You are coding agent {self.seed}. " + _text(self.rng, self.system_words)
        self.tools = [
            {
                "type": "function",
                "function": {
                    "name": f"tool_{i}",
                    "description": _text(self.rng, 40),
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                },
            }
            for i in range(4)
        ]

    def turn(
        self, send: Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]
    ) -> dict[str, Any]:
        """Send the next turn; the response's `usage` (prompt_tokens, prompt_tokens_details.cached_tokens)."""
        system = self.system
        if self.nonce:
            system = HEADER.format(nonce=f"{self.rng.getrandbits(20):05x}") + system
        self.history.append(
            {"role": "user", "content": f"turn {len(self.history) // 2}: " + _text(self.rng, self.turn_words)}
        )
        response = send([{"role": "system", "content": system}, *self.history], self.tools)
        reply = response["choices"][0]["message"].get("content") or "(no text)"
        self.history.append({"role": "assistant", "content": reply})
        usage: dict[str, Any] = response["usage"]
        return usage


def cached(usage: dict[str, Any]) -> int:
    """`prompt_tokens_details.cached_tokens` of a usage (0 when the server sent none)."""
    details = usage.get("prompt_tokens_details") or {}
    return int(details.get("cached_tokens") or 0)
