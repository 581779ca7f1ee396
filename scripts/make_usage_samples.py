"""Write the deterministic synthetic usage-log samples (#6) into samples/ and print their key numbers.

Stdlib only, a seeded RNG per sample and fixed start times: two runs give byte-identical files. The row
shapes follow the gateways' own code: new-api `model/log.go` (`Log`, its JSON names, `LogTypeConsume`
= 2, `LogTypeError` = 5) and `service/log_info_generate.go` (`other`: `cache_tokens`, `request_path`,
`request_conversion`, `admin_info`), vLLM's OpenAI response bodies (`usage.prompt_tokens_details.
cached_tokens` with `--enable-prompt-tokens-details`), Anthropic Messages responses (`usage.input_tokens`,
`cache_read_input_tokens`, `cache_creation_input_tokens`). See samples/README.usage.md.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
UTC = timezone.utc
FLASH = "DeepSeek-V4-Flash"


def dumps(obj: Any) -> str:
    """Compact JSON, keys in the order given."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def go_json(obj: dict[str, Any]) -> str:
    """What Go's encoding/json makes of a map: keys sorted, compact (new-api's `other`)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def epoch(text: str) -> int:
    """Epoch seconds of a UTC `YYYY-MM-DDTHH:MM:SS`."""
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def rfc3339(ts: float, offset_hours: int = 0) -> str:
    """`2026-08-18T09:00:00.123Z`, or with an offset."""
    tz = timezone(timedelta(hours=offset_hours))
    moment = datetime.fromtimestamp(ts, tz)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
    return text + ("Z" if offset_hours == 0 else moment.strftime("%z")[:3] + ":" + moment.strftime("%z")[3:])


def block(tokens: int, size: int = 64) -> int:
    """Round down to whole KV blocks, as vLLM reports cached tokens."""
    return tokens // size * size


# ---------------------------------------------------------------------------------------------
# new-api
# ---------------------------------------------------------------------------------------------


@dataclass
class Req:
    """One request of a synthetic day."""

    t: int
    path: str
    prompt: int
    cached: int
    completion: int
    client: str = ""


class NewApi:
    """Builds new-api `logs` rows as `GET /api/log/` returns them (JSON names of model.Log)."""

    def __init__(self, rng: random.Random, first_id: int) -> None:
        self.rng = rng
        self.next_id = first_id

    def _base(self, t: int, kind: int, content: str) -> dict[str, Any]:
        self.next_id += self.rng.randint(1, 4)  # other users' rows in between
        return {
            "id": self.next_id,
            "user_id": 7,
            "created_at": t,
            "type": kind,
            "content": content,
            "username": "ops-lab",
            "token_name": "team-a",
        }

    def consume(self, r: Req) -> str:
        """A consume row (type 2) for a request relayed to channel 3 (vLLM, OpenAI-compatible)."""
        row = self._base(r.t, 2, "模型倍率 0.50\uff0c补全倍率 2.00\uff0c缓存倍率 0.10\uff0c分组倍率 1.00")
        other: dict[str, Any] = {
            "admin_info": {"use_channel": ["3"]},
            "cache_ratio": 0.1,
            "cache_tokens": r.cached,
            "completion_ratio": 2,
            "frt": float(self.rng.randint(380, 2900)),
            "group_ratio": 1,
            "model_price": -1,
            "model_ratio": 0.5,
            "request_path": r.path,
            "user_group_ratio": -1,
        }
        if r.path == "/v1/messages":
            other["request_conversion"] = ["Claude Messages", "OpenAI Compatible"]
        quota = int((r.prompt - r.cached + r.cached * 0.1 + r.completion * 2) * 0.5)
        row.update(
            model_name=FLASH,
            quota=quota,
            prompt_tokens=r.prompt,
            completion_tokens=r.completion,
            use_time=self.rng.randint(3, 41),
            is_stream=True,
            channel=3,
            channel_name="h200-vllm",
            token_id=12,
            group="default",
            ip="",
            other=go_json(other),
        )
        return dumps(row)

    def error(self, t: int, path: str) -> str:
        """An error row (type 5): no tokens, the upstream status in content and other."""
        row = self._base(t, 5, "status_code=502, upstream error: bad gateway")
        other = {
            "admin_info": {"use_channel": ["3"]},
            "error_code": "bad_response_status_code",
            "request_path": path,
        }
        row.update(
            model_name=FLASH,
            quota=0,
            prompt_tokens=0,
            completion_tokens=0,
            use_time=30,
            is_stream=True,
            channel=3,
            channel_name="h200-vllm",
            token_id=12,
            group="default",
            ip="",
            other=go_json(other),
        )
        return dumps(row)

    def topup(self, t: int) -> str:
        """A top-up row (type 1): an admin's export of all log types has them too."""
        row = self._base(t, 1, "通过兑换码充值 $50.000000 额度")
        row.update(
            model_name="",
            quota=0,
            prompt_tokens=0,
            completion_tokens=0,
            use_time=0,
            is_stream=False,
            channel=0,
            channel_name="",
            token_id=0,
            group="",
            ip="",
            other="",
        )
        return dumps(row)


