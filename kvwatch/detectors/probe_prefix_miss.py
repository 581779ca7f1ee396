"""`probe_prefix_miss`: a configured probe's cached share stayed under a threshold for `runs` runs in a row.

Not one of detect_all's log detectors: the daemon calls `detect` after each probe run (kvwatch.daemon.probes)
with the probe's latest runs that carried a cached count, and hands the findings to the alert book.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kvwatch.model import Finding


@dataclass(frozen=True)
class Settings:
    """On by default; fires when the last `runs` runs' cached shares were all under `threshold`."""

    enabled: bool = True
    threshold: float = 0.8
    runs: int = 2

    def problems(self) -> list[str]:
        """Settings that cannot work together."""
        out = []
        if not 0.0 < self.threshold <= 1.0:
            out.append("threshold: must be more than 0 and at most 1")
        if not 1 <= self.runs <= 10:
            out.append("runs: must be 1 to 10")
        return out


@dataclass(frozen=True)
class ProbeRun:
    """One probe run with a cached count: when, its lowest cached share and verdict, its numbers."""

    at: float
    share: float
    verdict: str
    cause: str = ""
    fix: str = ""
    numbers: dict[str, Any] = field(default_factory=dict)


def detect(probe: str, runs: Sequence[ProbeRun], cfg: Settings) -> list[Finding]:
    """A finding when the probe's last `cfg.runs` runs all had a cached share under the threshold."""
    recent = list(runs)[-cfg.runs :]
    if not cfg.enabled or len(recent) < cfg.runs or any(r.share >= cfg.threshold for r in recent):
        return []
    last = recent[-1]
    cause = last.cause or "The probe's repeated prefix was not served from cache."
    fix = last.fix or "See docs/probe.md for each verdict."
    return [
        Finding(
            alert="probe_prefix_miss",
            labels=(("probe", probe),),
            severity="warning",
            summary=f"probe {probe}: cached share {last.share:.1%} under {cfg.threshold:.0%} for "
            f"{cfg.runs} runs in a row ({last.verdict})",
            cause=cause,
            fix=fix,
            evidence={"threshold": cfg.threshold, "runs": [_evidence(r) for r in recent]},
        )
    ]


def _evidence(run: ProbeRun) -> dict[str, Any]:
    """One run's numbers as the alert carries them."""
    return {"at": run.at, "cached_share": round(run.share, 4), "verdict": run.verdict, **run.numbers}
