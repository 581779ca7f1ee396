"""Detectors: pure functions of (windows, now, settings) -> findings, one module per signature."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kvwatch.detectors import (
    double_counting,
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
from kvwatch.detectors.advice import advised
from kvwatch.model import Finding
from kvwatch.window import Windows

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
    # (decided after each probe run by the daemon, not by detect_all: see probe_prefix_miss)
    probe_prefix_miss: probe_prefix_miss.Settings = field(default_factory=probe_prefix_miss.Settings)


#: Every alert kvwatch raises, in the detectors' order: each detector's alert is named as its field above
#: (the one list the config's alert names are checked against).
ALERTS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(DetectorSettings))


class Memo:
    """The last findings of the request detectors, which read only request groups and the sources' kinds
    and facts (never `now`): while `Windows.version` stays the same, so do their findings."""

    def __init__(self) -> None:
        self.kept: dict[str, tuple[Windows, int, object, list[Finding]]] = {}

    def findings(
        self,
        name: str,
        detect: Callable[[Windows, float, Any], list[Finding]],
        windows: Windows,
        now: float,
        cfg: object,
    ) -> list[Finding]:
        """`detect(windows, now, cfg)`, or what it found last time when neither windows nor cfg changed."""
        version = windows.version  # (before: a detector that changed the windows is asked again)
        kept = self.kept.get(name)
        if kept is not None and kept[0] is windows and kept[1] == version and kept[2] == cfg:
            return kept[3]
        found = detect(windows, now, cfg)
        self.kept[name] = (windows, version, cfg, found)
        return found


def detect_all(
    windows: Windows, now: float, settings: DetectorSettings, memo: Memo | None = None
) -> list[Finding]:
    """Run every detector at event time `now` (with a memo, the request detectors only when their
    windows changed since its last tick)."""
    # A detector finds nothing in windows it does not read; skipping those calls halves a tick's cost
    # for a vLLM-only replay (detectors run every 10 s of event time). The order of findings is kept.
    findings: list[Finding] = []
    if windows.sources:
        findings += write_only_offload.detect(windows, now, settings.write_only_offload)
    if windows.requests:
        # Ticks outnumber requests (a tick every 10 s of event time), and these two cost the most.
        if memo is None:
            findings += pinned_cache.detect(windows, now, settings.pinned_cache_length)
            findings += prefix_reuse.detect(windows, now, settings.prefix_reuse_broken)
        else:
            pinned = settings.pinned_cache_length
            findings += memo.findings("pinned_cache_length", pinned_cache.detect, windows, now, pinned)
            reuse = settings.prefix_reuse_broken
            findings += memo.findings("prefix_reuse_broken", prefix_reuse.detect, windows, now, reuse)
    if windows.sources:
        findings += no_signal.detect(windows, now, settings.no_signal)
        findings += hit_rate_low.detect(windows, now, settings.prefix_hit_rate_low)
        findings += prefix_cache_disabled.detect(windows, now, settings.prefix_cache_disabled)
        findings += hicache_storage_unused.detect(windows, now, settings.hicache_storage_unused)
        findings += offload_retrieve_failed.detect(windows, now, settings.offload_retrieve_failed)
    if windows.usage:
        findings += hit_rate_gap.detect(windows, now, settings.hit_rate_gap)
        findings += double_counting.detect(windows, now, settings.usage_double_counting)
    return advised(findings, windows)
