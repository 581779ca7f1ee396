"""`offload_retrieve_failed`: an external KV tier's loads fall short or fail, again and again, on one worker.

Per source and worker, from the tier's shortfalls (kvwatch.windows.offloads: a load that got fewer
tokens than it required, or a failure line of a load): it fires at the `min_failures`-th shortfall
within `window` seconds of event time, and holds while they keep coming: its finding lasts until
`quiet` seconds pass without one (then the alert book resolves it). The requests named are those the
log printed.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.detectors.stable import NEVER
from kvwatch.model import Finding
from kvwatch.windows.offloads import Shortfall
from kvwatch.windows.window import Windows

#: Requests named in the evidence, newest first.
MAX_NAMED = 5

CAUSE = (
    "The tier said it held these prefixes (its lookup found them) but the load brought back fewer tokens "
    "than required, or failed: the requests recompute what was lost. Known causes: a storage backend that "
    "evicted or cannot read the chunks (a disk or remote store shared by TP workers: LMCache #1739, "
    "Mooncake #888), memory pressure on the tier, or a connector bug."
)
FIX = (
    "Check the tier's backend (free space, reachability, errors in its own log) and the failures by kind "
    "in kvwatch_lmcache_failures_total; until it is fixed, the loads cost more than they save."
)


@dataclass(frozen=True)
class Settings:
    """Thresholds: 3 shortfalls within 10 minutes fire; 30 minutes without one end the finding."""

    enabled: bool = True
    min_failures: int = 3
    window: float = 600.0
    quiet: float = 1800.0


def _episode(shortfalls: list[Shortfall], cfg: Settings) -> list[Shortfall]:
    """The newest run of shortfalls with no gap of `quiet` seconds, if `min_failures` of it fall within
    `window` seconds; else none."""
    start = len(shortfalls) - 1
    while start > 0 and shortfalls[start].time - shortfalls[start - 1].time < cfg.quiet:
        start -= 1
    run = shortfalls[start:]
    wanted = max(cfg.min_failures, 1)
    for first in range(len(run) - wanted + 1):
        if run[first + wanted - 1].time - run[first].time <= cfg.window:
            return run
    return []


def _finding(source: str, worker: str, run: list[Shortfall]) -> Finding:
    lost = [s.lost for s in run if s.lost is not None]
    named = list(dict.fromkeys(s.request for s in reversed(run) if s.request))[:MAX_NAMED]
    kinds: dict[str, int] = {}
    for shortfall in run:
        kinds[shortfall.kind] = kinds.get(shortfall.kind, 0) + 1
    tokens = f", {sum(lost)} tokens lost" if lost else ""
    evidence: dict[str, object] = {
        "shortfalls": len(run),
        "span_seconds": round(run[-1].time - run[0].time, 1),
        "tokens_lost": sum(lost) if lost else None,
        "kinds": ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items())),
        "requests": ", ".join(named) if named else None,
    }
    return Finding(
        alert="offload_retrieve_failed",
        labels=(("source", source), ("worker", worker)),
        severity="warning",
        summary=f"{len(run)} loads from the external KV cache fell short or failed on {worker}{tokens}",
        cause=CAUSE,
        fix=FIX,
        evidence={k: v for k, v in evidence.items() if v is not None},
    )


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """A finding per (source, worker) whose loads keep failing."""
    if not cfg.enabled:
        return []
    findings = []
    for source, win in sorted(windows.sources.items()):
        history = win.offload
        if history is None or not history.shortfalls:
            continue
        by_worker: dict[str, list[Shortfall]] = {}
        for shortfall in history.shortfalls:
            if now - shortfall.time < cfg.quiet + cfg.window:
                by_worker.setdefault(shortfall.worker, []).append(shortfall)
        for worker, shortfalls in sorted(by_worker.items()):
            run = _episode(shortfalls, cfg)
            if run and now - run[-1].time < cfg.quiet:
                findings.append(_finding(source, worker, run))
    return findings


def until(windows: Windows, now: float, cfg: Settings) -> float:
    """Its windows slide with `now`: judged again at every tick while a source has shortfalls."""
    if cfg.enabled:
        for win in windows.sources.values():
            if win.offload is not None and win.offload.shortfalls:
                return now
    return NEVER
