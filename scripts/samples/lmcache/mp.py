"""Makes samples/lmcache-0.5.6-mp.log and samples/lmcache-0.5.6-mp-extra-stats.log: an MP server's log."""

from __future__ import annotations

import random

from scripts.samples.lmcache import lines as lm
from scripts.samples.made import Made
from scripts.samples.vllm.server import at

# v1/multiprocess/modules/engine_driven_transfer.py (store 448, retrieve 515) and
# v1/distributed/storage_manager.py (prefetch 651) of lmcache 0.5.6.
TRANSFER = ("engine_driven_transfer.py", "lmcache.v1.multiprocess.modules.engine_driven_transfer")
STORAGE = ("storage_manager.py", "lmcache.v1.distributed.storage_manager")
# `--enable-extra-logging` (0.5.2-0.5.6; not 0.5.1): v1/mp_observability/subscribers/logging/extra_stats.py
# logs per device, at each flush (interval 10 s), `L0<->L1 stats [%s] last %.1fs: %s | %s` (:160) and
# `L0<->L1 stats [%s] cumulative: %s | %s` (:169), each side `{label} ops=N tokens=N size=X.XXGB
# avg_copy=X.XXGB/s` (`n/a` untimed).
EXTRA = ("extra_stats.py", "lmcache.v1.mp_observability.subscribers.logging.extra_stats")
KV_BYTES_PER_TOKEN = 147456  # Qwen3-8B, bf16: the size the stats report


def side(label: str, ops: int, tokens: int, copy_s: float) -> str:
    """extra_stats.py's `_format_side`."""
    size = tokens * KV_BYTES_PER_TOKEN
    rate = f"{size / copy_s / 1e9:.2f}GB/s" if copy_s > 0 else "n/a"
    return f"{label} ops={ops} tokens={tokens} size={size / 1e9:.2f}GB avg_copy={rate}"


def make() -> list[Made]:
    """The samples and their README sections."""
    return [
        mp_sample("lmcache-0.5.6-mp.log", extra=False),
        mp_sample("lmcache-0.5.6-mp-extra-stats.log", extra=True),
    ]


def mp_sample(name: str, *, extra: bool) -> Made:
    """The MP server's log (with `--enable-extra-logging`: its window and cumulative stats too)."""
    rng = random.Random(2305)
    window = {"store": [0, 0, 0.0], "retrieve": [0, 0, 0.0]}  # ops, tokens, copy seconds
    total = {"store": [0, 0, 0.0], "retrieve": [0, 0, 0.0]}
    flushed = at("2026-09-14T09:00:00")
    t = at("2026-09-14T09:00:00")
    out: list[str] = []
    stored = retrieved = hits = asked = prefetches = 0
    for k in range(40):
        t += rng.randint(1, 4) * lm.NS + rng.randrange(lm.NS)
        if extra and t - flushed >= 10 * lm.NS:  # the eviction loop's tick flushes the window
            elapsed, flushed = (t - flushed) / lm.NS, t
            out.append(lm.record("INFO", t, f"L0<->L1 stats [cuda:0] last {elapsed:.1f}s: "
                                 f"{side('store', *window['store'])} | {side('retrieve', *window['retrieve'])}",  # noqa: E501
                                 EXTRA[0], 160, EXTRA[1]))  # fmt: skip
            out.append(lm.record("INFO", t, "L0<->L1 stats [cuda:0] cumulative: "
                                 f"{side('store', *total['store'])} | {side('retrieve', *total['retrieve'])}",
                                 EXTRA[0], 169, EXTRA[1]))  # fmt: skip
            window = {"store": [0, 0, 0.0], "retrieve": [0, 0, 0.0]}
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
            for acc in (window["retrieve"], total["retrieve"]):
                acc[0], acc[1], acc[2] = acc[0] + 1, acc[1] + tokens, acc[2] + tokens * 2.1e-6
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
        for acc in (window["store"], total["store"]):
            acc[0], acc[1], acc[2] = acc[0] + 1, acc[1] + new, acc[2] + new * 2.6e-6
    note = "\n".join([
        f"## `{name}`", "",
        "An LMCache 0.5.6 server in MP mode (vLLM's `LMCacheMPConnector` talks to it): its own log, read with "  # noqa: E501
        f"`engine = \"lmcache\"` (auto-detected). Made by `{__name__}`.", "",
        "Expected (what a correct parser sums):", "",
        f"- stored tokens {stored}, retrieved tokens {retrieved}",
        f"- prefetches {prefetches}, keys found {hits} of {asked} asked",
    ])  # fmt: skip
    if extra:
        note += (
            "\n\nWith `--enable-extra-logging` (0.5.2+): every 10 s the window's and the cumulative "
            "`L0<->L1 stats [cuda:0] ...` lines (extra_stats.py:160, :169), recognised and not summed (they "
            "repeat the `Stored` / `Retrieved` lines); the sums are the same."
        )
    return Made(name, "".join(out).encode(), note)
