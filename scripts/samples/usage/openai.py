"""Makes samples/usage-openai.log (+ .golden): a JSON-logging proxy in front of vLLM 0.26."""

from __future__ import annotations

import json
import random
from typing import Any

from scripts.samples.made import Made
from scripts.samples.usage.lines import block, dumps, epoch, rfc3339

# vLLM's OpenAI response bodies: `usage.prompt_tokens_details.cached_tokens` with
# `--enable-prompt-tokens-details`.


def openai_sample() -> tuple[str, dict[str, Any]]:
    """A JSON-logging proxy in front of vLLM 0.26 (Qwen3-32B, --enable-prompt-tokens-details)."""
    rng = random.Random(1226)
    t = float(epoch("2026-08-20T08:00:00"))
    lines: list[str] = []
    sizes = [0, 0]
    totals = {"requests": 0, "prompt": 0, "cached": 0, "no_usage": 0, "error": 0}
    for i in range(90):
        t += rng.uniform(4, 30)
        rid = f"{rng.getrandbits(64):016x}"
        kind = "chat" if i % 9 not in (4, 7) else ("embed" if i % 9 == 4 else "completion")
        path = {"chat": "/v1/chat/completions", "embed": "/v1/embeddings", "completion": "/v1/completions"}[
            kind
        ]
        if i in (33, 71):
            path = "/api/v2/generate"  # an in-house route: folded into entry="other"
        lines.append(
            dumps(
                {
                    "ts": rfc3339(t),
                    "level": "info",
                    "msg": "request",
                    "method": "POST",
                    "path": path,
                    "request_id": rid,
                    "client_ip": "10.0.3.17",
                }
            )
        )
        t += rng.uniform(0.4, 9.0)
        if i == 58:
            lines.append(
                dumps(
                    {
                        "ts": rfc3339(t),
                        "level": "error",
                        "msg": "response",
                        "path": path,
                        "status": 503,
                        "request_id": rid,
                        "error": {"message": "upstream unavailable", "type": "ServiceUnavailable"},
                    }
                )
            )
            totals["error"] += 1
            continue
        body, prompt, cached = _openai_body(rng, kind, int(t), sizes)
        totals["requests"] += 1
        totals["prompt"] += prompt
        totals["cached"] += cached
        record: dict[str, Any] = {
            "ts": rfc3339(t),
            "level": "info",
            "msg": "response",
            "path": path,
            "status": 200,
            "duration_ms": rng.randint(300, 21000),
            "request_id": rid,
        }
        if i % 5 == 3:  # this proxy version logged the body as a string
            record["response_body"] = dumps(body)
        else:
            record["response"] = body
        lines.append(dumps(record))
    totals["no_usage"] = 90  # the `request` lines
    return "\n".join(lines) + "\n", totals


def _openai_body(
    rng: random.Random, kind: str, created: int, sizes: list[int]
) -> tuple[dict[str, Any], int, int]:
    rid = f"{rng.getrandbits(128):032x}"
    if kind == "embed":
        prompt = rng.randint(200, 2000)
        usage = {
            "prompt_tokens": prompt,
            "total_tokens": prompt,
            "completion_tokens": 0,
            "prompt_tokens_details": None,
        }
        return (
            {
                "id": f"embd-{rid}",
                "object": "list",
                "created": created,
                "model": "Qwen/Qwen3-Embedding-8B",
                "data": [{"index": 0, "object": "embedding", "embedding": "[omitted]"}],
                "usage": usage,
            },
            prompt,
            0,
        )
    conv = rng.randrange(2)
    previous = sizes[conv]
    if kind == "completion":
        prompt, cached = rng.randint(1500, 4000), block(rng.randint(0, 1400), 16)
    elif previous == 0 or previous > 60000:
        prompt, cached = rng.randint(6000, 9000), block(4100, 16)
        sizes[conv] = prompt
    else:
        prompt = previous + rng.randint(300, 3500)
        cached = block(previous, 16)
        sizes[conv] = prompt
    completion = rng.randint(20, 900)
    usage = {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "completion_tokens": completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    obj = "chat.completion" if kind == "chat" else "text_completion"
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "stop_reason": None, "logprobs": None}
    if kind == "chat":
        choice["message"] = {
            "role": "assistant",
            "content": "[redacted]",
            "reasoning_content": None,
            "tool_calls": [],
        }
    else:
        choice["text"] = "[redacted]"
    body = {
        "id": f"{'chatcmpl' if kind == 'chat' else 'cmpl'}-{rid}",
        "object": obj,
        "created": created,
        "model": "Qwen/Qwen3-32B",
        "choices": [choice],
        "usage": usage,
        "prompt_logprobs": None,
        "kv_transfer_params": None,
    }
    return body, prompt, cached


def make() -> list[Made]:
    """The sample and the numbers samples/README.usage.md quotes."""
    text, stats = openai_sample()
    return [Made("usage-openai.log", text.encode("utf-8"), f"usage-openai.log {json.dumps(stats)}")]
