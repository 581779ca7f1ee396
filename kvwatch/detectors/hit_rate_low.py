"""`prefix_hit_rate_low` (vLLM, off by default): the prefix hit rate stays under a threshold with traffic.

vLLM's V1 rate slides over the last 1000 requests, so a window of lines all under the threshold means a
lasting problem, not a burst of new conversations.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.detectors.stable import NEVER
from kvwatch.model import Finding
from kvwatch.windows.window import Windows


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
            cutoff = now - cfg.window
            points = [p for p in eng.stats if p.time >= cutoff and p.rate_lines]
            lines = sum(p.rate_lines for p in points)
            if lines < cfg.min_intervals or max(p.rate_max for p in points) >= cfg.threshold:
                continue
            low, last = max(p.rate_max for p in points), points[-1].rate_last
            findings.append(
                Finding(
                    alert="prefix_hit_rate_low",
                    labels=(("source", source), ("engine", engine)),
                    severity="warning",
                    summary=f"prefix cache hit rate stayed under {cfg.threshold:.0%} (last {last:.1%})",
                    cause="Prompts rarely share a prefix with what the cache holds: a changing prompt head, "
                    "eviction under memory pressure, or traffic that does not repeat.",
                    fix="Look at pinned_cache_length and the gateway's per-entry hit rates; check GPU KV "
                    "usage for eviction pressure.",
                    evidence={"lines": lines, "max": low, "last": last},
                )
            )
    return findings


def until(windows: Windows, now: float, cfg: Settings) -> float:
    """Its window slides with `now`: judged again at every tick, when enabled."""
    return now if cfg.enabled else NEVER
