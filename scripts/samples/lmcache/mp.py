"""Makes samples/lmcache-0.5.6-mp.log (+ .golden): an LMCache 0.5.6 MP-mode server's own log."""

from __future__ import annotations

import random

from scripts.samples.lmcache import lines as lm
from scripts.samples.made import Made
from scripts.samples.vllm.server import at

# v1/multiprocess/modules/engine_driven_transfer.py (store 448, retrieve 515) and
# v1/distributed/storage_manager.py (prefetch 651) of lmcache 0.5.6.
TRANSFER = ("engine_driven_transfer.py", "lmcache.v1.multiprocess.modules.engine_driven_transfer")
STORAGE = ("storage_manager.py", "lmcache.v1.distributed.storage_manager")


def make() -> list[Made]:
    """The sample and its README section."""
    name = "lmcache-0.5.6-mp.log"
    rng = random.Random(2305)
    t = at("2026-09-14T09:00:00")
    out: list[str] = []
    stored = retrieved = hits = asked = prefetches = 0
    for k in range(40):
        t += rng.randint(1, 4) * lm.NS + rng.randrange(lm.NS)
        chunks = rng.randint(2, 12)
        found = 0 if k % 3 == 0 else rng.randint(1, chunks)
        if found:
            l2 = rng.randint(0, found)
            out.append(lm.record(
                "INFO", t, f"Prefetch request completed (L1+L2): {found}/{chunks} retained keys ({found - l2} L1, "  # noqa: E501
                f"{l2} L2) in {rng.uniform(0.2, 9):.1f} ms (external_request_id=chatcmpl-{rng.getrandbits(48):012x}, "  # noqa: E501
                f"prefetch_request_id={k})", STORAGE[0], 651, STORAGE[1]))  # fmt: skip
            hits, asked, prefetches = hits + found, asked + chunks, prefetches + 1
            tokens = found * 256
            out.append(
                lm.record(
                    "INFO",
                    t + 20_000_000,
                    f"Retrieved {tokens} tokens in {rng.uniform(0.002, 0.05):.3f} seconds",
                    TRANSFER[0],
                    515,
                    TRANSFER[1],
                )
            )
            retrieved += tokens
        new = rng.randint(1, 6) * 256
        out.append(
            lm.record(
                "INFO",
                t + 300_000_000,
                f"Stored {new} tokens in {rng.uniform(0.002, 0.05):.3f} seconds",
                TRANSFER[0],
                448,
                TRANSFER[1],
            )
        )
        stored += new
    note = "\n".join([
        f"## `{name}`", "",
        "An LMCache 0.5.6 server in MP mode (vLLM's `LMCacheMPConnector` talks to it): its own log, read with "  # noqa: E501
        f"`engine = \"lmcache\"` (auto-detected). Made by `{__name__}`.", "",
        "Expected (what a correct parser sums):", "",
        f"- stored tokens {stored}, retrieved tokens {retrieved}",
        f"- prefetches {prefetches}, keys found {hits} of {asked} asked",
    ])  # fmt: skip
    return [Made(name, "".join(out).encode(), note)]
