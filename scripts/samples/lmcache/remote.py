"""Makes samples/lmcache-0.5.6-remote-write-only.log and samples/lmcache-0.5.6-remote-healthy.log."""

from __future__ import annotations

from scripts.samples.lmcache.traffic import Plan, section, simulate
from scripts.samples.made import Made

URL = "redis://kv-redis.inference.svc:6379"
WHAT = {
    "write_only": (
        "a Redis remote tier (`remote_url: "
        + URL
        + "`, LMCACHE_LOG_LEVEL=DEBUG): every store is followed by "
        "the connector's DEBUG `[InstrumentedRemoteConnector(<...RedisConnector object at 0x...>)]Bytes "
        "offloaded: X MBytes in Y ms` (instrumented_connector.py:194, batched_put; this form 0.3.15-0.5.6) "
        "while every lookup finds 0 "
        "tokens and External stays 0.0%: the remote tier is written and never read."
    ),
    "healthy": (
        "the same Redis tier, read back: lookups hit, each load is preceded by `Bytes loaded: X MBytes in "
        "Y ms` "
        "(instrumented_connector.py:166, batched_get) and each store followed by `Bytes offloaded`."
    ),
}


def make() -> list[Made]:
    """The samples and their README sections."""
    made = []
    for name, mode, seed in (
        ("lmcache-0.5.6-remote-write-only.log", "write_only", 2306),
        ("lmcache-0.5.6-remote-healthy.log", "healthy", 2307),
    ):
        plan = Plan("0.5.6", "0.26.0", 1, mode, seed, "2026-09-15T10:00:00", growth=(1500, 4000), remote=URL)
        data, sums = simulate(plan)
        made.append(Made(name, data, section(name, plan, sums, WHAT[mode], __name__)))
    return made
