"""How long a detector's findings hold with no new event: the `until` of those that read `now`.

A detector's `until(windows, now, cfg)` is the event time before which, the windows unchanged, its
findings stay those it finds at `now` (kvwatch.detectors.Memo reuses them until then). Returning `now`
is always right (the detector is asked again at the next tick); a later time must be exact.
"""

from __future__ import annotations

import math

#: Findings that no passing of time changes.
NEVER = math.inf


def before(time: float) -> float:
    """A time just before `time`: for every t under it, `t - start <= span` holds where
    `time = start + span` (float rounding could otherwise put `t - start` above `span` at `time`
    itself; rounding is monotonic, so two units in the last place are margin enough)."""
    return time - 2 * math.ulp(time)
