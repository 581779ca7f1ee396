"""Makes samples/lmcache-0.3.9-failed-loads.log (+ .golden): LMCache 0.3.9 in vLLM 0.11.2, failed loads."""

from __future__ import annotations

from scripts.samples.lmcache.traffic import Plan, section, simulate
from scripts.samples.made import Made

WHAT = "a third of the loads come back short, with the adapter's ERROR pair; pending (`None.`) and repeated lookups."  # noqa: E501


def make() -> list[Made]:
    """The sample and its README section."""
    name = "lmcache-0.3.9-failed-loads.log"
    plan = Plan("0.3.9", "0.11.2", 1, "failed", 2303, "2026-09-14T08:00:00")
    data, sums = simulate(plan)
    return [Made(name, data, section(name, plan, sums, WHAT, __name__))]
