"""The range each numeric detector setting must lie in, with the reason a value outside it is refused.

A count below 1, a share outside 0..1, a duration of 0 seconds or less: each would make a detector judge
nothing, everything, or divide by zero, so `check-config` refuses it naming the field
(`detectors.write_only_offload.min_intervals: must be at least 1 (a count; got 0)`). Settings whose
rule involves another setting (`waste_requests` at most `requests`) or a kept maximum are checked by
their detector's own `Settings.problems()` and marked `OWN` here. Every numeric setting of every
detector is in this table (tests/test_config_bounds.py holds it so).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Range:
    """`low` < or <= value <= `high` (None: unbounded); `what` says what the value is."""

    what: str
    low: float | None = None
    low_open: bool = False  # the value must be more than `low`, not equal
    high: float | None = None

    def problem(self, value: float) -> str | None:
        """`must be ... (what; got value)`, or None when `value` lies in the range."""
        below = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        above = self.high is not None and value > self.high
        if not (below or above):
            return None
        return f"must be {self.rule()} ({self.what}; got {value:g})"

    def rule(self) -> str:
        """The range in words: `at least 1`, `more than 0`, `from 0 to 1`, `more than 0 and at most 1`."""
        low = "" if self.low is None else f"{'more than' if self.low_open else 'at least'} {self.low:g}"
        if self.high is None:
            return low
        if self.low is not None and not self.low_open:
            return f"from {self.low:g} to {self.high:g}"
        return f"{low} and at most {self.high:g}" if low else f"at most {self.high:g}"


COUNT = Range("a count", 1)
SECONDS = Range("a duration in seconds", 0, low_open=True)
#: A detector's look-back: the windows keep an hour of event time (kvwatch.windows.window.HORIZON), so a
#: longer window would judge less than it says.
WINDOW = Range("a look-back in seconds; windows keep an hour", 0, low_open=True, high=3600)
SHARE = Range("a share", 0, high=1)  # 0 allowed: "none of it"
POSITIVE_SHARE = Range("a share", 0, low_open=True, high=1)  # 0 would take every request
CORRELATION = Range("a rank correlation", 0, low_open=True, high=1)  # 0 or less: no trend counts as one
FACTOR = Range("a factor", 1)  # times the cached length: below 1 every prompt passes
BYTES = Range("bytes", 0, low_open=True)
RATE = Range("tokens per second", 0, low_open=True)  # 0 would call idle intervals busy
TOKENS = Range("tokens", 1)
#: Checked by the detector's own `Settings.problems()` (a rule that involves another value).
OWN = None

#: Per detector (its settings field name), per numeric setting: its range, or OWN.
BOUNDS: dict[str, dict[str, Range | None]] = {
    "write_only_offload": {
        "min_intervals": COUNT,
        "min_store_bytes": BYTES,
        "min_store_blocks": COUNT,
        "min_prompt_throughput": RATE,
        "min_lookups": COUNT,
        "min_store_tokens": TOKENS,
    },
    "pinned_cache_length": {
        "min_requests": COUNT,
        "max_requests": COUNT,
        "min_share": POSITIVE_SHARE,
        "min_growth": FACTOR,
        "min_trend": CORRELATION,
        "far_growth": FACTOR,
        "block_size": OWN,
        "conversation_requests": OWN,
        "same_within": OWN,
        "creep_step": OWN,
        "creep_ratio": OWN,
    },
    "prefix_reuse_broken": {
        "requests": COUNT,
        "min_prompt": TOKENS,
        "max_reuse": SHARE,
        "min_share": POSITIVE_SHARE,
        "large_prompt": OWN,
        "waste_requests": OWN,
    },
    "no_signal": {"silence": SECONDS},
    "prefix_hit_rate_low": {"threshold": POSITIVE_SHARE, "window": WINDOW, "min_intervals": COUNT},
    "hit_rate_gap": {"window": WINDOW, "min_requests": COUNT, "min_gap": POSITIVE_SHARE, "max_ratio": SHARE},
    "usage_double_counting": {
        "window": WINDOW,
        "max_requests": OWN,
        "min_requests": COUNT,
        "min_share": POSITIVE_SHARE,
        "min_read_ratio": POSITIVE_SHARE,
        "min_tracking": CORRELATION,
        "min_upstream": COUNT,
        "tolerance": SHARE,
    },
    "prefix_cache_disabled": {"min_requests": COUNT, "min_prompt": TOKENS},
    "hicache_storage_unused": {"min_prefetches": COUNT, "window": WINDOW},
    "offload_retrieve_failed": {"min_failures": COUNT, "window": WINDOW, "quiet": SECONDS},
    "engine_start_failed": {},
    "format_drift": {"min_lines": COUNT},
    "probe_prefix_miss": {"threshold": OWN, "runs": OWN},
}


def out_of_range(detector: str, values: dict[str, object]) -> list[str]:
    """`key: must be ...` for each of `values` (a detector's chosen settings) outside its range."""
    found = []
    for key, value in values.items():
        bound = BOUNDS.get(detector, {}).get(key)
        if bound is None or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        problem = bound.problem(value)
        if problem is not None:
            found.append(f"{key}: {problem}")
    return found
