"""The daemon's `[[probe]]`s: run on the scheduler's clock, their numbers as metrics, verdicts as alerts.

A run happens on an apscheduler worker thread (HTTP only, no lock held); its numbers are kept here under a
lock for the scrape, and the `probe_prefix_miss` decision (kvwatch.detectors.probe_prefix_miss.detect) is
handed to the pipeline thread, which holds it in the alert book's ticks until the next run replaces it.
A failed run is counted by its outcome and changes no alert. One job per probe, never two at once.
"""

from __future__ import annotations

import collections
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import requests
from apscheduler.schedulers.background import BackgroundScheduler
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kvwatch.config.types import ProbeConfig
from kvwatch.detectors import probe_prefix_miss
from kvwatch.model import Finding
from kvwatch.probe.client import FAILURES
from kvwatch.probe.run import ProbeSpec, Report, run_probe

log = logging.getLogger("kvwatch.probe")
OUTCOMES = ("ok", *FAILURES)
#: Runs kept per probe for the alert decision (more than any `runs` setting allows).
HISTORY = 10


@dataclass
class ProbeState:
    """One probe's counters and last numbers (read by the scrape, written after each run)."""

    runs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    history: collections.deque[probe_prefix_miss.ProbeRun] = field(
        default_factory=lambda: collections.deque(maxlen=HISTORY)
    )
    cached: int | None = None
    prompt: int | None = None
    share: float | None = None
    ttfb: float | None = None
    success: float | None = None
    last_at: float | None = None  # when the last run ended (wall clock)
    last_outcome: str = ""  # its outcome (`ok` or why it failed)
    last_verdict: str = ""  # its verdict's summary, or its error


def summary(report: Report, at: float) -> probe_prefix_miss.ProbeRun | None:
    """The run as the alert reads it: its deciding conversation's share and both requests' numbers."""
    conv = report.deciding()
    if conv is None or conv.verdict.share is None:
        return None
    numbers: dict[str, Any] = {
        "conversation": conv.name,
        "requests": [
            {
                "prompt_tokens": s.usage.prompt,
                "cached_tokens": s.usage.cached,
                "ttfb_seconds": round(s.ttfb, 3),
            }
            for s in conv.requests
        ],
        "prefix_tokens": conv.verdict.prefix,
    }
    v = conv.verdict
    return probe_prefix_miss.ProbeRun(at, v.share or 0.0, v.summary, v.cause, v.fix, numbers)


class Probes:
    """Every configured probe: its job, its state, its metrics."""

    def __init__(
        self,
        probes: Sequence[tuple[ProbeConfig, ProbeSpec]],
        settings: Callable[[], probe_prefix_miss.Settings],
        hold: Callable[[str, list[Finding]], None],
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """`hold(name, findings)` hands a run's alert decision to the pipeline thread."""
        self.settings, self.hold, self.clock, self.wall = settings, hold, clock, wall
        self.lock = threading.Lock()
        self.probes = list(probes)
        self.states: dict[str, ProbeState] = {p.name: ProbeState() for p, _ in self.probes}
        self.scheduler: BackgroundScheduler | None = None

    def schedule(self, scheduler: BackgroundScheduler) -> None:
        """Add a job per probe: the first run soon after start (within its jitter), then every interval."""
        self.scheduler = scheduler
        for probe, spec in self.probes:
            first = datetime.now(timezone.utc) + timedelta(seconds=random.uniform(0, min(probe.jitter, 30)))
            scheduler.add_job(
                self.run, "interval", args=(probe.name, spec), seconds=probe.interval,
                jitter=probe.jitter or None, id=f"probe:{probe.name}", next_run_time=first,
                max_instances=1, coalesce=True,
            )  # fmt: skip

    def replace(self, probes: Sequence[tuple[ProbeConfig, ProbeSpec]]) -> None:
        """(Reload) Run the new probes instead; a kept probe keeps its counters."""
        if self.scheduler is not None:
            for probe, _ in self.probes:
                self.scheduler.remove_job(f"probe:{probe.name}")
        with self.lock:
            removed = [p.name for p, _ in self.probes if p.name not in {q.name for q, _ in probes}]
            self.probes = list(probes)
            self.states = {p.name: self.states.get(p.name, ProbeState()) for p, _ in self.probes}
        for name in [*(probe.name for probe, _ in self.probes), *removed]:
            self.hold(name, [])  # (a removed probe's firing alert resolves: nothing probes there any more)
        if self.scheduler is not None:
            self.schedule(self.scheduler)

    def run(self, name: str, spec: ProbeSpec) -> Report | None:
        """One run of a probe (a scheduler job): count it, keep its numbers, hand over its alert decision."""
        try:
            with requests.Session() as session:
                report = run_probe(spec, session, self.clock)
        except Exception:  # a job must never end the scheduler's thread
            log.exception("probe %s failed", name)
            return None
        now = self.wall()
        run = summary(report, now)
        with self.lock:
            state = self.states.get(name)
            if state is None:  # (removed by a reload meanwhile)
                return report
            state.runs[report.outcome] = state.runs.get(report.outcome, 0) + 1
            state.last_at, state.last_outcome = now, report.outcome
            state.last_verdict = run.verdict if run is not None else report.error or report.verdict()
            if report.outcome == "ok":
                state.success = now
            conv = report.deciding()
            if conv is not None:
                follow = conv.requests[-1]
                state.cached, state.prompt = follow.usage.cached, follow.usage.prompt
                state.share, state.ttfb = conv.verdict.share, follow.ttfb
            if run is not None:
                state.history.append(run)
            history = list(state.history)
        if report.error:
            log.warning("probe %s: %s: %s", name, report.outcome, report.error)
        else:
            log.info("probe %s: %s", name, report.verdict())
        if run is not None:
            self.hold(name, probe_prefix_miss.detect(name, history, self.settings()))
        return report


class ProbeCollector(Collector):
    """`kvwatch_probe_*` per probe, read at scrape time."""

    def __init__(self, probes: Probes) -> None:
        """Read `probes`' states under its lock."""
        self.probes = probes

    def collect(self) -> Iterator[Metric]:
        """Yield every family (with no samples when no probe is configured)."""
        runs = CounterMetricFamily(
            "kvwatch_probe_runs",
            "Probe runs by outcome (ok, or why the run failed).",
            labels=["probe", "outcome"],
        )
        gauges = {
            "cached": (
                "kvwatch_probe_last_cached_tokens",
                "Cached tokens of the last run's deciding follow-up.",
            ),
            "prompt": (
                "kvwatch_probe_last_prompt_tokens",
                "Prompt tokens of the last run's deciding follow-up.",
            ),
            "share": (
                "kvwatch_probe_last_cached_share_ratio",
                "Share of the repeated prefix the last run's deciding follow-up had cached, 0-1.",
            ),
            "ttfb": (
                "kvwatch_probe_last_ttfb_seconds",
                "Time to first byte of the last run's deciding follow-up.",
            ),
            "success": (
                "kvwatch_probe_last_success_timestamp_seconds",
                "Wall-clock time of the last run that got cached counts back.",
            ),
        }
        families = {k: GaugeMetricFamily(n, h, labels=["probe"]) for k, (n, h) in gauges.items()}
        with self.probes.lock:
            for name, state in sorted(self.probes.states.items()):
                for outcome, count in state.runs.items():
                    runs.add_metric([name, outcome], count)
                for key, family in families.items():
                    value = getattr(state, key)
                    if value is not None:
                        family.add_metric([name], float(value))
        yield runs
        yield from families.values()
