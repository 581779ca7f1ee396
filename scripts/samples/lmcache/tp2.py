"""Makes samples/lmcache-0.5.6-tp2.log (+ .golden): LMCache 0.5.6 in vLLM 0.26.0, TP=2."""

from __future__ import annotations

from scripts.samples.lmcache.traffic import Plan, section, simulate
from scripts.samples.made import Made

WHAT = "each of the two workers logs its own store and load of every request (bytes add up, tokens repeat)."


def make() -> list[Made]:
    """The sample and its README section."""
    name = "lmcache-0.5.6-tp2.log"
    plan = Plan("0.5.6", "0.26.0", 2, "healthy", 2304, "2026-09-14T08:00:00")
    data, sums = simulate(plan)
    return [Made(name, data, section(name, plan, sums, WHAT, __name__))]
