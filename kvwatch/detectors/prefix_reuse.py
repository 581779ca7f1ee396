"""`prefix_reuse_broken` (llama.cpp): consecutive sizeable prompts reuse almost nothing (incident 4).

It judges effective reuse (n_past, the tokens actually kept), never a low or missing sim_best: the host
prompt cache can rescue a low-similarity pick, and a broken prefix usually shows as an LRU pick with no
similarity line at all. `cache reuse is not supported - ignoring n_cache_reuse` is the unrelated
chunk-shifting feature and plays no part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvwatch.model import Finding
from kvwatch.window import RequestPoint, Windows

CAUSE_REPROCESS = (
    "llama.cpp forces full prompt re-processing: on SWA / hybrid / recurrent models the cache can only "
    "be restored from context checkpoints, and the reusable prefix ends before every checkpoint because "
    "the prompt changes near its start on every request (typically a per-request header such as Claude "
    "Code's `x-anthropic-billing-header ... cch=`)."
)
CAUSE_PREFIX = (
    "The prompt changes near its start on every request, so only the tokens before the change can be "
    "reused (typically a per-request header such as Claude Code's `x-anthropic-billing-header ... cch=` "
    "in the first system message); slots are then picked by LRU because no slot is similar enough."
)
FIX = (
    "Remove the per-request header: CLAUDE_CODE_ATTRIBUTION_HEADER=0 on the client, or strip it in the "
    "proxy. On llama.cpp >= b9093, point Claude Code at `/v1/messages`, which normalises it (an "
    "OpenAI-compatible proxy in between does not). Not the cause: `cache reuse is not supported - "
    "ignoring n_cache_reuse` (that is --cache-reuse chunk shifting), --parallel, --swa-full."
)


@dataclass(frozen=True)
class Settings:
    """Thresholds: the last `requests` requests of at least `min_prompt` tokens."""

    enabled: bool = True
    requests: int = 6
    min_prompt: int = 256
    max_reuse: float = 0.1
    min_share: float = 0.8


def _last_sizeable(points: Sequence[RequestPoint], cfg: Settings) -> list[RequestPoint]:
    """The last `requests` points of at least `min_prompt` tokens, oldest first."""
    if cfg.requests < 1:
        return [p for p in points if p.prompt >= cfg.min_prompt][-cfg.requests :]
    # Walk back from the newest: a tick costs O(requests), not O(window) (it runs every 10 s).
    found: list[RequestPoint] = []
    for point in reversed(points):
        if point.prompt >= cfg.min_prompt:
            found.append(point)
            if len(found) == cfg.requests:
                break
    return found[::-1]


def _judge(source: str, points: Sequence[RequestPoint], cfg: Settings) -> Finding | None:
    sizeable = _last_sizeable(points, cfg)
    if len(sizeable) < cfg.requests:
        return None
    poor = [p for p in sizeable if p.full_reprocess or p.cached <= cfg.max_reuse * p.prompt]
    if len(poor) < cfg.min_share * len(sizeable):
        return None
    reprocessed = sum(p.full_reprocess for p in sizeable)
    prompt = sum(p.prompt for p in sizeable)
    reused = sum(p.cached for p in sizeable)
    evidence = {
        "requests": len(sizeable),
        "poor_reuse_requests": len(poor),
        "reused_tokens": [p.cached for p in sizeable],
        "prompt_tokens": [p.prompt for p in sizeable],
        "reuse_ratio": round(reused / prompt, 4) if prompt else 0.0,
        "full_reprocess": reprocessed,
        "lru_selections": sum(p.selection == "lru" for p in sizeable),
        "derived_from_timings": any(p.derived for p in sizeable),
    }
    return Finding(
        alert="prefix_reuse_broken",
        labels=(("source", source),),
        severity="warning",
        summary=(
            f"{len(poor)} of the last {len(sizeable)} prompts reused almost nothing "
            f"({reused} of {prompt} tokens, {reprocessed} fully re-processed)"
        ),
        cause=CAUSE_REPROCESS if reprocessed * 2 >= len(sizeable) else CAUSE_PREFIX,
        fix=FIX,
        evidence=evidence,
    )


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """A finding for every llama.cpp source whose prefix reuse is broken right now."""
    if not cfg.enabled:
        return []
    findings = []
    for labels, points in sorted(windows.requests.items()):
        source = dict(labels)["source"]
        if len(labels) != 1 or windows.source(source).kind != "llamacpp":
            continue
        finding = _judge(source, points, cfg)
        if finding is not None:
            findings.append(finding)
    return findings
