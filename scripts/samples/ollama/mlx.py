"""Makes samples/ollama-mlx-stuck.log (+ .golden): the MLX runner's cached prefix stuck at 24k, then a failed restore."""

# Log lines are built whole from their format strings, however long.
# ruff: noqa: E501

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from scripts.samples.made import Made
from scripts.samples.ollama.lines import conversation, gin, slog

# x/mlxrunner/prefix_cache.go:125 `cache hit`/`cache miss` (total, matched, cached, left), :252 WARN
# `failed to restore cache, freeing all caches` (offset); x/mlxrunner/client.go `starting mlx runner
# subprocess` (model, port); x/mlxrunner/pipeline.go `Prompt processing progress`. macOS: plain
# ~/.ollama/logs/server.log, local time. The case: ollama#17829 ("cached portion stays stuck at 24k").
STUCK = 24575
ZONE = timezone(timedelta(hours=2))


def make_log() -> str:
    """Twelve agent turns: the trie matches the whole previous turn, but only 24575 tokens restore."""
    t = datetime(2026, 7, 14, 9, 30, 0, 250000, tzinfo=ZONE)
    out = [slog(t, "INFO", "routes.go:1650", "Listening on 127.0.0.1:11434 (version 0.31.2)")]
    t += timedelta(seconds=4)
    pairs = (("model", "qwen3-coder-next:mlx"), ("port", 50211))
    out.append(slog(t, "INFO", "client.go:391", "starting mlx runner subprocess", *pairs))
    turns = conversation(41000, 12, seed=17829, stuck=STUCK, grow=(1500, 4000))  # an agent: tool output
    for i, (prompt, reused, generated) in enumerate(turns):
        cached = reused
        t += timedelta(seconds=30)
        start = t
        matched = cached if i == 0 else turns[i - 1][0] + turns[i - 1][2]
        if i == 8:
            out.append(
                slog(
                    t,
                    "WARN",
                    "prefix_cache.go:252",
                    "failed to restore cache, freeing all caches",
                    ("offset", STUCK),
                )
            )
            cached = 0
        msg = "cache hit" if cached else "cache miss"
        pairs = (("total", prompt), ("matched", matched), ("cached", cached), ("left", prompt - cached))
        out.append(slog(t, "INFO", "prefix_cache.go:125", msg, *pairs))
        left = prompt - cached
        for done in range(2048, left, 2048 * 4):
            t += timedelta(seconds=2)
            out.append(
                slog(
                    t,
                    "INFO",
                    "pipeline.go:204",
                    "Prompt processing progress",
                    ("processed", done),
                    ("total", left),
                )
            )
        t += timedelta(seconds=left / 700 + generated / 30)
        out.append(gin(t, 200, (t - start).total_seconds() + 0.004, "POST", "/v1/chat/completions"))
    return "\n".join(out) + "\n"


def make() -> list[Made]:
    """The sample."""
    return [Made("ollama-mlx-stuck.log", make_log().encode())]
