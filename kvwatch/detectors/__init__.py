"""Detectors: pure functions of (windows, now, settings) -> findings, one module per signature."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from kvwatch.detectors import (
    double_counting,
    engine_start_failed,
    format_drift,
    hicache_storage_unused,
    hit_rate_gap,
    hit_rate_low,
    no_signal,
    offload_retrieve_failed,
    pinned_cache,
    prefix_cache_disabled,
    prefix_reuse,
    probe_prefix_miss,
    write_only_offload,
)
from kvwatch.detectors import hicache_storage_unused as hicache
from kvwatch.detectors import offload_retrieve_failed as retrieve_failed
from kvwatch.detectors.advice import advised
from kvwatch.detectors.stable import NEVER
from kvwatch.model import Finding
from kvwatch.windows.window import Windows

#: Short names the config may use for a DetectorSettings field.
ALIASES = {
    "pinned_cache": "pinned_cache_length",
    "prefix_reuse": "prefix_reuse_broken",
    "hit_rate_low": "prefix_hit_rate_low",
}


@dataclass(frozen=True)
class DetectorSettings:
    """Every detector's settings; the defaults are the documented ones."""

    write_only_offload: write_only_offload.Settings = field(default_factory=write_only_offload.Settings)
    pinned_cache_length: pinned_cache.Settings = field(default_factory=pinned_cache.Settings)
    prefix_reuse_broken: prefix_reuse.Settings = field(default_factory=prefix_reuse.Settings)
    no_signal: no_signal.Settings = field(default_factory=no_signal.Settings)
    prefix_hit_rate_low: hit_rate_low.Settings = field(default_factory=hit_rate_low.Settings)
    hit_rate_gap: hit_rate_gap.Settings = field(default_factory=hit_rate_gap.Settings)
    usage_double_counting: double_counting.Settings = field(default_factory=double_counting.Settings)
    prefix_cache_disabled: prefix_cache_disabled.Settings = field(
        default_factory=prefix_cache_disabled.Settings
    )
    hicache_storage_unused: hicache_storage_unused.Settings = field(
        default_factory=hicache_storage_unused.Settings
    )
    offload_retrieve_failed: offload_retrieve_failed.Settings = field(
        default_factory=offload_retrieve_failed.Settings
    )
    engine_start_failed: engine_start_failed.Settings = field(default_factory=engine_start_failed.Settings)
    format_drift: format_drift.Settings = field(default_factory=format_drift.Settings)
    # (decided after each probe run by the daemon, not by detect_all: see probe_prefix_miss)
    probe_prefix_miss: probe_prefix_miss.Settings = field(default_factory=probe_prefix_miss.Settings)


#: Every alert kvwatch raises, in the detectors' order: each detector's alert is named as its field above
#: (the one list the config's alert names are checked against).
ALERTS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(DetectorSettings))


@dataclass(frozen=True)
class Detector:
    """How detect_all runs one detector, and what its findings depend on besides the settings."""

    name: str  # its settings field
    detect: Callable[[Windows, float, Any], list[Finding]]
    #: A Windows attribute that holds its subjects or names them (empty: it finds nothing and its
    #: findings hold forever, so it is not asked).
    reads: str
    #: Whether it reads request groups (its findings then follow Windows.version; else Windows.shape
    #: and `follows`).
    requests: bool
    #: `until(windows, now, cfg)`: the event time before which, the windows unchanged, its findings stay
    #: those at `now` (kvwatch.detectors.stable); None for a detector that never reads `now`.
    until: Callable[[Windows, float, Any], float] | None = None
    #: The Windows counter that moves whenever what it reads changes, besides the shape: `changes`
    #: covers everything; a narrower one must move only with `changes` (detect_all reads that first).
    follows: str = "changes"


#: detect_all's detectors, in the order of their findings.
DETECTORS: tuple[Detector, ...] = (
    Detector("engine_start_failed", engine_start_failed.detect, "sources", False),
    Detector("write_only_offload", write_only_offload.detect, "sources", False),
    Detector("pinned_cache_length", pinned_cache.detect, "requests", True),
    Detector("prefix_reuse_broken", prefix_reuse.detect, "requests", True),
    Detector("no_signal", no_signal.detect, "sources", False, no_signal.until, "signals"),
    Detector("prefix_hit_rate_low", hit_rate_low.detect, "sources", False, hit_rate_low.until),
    Detector("prefix_cache_disabled", prefix_cache_disabled.detect, "sources", True),
    Detector("hicache_storage_unused", hicache.detect, "tiers", False, hicache.until, "signals"),
    Detector(
        "offload_retrieve_failed", retrieve_failed.detect, "tiers", False, retrieve_failed.until, "shortfalls"
    ),
    Detector("hit_rate_gap", hit_rate_gap.detect, "usage", False, hit_rate_gap.until),
    Detector("usage_double_counting", double_counting.detect, "usage", False, double_counting.until),
    Detector("format_drift", format_drift.detect, "sources", False),
)

#: Each detector as detect_all asks it: its place in DETECTORS, the counters its findings follow, detect,
#: reads and until; those that read request groups (Windows.version) and the others (Windows.shape and
#: their `follows`).
_Detect = Callable[[Windows, float, Any], list[Finding]]
_Step = tuple[int, Callable[[Windows], object], _Detect, str, Callable[..., float] | None]
_Plan = tuple[_Step, ...]
_REQUESTS: _Plan = tuple(
    (i, attrgetter("version"), d.detect, d.reads, d.until) for i, d in enumerate(DETECTORS) if d.requests
)
_OTHERS: _Plan = tuple(
    (i, attrgetter("shape", d.follows), d.detect, d.reads, d.until)
    for i, d in enumerate(DETECTORS)
    if not d.requests
)


