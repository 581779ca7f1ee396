"""Makes samples/lmcache-0.4.4-healthy.log (+ .golden): LMCache 0.4.4 in vLLM 0.11.2, healthy."""

from __future__ import annotations

from scripts.samples.lmcache.traffic import Plan, section, simulate
from scripts.samples.made import Made

WHAT = "agent sessions whose earlier turns LMCache serves back (loads, hits vLLM's own prefix cache already had), no alert."  # noqa: E501


def make() -> list[Made]:
    """The sample and its README section."""
    name = "lmcache-0.4.4-healthy.log"
    plan = Plan("0.4.4", "0.11.2", 1, "healthy", 2301, "2026-09-14T08:00:00")
    data, sums = simulate(plan)
    return [Made(name, data, section(name, plan, sums, WHAT, __name__))]
