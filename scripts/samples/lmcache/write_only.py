"""Makes samples/lmcache-0.3.12-write-only.log (+ .golden): LMCache 0.3.12 in vLLM 0.11.2."""

from __future__ import annotations

from scripts.samples.lmcache.traffic import Plan, section, simulate
from scripts.samples.made import Made

WHAT = "every turn stores new chunks while every lookup finds 0 tokens and vLLM's External prefix cache hit rate stays 0.0% (LMCache #2493)."  # noqa: E501


def make() -> list[Made]:
    """The sample and its README section."""
    name = "lmcache-0.3.12-write-only.log"
    # (an agent session's turns add thousands of tokens: well over the detector's 20k per 24 lookups,
    # so its verdict does not hang on where the parser's stretches of summed lines end)
    plan = Plan("0.3.12", "0.11.2", 1, "write_only", 2302, "2026-09-14T08:00:00", growth=(1500, 4000))
    data, sums = simulate(plan)
    return [Made(name, data, section(name, plan, sums, WHAT, __name__))]