class Memo:
    """Each detector's last findings, and detect_all's, for one windows and one settings: a detector
    asked again with the windows' counters unchanged (kvwatch.windows.window.Windows) and before its findings'
    `until` would find the same again (it is a pure function of them), so those are reused."""

    def __init__(self) -> None:
        self.windows: Windows | None = None
        self.settings: DetectorSettings | None = None
        #: Each detector's settings, in DETECTORS' order (those of `settings`).
        self.cfgs: list[Any] = []
        #: The detectors asked at all, of each half: those enabled whose `reads` holds something at
        #: Windows.shape `shape` (it moves whenever one turns empty or not: see Windows.shape); the
        #: others find nothing at any time.
        self.shape: int | None = None
        self.others: _Plan = ()
        self.requests: _Plan = ()
        #: The counters each half was last asked at (None: never), and the earliest `until` of its findings.
        self.rest: tuple[int, int] | None = None
        self.version: int | None = None
        self.rest_until = self.version_until = NEVER
        self._forget()

    def start(self, windows: Windows, settings: DetectorSettings) -> None:
        """Keep findings for these windows and settings from now on (other ones: forget them)."""
        if self.windows is not windows or self.settings != settings:
            self._forget()
        self.windows, self.settings = windows, settings
        self.cfgs = [getattr(settings, detector.name) for detector in DETECTORS]
        self.shape = None

    def plan(self, windows: Windows) -> None:
        """Choose the detectors asked at the windows' shape; those left out find nothing."""
        asked = [
            i
            for i, detector in enumerate(DETECTORS)
            if self.cfgs[i].enabled and getattr(windows, detector.reads)
        ]
        for i in range(len(DETECTORS)):
            if i not in asked:
                self.found[i], self.until[i], self.keys[i] = [], NEVER, None
        self.others = tuple(step for step in _OTHERS if step[0] in asked)
        self.requests = tuple(step for step in _REQUESTS if step[0] in asked)
        self.shape, self.rest, self.version = windows.shape, None, None

    def _forget(self) -> None:
        """Keep nothing."""
        # Per detector, in DETECTORS' order: the counters its findings were found at (None: never
        # asked), their `until`, and the findings.
        self.keys: list[object] = [None] * len(DETECTORS)
        self.until = [NEVER] * len(DETECTORS)
        self.found: list[list[Finding]] = [[] for _ in DETECTORS]
        self.rest = self.version = None
        self.rest_until = self.version_until = NEVER
        #: detect_all's last result: the windows' three counters, its `until`, the list.
        self.last: tuple[tuple[int, int, int], float, list[Finding]] | None = None

    def holds_until(self, windows: Windows, settings: DetectorSettings) -> float:
        """The event time before which detect_all(windows, time, settings, self) returns the very list
        it returned last time (-inf: at no time, the windows or settings are not those of then)."""
        last = self.last
        if (
            last is None
            or self.windows is not windows
            or self.settings is not settings
            or last[0] != (windows.version, windows.shape, windows.changes)
        ):
            return -math.inf
        return last[1]


def detect_all(
    windows: Windows, now: float, settings: DetectorSettings, memo: Memo | None = None
) -> list[Finding]:
    """Run every detector at event time `now`; with a memo, only those whose findings may have changed
    since it last asked them (findings equal to the last ones: the very list it returned then)."""
    if memo is None:
        # A detector finds nothing in windows it does not read; skipping those calls halves a tick's
        # cost for a vLLM-only replay (detectors run every 10 s of event time).
        findings: list[Finding] = []
        for detector in DETECTORS:
            if getattr(windows, detector.reads):
                findings += detector.detect(windows, now, getattr(settings, detector.name))
        return advised(findings, windows)
    if memo.windows is not windows or memo.settings is not settings:
        memo.start(windows, settings)
    # (the counters read before any detector runs: one that changed the windows is asked again)
    counters = (windows.version, windows.shape, windows.changes)
    last = memo.last
    if last is not None and last[0] == counters and now < last[1]:
        return last[2]
    if counters[1] != memo.shape:
        memo.plan(windows)
    version, rest = counters[0], counters[1:]
    # Most often only one half's counters changed: the other's findings hold, and are not looked at.
    if rest != memo.rest or now >= memo.rest_until:
        memo.rest, memo.rest_until = rest, _ask(memo.others, windows, now, memo)
    if version != memo.version or now >= memo.version_until:
        memo.version, memo.version_until = version, _ask(memo.requests, windows, now, memo)
    found = memo.found
    findings = advised([finding for kept in found for finding in kept], windows) if any(found) else []
    if last is not None and findings == last[2]:  # (the same findings: the same list, which says so)
        findings = last[2]
    rest_until, version_until = memo.rest_until, memo.version_until
    memo.last = (counters, rest_until if rest_until < version_until else version_until, findings)
    return findings


def _ask(plan: _Plan, windows: Windows, now: float, memo: Memo) -> float:
    """Ask the detectors of `plan` whose findings may have changed since the memo last asked them (at
    other counters, or past their `until`); the earliest `until` of their findings."""
    keys, untils, found, cfgs = memo.keys, memo.until, memo.found, memo.cfgs
    soonest = NEVER
    for i, follows, detect, _, until in plan:
        key = follows(windows)
        held = untils[i]
        if now >= held or keys[i] != key:
            cfg = cfgs[i]
            found[i] = detect(windows, now, cfg)
            held = untils[i] = NEVER if until is None else until(windows, now, cfg)
            keys[i] = key
        soonest = held if held < soonest else soonest
    return soonest
