"""`hicache_storage_unused`: a cache storage tier that is written but whose prefetches never succeed.

Judged only where the log shows prefetches (SGLang logs `HiCache prefetch success|dropped` at INFO from
0.5.22, 0.5.18 for hybrid models; `no_signal` says so for older builds). Over the last `window` seconds:
a storage backend configured, at least `min_prefetches` prefetches ended that were not benign, none of
them a success. Benign: `--hicache-storage-prefetch-policy best_effort` (prefetches are cut short by
design), revoked under the prefetch threshold, `declined reason=unservable_prefix`. A success resolves it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.detectors.stable import NEVER
from kvwatch.model import Finding
from kvwatch.windows.window import Windows

FIX = (
    "Check the storage backend's read path ({backend}): that the pages it stores can be looked up "
    "again (same model, tp size, page size and key prefix on every node; sglang#12092, #26886), and "
    "that `--hicache-storage-prefetch-policy` gives prefetches time (wait_complete or timeout). Confirm "
    "with SGLang's own metrics (--enable-metrics) in Prometheus: sglang_storage_prefetch_hit_tokens_total "
    "stays 0 while sglang_backuped_tokens_total rises (SGLang's /metrics page spells them sglang:...). "
    "Success: `HiCache prefetch success` lines."
)


@dataclass(frozen=True)
class Settings:
    """How many unsuccessful prefetches, over how long, make a storage tier unused."""

    enabled: bool = True
    min_prefetches: int = 5
    window: float = 900.0


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """A finding per source whose storage tier's recent prefetches all failed."""
    if not cfg.enabled:
        return []
    findings = []
    for source, win in sorted(windows.sources.items()):
        backend = win.facts.get("cache_storage_backend")
        if backend is None or not win.prefetches or win.facts.get("cache_prefetch_policy") == "best_effort":
            continue
        recent = [p for p in win.prefetches if p.time >= now - cfg.window and not p.benign]
        if any(p.outcome == "success" for p in recent) or len(recent) < cfg.min_prefetches:
            continue
        outcomes: dict[str, int] = {}
        for p in recent:
            outcomes[p.outcome] = outcomes.get(p.outcome, 0) + 1
        findings.append(
            Finding(
                alert="hicache_storage_unused",
                labels=(("source", source),),
                severity="warning",
                summary=f"storage tier {backend}: {len(recent)} prefetches ended, none succeeded",
                cause=f"Pages are written to {backend}, but reading them back never completes: the cache "
                "tier costs bandwidth and storage and serves no prefix.",
                fix=FIX.format(backend=backend),
                evidence={
                    "backend": backend,
                    "outcomes": outcomes,
                    "written": win.facts.get("cache_storage_written", "unknown"),
                },
            )
        )
    return findings


def until(windows: Windows, now: float, cfg: Settings) -> float:
    """Its window slides with `now`: judged again at every tick while a source has prefetches to judge."""
    if cfg.enabled:
        for win in windows.sources.values():
            if win.prefetches:
                return now
    return NEVER
