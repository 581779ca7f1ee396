"""Makes samples/lmstudio-v0-4-mlx-vision.log (+ .golden): the batched vision path's `Prompt cache restore` and disk usage."""

# Log lines are built whole from their format strings, however long.
# ruff: noqa: E501

from __future__ import annotations

from datetime import datetime, timedelta

from scripts.samples.lmstudio.lines import mlx, turns, two_line
from scripts.samples.made import Made

# mlx_engine/model_kit/batched_vision/prompt_cache/coordinator.py:104 (e2f0e89, 2026-05-28): INFO `Prompt
# cache restore: cached_tokens=%s uncached_tokens=%s lifetime_efficiency=%.2f%%` (uncached = prompt - 1 -
# cached; efficiency = restored / prefilled tokens since the model loaded); cache_store.py:529 `VLM prompt
# cache disk usage: used_mib=%.1f cap_mib=%.1f lifetime_evicted_mib=%.1f records=%s lifetime=model_load`.
# `%(module)s` names the modules. LM Studio 0.4.5 + mlx-engine 1.11.0 (lmstudio-bug-tracker#2419).
MODEL = "qwen/qwen3.8-27b"


def make_log() -> str:
    """Six turns with an image in the first: each later turn restores the previous one from the cache."""
    t = datetime(2026, 9, 19, 10, 4, 0)
    out = []
    previous, hit, miss, used = 0, 0, 0, 0.0
    for i, (prompt, generated) in enumerate(turns(17433, 6, seed=2419)):
        cached = previous
        uncached = prompt - 1 - cached
        hit, miss = hit + cached, miss + uncached
        out.append(
            two_line(
                t, "INFO", f"[{MODEL}] Running chat completion on conversation with {2 + 2 * i} messages."
            )
        )
        restore = f"Prompt cache restore: cached_tokens={cached} uncached_tokens={uncached} lifetime_efficiency={100 * hit / (hit + miss):.2f}%"
        out.append(two_line(t, "DEBUG", mlx("coordinator", "INFO", restore)))
        t += timedelta(seconds=1 + uncached / 300)
        used += uncached * 0.4
        disk = f"VLM prompt cache disk usage: used_mib={used:.1f} cap_mib=166720.0 lifetime_evicted_mib=0.0 records={i + 1} lifetime=model_load"
        out.append(two_line(t, "DEBUG", mlx("cache_store", "INFO", disk)))
        t += timedelta(seconds=generated / 30 + 15)
        previous = prompt + generated - 1
    return "\n".join(out) + "\n"


def make() -> list[Made]:
    """The sample."""
    return [Made("lmstudio-v0-4-mlx-vision.log", make_log().encode())]