def chat_traffic(rng: random.Random, start: int, end: int, every: float) -> list[Req]:
    """Reasonix / opencode on /v1/chat/completions: three conversations interleaved, prefix cache healthy."""
    reqs: list[Req] = []
    sizes = [0, 0, 0]
    t = float(start)
    while t < end:
        conv = rng.randrange(3)
        previous = sizes[conv]
        if previous == 0 or previous > 90000:  # a new conversation: only the shared system prompt is warm
            prompt = rng.randint(11000, 14000)
            cached = block(rng.randint(5200, 6400))
        else:
            prompt = previous + rng.randint(400, 2600)
            cached = block(previous) if rng.random() > 0.03 else block(previous // 3)
        sizes[conv] = prompt
        reqs.append(Req(int(t), "/v1/chat/completions", prompt, cached, rng.randint(60, 1400)))
        t += rng.expovariate(1 / every)
    return reqs


def incident_day() -> tuple[str, dict[str, Any]]:
    """2026-08-18: the cached length on /v1/messages pinned at 17920 while sessions grow 40k -> 180k."""
    rng = random.Random(618)
    start, end = epoch("2026-08-18T09:00:00"), epoch("2026-08-18T15:00:00")
    messages: list[Req] = []
    n = 300
    # Four Claude Code sessions at staggered stages: each grows turn by turn from ~40k tokens and is
    # compacted back to ~40k once past 180k, so any stretch of the day mixes 40k..180k prompts.
    sessions = [40000.0 + 35000.0 * k for k in range(4)]
    t = float(start)
    lunch, back, lunched = epoch("2026-08-18T12:05:00"), epoch("2026-08-18T12:41:13"), False
    for i in range(n):
        k = rng.randrange(len(sessions))
        sessions[k] += rng.uniform(800, 6000)
        if sessions[k] > 180000:
            sessions[k] = 40000.0 + rng.uniform(0, 3000)
        size = int(sessions[k])
        gap = rng.expovariate(1 / ((end - start - (back - lunch)) / n))
        idle = not lunched and t >= lunch
        if idle:  # lunch: the KV cache was evicted meanwhile
            t, lunched = float(back), True
        cold = i == 0 or idle or rng.random() < 0.025
        messages.append(Req(int(t), "/v1/messages", size, 0 if cold else 17920, rng.randint(90, 2400)))
        t += gap
    chats = chat_traffic(rng, start + 47, end, 90.0)
    api = NewApi(rng, 881_204)
    rows: list[tuple[int, str]] = [(r.t, api.consume(r)) for r in sorted(messages + chats, key=lambda r: r.t)]
    for when, path in (
        ("10:14:09", "/v1/messages"),
        ("11:02:51", "/v1/chat/completions"),
        ("11:02:58", "/v1/messages"),
        ("13:37:20", "/v1/messages"),
        ("14:20:05", "/v1/chat/completions"),
    ):
        rows.append((epoch(f"2026-08-18T{when}"), api.error(epoch(f"2026-08-18T{when}"), path)))
    rows.append((epoch("2026-08-18T10:30:00"), api.topup(epoch("2026-08-18T10:30:00"))))
    rows.sort(key=lambda item: item[0])
    stats = {"messages": _stats(messages), "chat": _stats(chats), "errors": 5, "topups": 1}
    return "\n".join(text for _, text in rows) + "\n", stats


def fixed_messages(rng: random.Random) -> list[Req]:
    """2026-08-19 /v1/messages after the gateway strips the billing header: 54 requests, 3 sessions."""
    t = epoch("2026-08-19T09:00:00")
    reqs: list[Req] = []

    def turn(prompt: int, cached: int, gap: int = 0) -> int:
        nonlocal t
        reqs.append(Req(t, "/v1/messages", prompt, cached, rng.randint(90, 2400)))
        t += gap or rng.randint(25, 70)
        return prompt

    def turns(size: int, n: int) -> int:
        # A working cache: each turn reads the previous prompt and adds 0.3-1.2% new tokens.
        for _ in range(n):
            size = turn(int(size / rng.uniform(0.988, 0.997)), block(size))
        return size

    def side() -> None:  # a small side request (title, quota check): only the first blocks are shared
        turn(rng.randint(700, 1600), 256, 15)

    size = turn(135200, 0)  # session A, `claude --continue` in the morning: nothing cached yet
    size = turns(size, 10)
    t = epoch("2026-08-19T09:28:05")
    side()
    t = epoch("2026-08-19T09:36:41")  # 8 minutes idle: the KV cache was evicted
    size = turns(turn(int(size * 1.004), 0), 8)
    size = turns(turn(int(size * 1.006), 19200), 4)  # partly evicted by other clients' traffic
    side()
    size = turns(turn(70400, 0), 14)  # session B, resumed: its history is not in the cache
    turn(int(size * 1.01), 40960)
    side()
    size = turns(turn(175100, 0), 6)  # session C, resumed
    size = turn(int(size * 1.005), 61440)
    side()
    t += 420  # idle again
    turn(int(size * 1.004), 0)
    return reqs


def fixed_day() -> tuple[str, dict[str, Any]]:
    """2026-08-19: the day after the fix; cached lengths spread again."""
    rng = random.Random(619)
    messages = fixed_messages(rng)
    start = epoch("2026-08-19T09:00:00")
    chats = chat_traffic(rng, start + 12, messages[-1].t, 110.0)
    api = NewApi(rng, 902_771)
    rows = [(r.t, api.consume(r)) for r in sorted(messages + chats, key=lambda r: r.t)]
    rows.append((epoch("2026-08-19T10:03:44"), api.error(epoch("2026-08-19T10:03:44"), "/v1/messages")))
    rows.sort(key=lambda item: item[0])
    return "\n".join(text for _, text in rows) + "\n", {"messages": _stats(messages), "chat": _stats(chats)}


def _stats(reqs: list[Req]) -> dict[str, Any]:
    prompt = sum(r.prompt for r in reqs)
    cached = [r.cached for r in reqs]
    return {
        "requests": len(reqs),
        "hit_rate": round(sum(cached) / prompt, 4),
        "prompt_range": [min(r.prompt for r in reqs), max(r.prompt for r in reqs)],
        "mean_prompt": round(prompt / len(reqs)),
        "cached_0": sum(c == 0 for c in cached),
        "cached_256": sum(c == 256 for c in cached),
        "cached_17920": sum(c == 17920 for c in cached),
        "cached_lt_64k": sum(256 < c < 65536 for c in cached),
        "cached_64k_128k": sum(65536 <= c <= 131072 for c in cached),
        "cached_gt_128k": sum(c > 131072 for c in cached),
    }


# ---------------------------------------------------------------------------------------------
# OpenAI-shaped response bodies logged by a proxy in front of vLLM
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Anthropic-shaped usage from a gateway: correct, and double counted (incident 3)
# ---------------------------------------------------------------------------------------------


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


def main() -> None:
    """Write every usage sample and print the numbers the README quotes."""
    SAMPLES.mkdir(exist_ok=True)
    jobs: list[tuple[str, Callable[[], tuple[str, dict[str, Any]]]]] = [
        ("usage-openai.log", openai_sample),
        ("usage-anthropic-correct.log", anthropic_correct),
        ("usage-anthropic-double.log", anthropic_double),
        ("usage-newapi.log", incident_day),
        ("usage-newapi-fixed.log", fixed_day),
    ]
    for name, make in jobs:
        text, stats = make()
        (SAMPLES / name).write_text(text, encoding="utf-8")
        print(name, json.dumps(stats, ensure_ascii=False))


if __name__ == "__main__":
    main()
