"""Detectors: pure functions of (windows, now, settings) -> findings, one module per signature."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

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


def detect_all(windows: Windows, now: float, settings: DetectorSettings) -> list[Finding]:
    """Run every detector at event time `now`."""
    # A detector finds nothing in windows it does not read; skipping those calls halves a tick's cost
    # for a vLLM-only replay (detectors run every 10 s of event time). The order of findings is kept.
    findings: list[Finding] = []
    if windows.sources:
        findings += write_only_offload.detect(windows, now, settings.write_only_offload)
    if windows.requests:
        findings += pinned_cache.detect(windows, now, settings.pinned_cache_length)
        findings += prefix_reuse.detect(windows, now, settings.prefix_reuse_broken)
    if windows.sources:
        findings += no_signal.detect(windows, now, settings.no_signal)
        findings += hit_rate_low.detect(windows, now, settings.prefix_hit_rate_low)
        findings += prefix_cache_disabled.detect(windows, now, settings.prefix_cache_disabled)
        findings += hicache_storage_unused.detect(windows, now, settings.hicache_storage_unused)
        findings += offload_retrieve_failed.detect(windows, now, settings.offload_retrieve_failed)
    if windows.usage:
        findings += hit_rate_gap.detect(windows, now, settings.hit_rate_gap)
        findings += double_counting.detect(windows, now, settings.usage_double_counting)
    return findings
