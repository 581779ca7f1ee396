"""Makes samples/usage-newapi.log, samples/usage-newapi-fixed.log (+ .golden): new-api, incident and fix."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from scripts.samples.made import Made
from scripts.samples.usage.lines import FLASH, block, dumps, epoch, go_json

# The rows follow new-api's own code: `model/log.go` (`Log`, its JSON names, `LogTypeConsume` = 2,
# `LogTypeError` = 5) and `service/log_info_generate.go` (`other`: `cache_tokens`, `request_path`,
# `request_conversion`, `admin_info`).


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


def make() -> list[Made]:
    """The samples and the numbers samples/README.usage.md quotes."""
    made = []
    for name, sample in (("usage-newapi.log", incident_day), ("usage-newapi-fixed.log", fixed_day)):
        text, stats = sample()
        made.append(Made(name, text.encode("utf-8"), f"{name} {json.dumps(stats, ensure_ascii=False)}"))
    return made
