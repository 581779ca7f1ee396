"""`prefix_hit_rate_low` (vLLM, off by default): the prefix hit rate stays under a threshold with traffic.

vLLM's V1 rate slides over the last 1000 requests, so a window of lines all under the threshold means a
lasting problem, not a burst of new conversations.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.model import Finding
from kvwatch.window import Windows


@dataclass(frozen=True)
class Settings:
    """Off unless enabled; every line with traffic in the window must be under `threshold`."""

    enabled: bool = False
    threshold: float = 0.3
    window: float = 600.0
    min_intervals: int = 6


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """A finding per engine whose prefix hit rate stayed low over the window."""
    if not cfg.enabled:
        return []
    findings = []
    for source, win in sorted(windows.sources.items()):
        for engine, eng in sorted(win.engines.items()):
            rates = [
                s.prefix_hit
                for s in eng.stats
                if s.time >= now - cfg.window and s.prefix_hit is not None and s.prompt_throughput > 0
            ]
            if len(rates) < cfg.min_intervals or max(rates) >= cfg.threshold:
                continue
            findings.append(
                Finding(
                    alert="prefix_hit_rate_low",
                    labels=(("source", source), ("engine", engine)),
                    severity="warning",
                    summary=f"prefix cache hit rate stayed under {cfg.threshold:.0%} (last {rates[-1]:.1%})",
                    cause="Prompts rarely share a prefix with what the cache holds: a changing prompt head, "
                    "eviction under memory pressure, or traffic that does not repeat.",
                    fix="Look at pinned_cache_length and the gateway's per-entry hit rates; check GPU KV "
                    "usage for eviction pressure.",
                    evidence={"lines": len(rates), "max": max(rates), "last": rates[-1]},
                )
            )
    return findings
