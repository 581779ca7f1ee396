"""`prefix_cache_disabled`: the server runs without a prefix cache, or its prefix cache never hits.

Two rules, evidence `rule`: "setting" while the startup facts say the prefix cache is switched off
(SGLang `--disable-radix-cache`); "never_hits" when the facts say it is on and none of at least
`min_requests` recent requests of `min_prompt` tokens or more reused a single token (no prompt shares a
prefix with another: no system prompt, no multi-turn session hits either). Healthy traffic hits: a
session reusing its previous turn, or users sharing a system prompt, resolve it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.model import Finding
from kvwatch.windows.window import Windows, newest, ordered

FIX_SETTING = (
    "Remove {setting} from the server's command line: every prompt is computed in full, shared system "
    "prompts and earlier turns of a conversation included. Success: `#cached-token` above 0 on repeated "
    "prompts (kvwatch_sglang_prefill_cached_tokens_total rising)."
)
FIX_NEVER = (
    "Check that requests share a prefix byte for byte (a timestamp or id at the top of the system "
    "prompt defeats any prefix cache), that the cache is not flushed (`/flush_cache`) or evicted under "
    "memory pressure (token usage near 1.00), and with a page size above 1 that prompts share whole pages."
)


@dataclass(frozen=True)
class Settings:
    """How many long requests without a single cached token make a cache that never hits."""

    enabled: bool = True
    min_requests: int = 20
    min_prompt: int = 1024


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """At most one finding per source: the setting first, then a cache that never hits."""
    if not cfg.enabled:
        return []
    findings = []
    for source, win in ordered(windows.sources):
        state = win.facts.get("prefix_cache")
        if state is None:  # (the facts say nothing either way: most sources)
            continue
        labels = (("source", source),)
        if state == "disabled":
            setting = win.facts.get("prefix_cache_setting", "the prefix-cache switch")
            findings.append(
                Finding(
                    alert="prefix_cache_disabled",
                    labels=labels,
                    severity="warning",
                    summary=f"the prefix cache is switched off ({setting}): every prompt is computed in full",
                    cause=f"The server started with {setting}.",
                    fix=FIX_SETTING.format(setting=setting),
                    evidence={"rule": "setting", "setting": setting},
                )
            )
            continue
        if state != "enabled":
            continue
        points = windows.requests.get(labels)
        if not points or len(points) < cfg.min_requests:
            continue
        if points[-1].cached or points[-1].prompt < cfg.min_prompt:  # (the newest is one of the recent)
            continue
        recent = newest(points, cfg.min_requests)
        if any(p.cached for p in recent) or any(p.prompt < cfg.min_prompt for p in recent):
            continue
        prompt = sum(p.prompt for p in recent)
        findings.append(
            Finding(
                alert="prefix_cache_disabled",
                labels=labels,
                severity="warning",
                summary=f"the prefix cache never hit: {len(recent)} long prompts ({prompt} tokens), 0 reused",
                cause="The prefix cache is on, yet no recent request found any of its prefix cached.",
                fix=FIX_NEVER,
                evidence={"rule": "never_hits", "requests": len(recent), "prompt_tokens": prompt},
            )
        )
    return findings
