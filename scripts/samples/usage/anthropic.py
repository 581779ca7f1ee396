"""Makes samples/usage-anthropic-correct.log, samples/usage-anthropic-double.log (+ .golden): incident 3."""

from __future__ import annotations

import json
import random
from typing import Any

from scripts.samples.made import Made
from scripts.samples.usage.lines import FLASH, block, dumps, epoch, rfc3339

# Anthropic Messages responses: `usage.input_tokens`, `cache_read_input_tokens`,
# `cache_creation_input_tokens`; correct, and double counted by a gateway (incident 3).


def anthropic_correct() -> tuple[str, dict[str, Any]]:
    """Claude Code against the Anthropic API through a logging gateway: usage as Anthropic reports it."""
    rng = random.Random(2118)
    t = float(epoch("2026-08-20T06:00:00"))
    lines: list[str] = []
    context = 0  # tokens already in the cache (the previous turn's whole prompt)
    read_max, input_max = 0, 0
    for turn in range(72):
        t += rng.uniform(12, 70)
        if turn in {0, 47}:  # session start, and the turn after /compact: tools + system cached
            read, created, uncached = (0, 21650, 3) if turn == 0 else (21650, 9200, 3)
        else:
            read, created, uncached = context, rng.randint(300, 5200), rng.randint(1, 12)
        context = read + created + uncached
        read_max, input_max = max(read_max, read), max(input_max, uncached)
        usage = {
            "input_tokens": uncached,
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": read,
            "output_tokens": rng.randint(40, 1900),
            "service_tier": "standard",
        }
        body = {
            "id": f"msg_01{rng.getrandbits(80):020x}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": "[omitted]",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": usage,
        }
        lines.append(
            dumps(
                {
                    "time": rfc3339(t, 8),
                    "route": "/v1/messages",
                    "status": 200,
                    "latency_ms": rng.randint(900, 30000),
                    "response": body,
                }
            )
        )
        if turn % 11 == 5:  # Claude Code's small side requests go to the Haiku model, no cache_control
            t += rng.uniform(1, 3)
            side = {
                "input_tokens": rng.randint(300, 900),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": rng.randint(8, 40),
            }
            body = {
                "id": f"msg_01{rng.getrandbits(80):020x}",
                "type": "message",
                "role": "assistant",
                "model": "claude-haiku-4-5-20251001",
                "content": "[omitted]",
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": side,
            }
            lines.append(
                dumps(
                    {
                        "time": rfc3339(t, 8),
                        "route": "/v1/messages",
                        "status": 200,
                        "latency_ms": rng.randint(300, 900),
                        "response": body,
                    }
                )
            )
    return "\n".join(lines) + "\n", {"turns": 72, "max_cache_read": read_max, "max_input": input_max}


def anthropic_double() -> tuple[str, dict[str, Any]]:
    """Incident 3: a gateway in front of vLLM copies prompt_tokens (cached included) into input_tokens."""
    rng = random.Random(3003)
    t = float(epoch("2026-08-21T01:00:00"))
    lines: list[str] = []
    sessions = [0, 0]  # the real prompt of each Claude Code session's previous turn
    compactions = 0
    for _ in range(110):
        t += rng.uniform(6, 40)
        s = rng.randrange(2)
        previous = sessions[s]
        if previous == 0:
            prompt, cached = rng.randint(24000, 30000), 19200  # tools + system prompt warm
        else:
            prompt = previous + rng.randint(600, 4800)
            cached = block(previous)
        # What the client is told: input_tokens = prompt_tokens (wrong), cached reported again apart.
        usage = {
            "input_tokens": prompt,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cached,
            "output_tokens": rng.randint(40, 2000),
        }
        lines.append(
            dumps(
                {
                    "time": int(t * 1000),
                    "path": "/v1/messages",
                    "model": FLASH,
                    "status": 200,
                    "stream": True,
                    "usage": usage,
                }
            )
        )
        # Claude Code sums input + cache read + cache creation: at ~160k "used" it compacts, though the
        # real context is about half that.
        if prompt + cached >= 160000:
            sessions[s] = 0
            compactions += 1
        else:
            sessions[s] = prompt
    return "\n".join(lines) + "\n", {"requests": 110, "compactions": compactions}


def make() -> list[Made]:
    """The samples and the numbers samples/README.usage.md quotes."""
    made = []
    for name, sample in (
        ("usage-anthropic-correct.log", anthropic_correct),
        ("usage-anthropic-double.log", anthropic_double),
    ):
        text, stats = sample()
        made.append(Made(name, text.encode("utf-8"), f"{name} {json.dumps(stats, ensure_ascii=False)}"))
    return made
