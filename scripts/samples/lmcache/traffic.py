"""Agent sessions through vLLM with LMCache: the scheduler's lookups, each TP worker's stores and loads,
vLLM's stats lines every 10 s; what a correct parser must sum, for the README."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from scripts.samples.lmcache import lines as lm
from scripts.samples.vllm.messages import Stat, stats_msg
from scripts.samples.vllm.server import Server, at, plain
from scripts.samples.vllm.startup import LOGO, vllm_config

CHUNK = 256
KV_BYTES_PER_TOKEN = 147456  # Qwen3-8B: 36 layers x 8 KV heads x 128 x 2 (K, V) x bf16


@dataclass
class Plan:
    """One sample: LMCache and vLLM releases, TP size, what goes wrong, seed and start."""

    lmcache: str
    vllm: str
    tp: int
    mode: str  # "healthy", "write_only" or "failed"
    seed: int
    start: str
    sessions: int = 6
    turns: int = 8
    growth: tuple[int, int] = (300, 1400)  # tokens a turn adds to its session's prompt
    remote: str = ""  # a remote tier's URL: LMCACHE_LOG_LEVEL=DEBUG, its connector's `Bytes offloaded`


@dataclass
class Sums:
    """What the lines print, summed as the metrics must (bytes per worker: the printed GiB x 2^30)."""

    lookups: int = 0
    query: int = 0
    hit: int = 0
    need: int = 0
    stored: dict[str, int] = field(default_factory=dict)
    retrieved: dict[str, int] = field(default_factory=dict)
    short: dict[str, int] = field(default_factory=dict)
    errors: int = 0

    def add(self, table: dict[str, int], worker: str, value: int) -> None:
        """Add to a per-worker sum."""
        table[worker] = table.get(worker, 0) + value


def simulate(plan: Plan) -> tuple[bytes, Sums]:
    """The sample's bytes and its sums."""
    rng = random.Random(plan.seed)
    s = Server(plan.vllm, rng)
    sums = Sums()
    t = at(plan.start)
    api, core = ("APIServer", 1), ("EngineCore_DP0", 88)
    workers = [(f"Worker_TP{k}", 120 + k) for k in range(plan.tp)] if plan.tp > 1 else [core]
    if s.v < (0, 15):
        s.log(t, api, "banner", f"vLLM API server version {plan.vllm}")
    else:
        s.log(t, api, "logo", LOGO % (plan.vllm, "Qwen/Qwen3-8B"))
    s.log(
        t + lm.NS,
        api,
        "args",
        "non-default args: {'model': 'Qwen/Qwen3-8B', 'tensor_parallel_size': "
        f"{plan.tp}, 'kv_transfer_config': KVTransferConfig(kv_connector='LMCacheConnectorV1', kv_role='kv_both')}}",  # noqa: E501
    )
    where = lm.WHERE[plan.lmcache]
    if plan.remote:  # (the engine starts, then its workers' LMCache engines connect to the remote tier)
        config = vllm_config("Qwen/Qwen3-8B", "Qwen/Qwen3-8B", max_len=40960, tp=plan.tp, dp=1)
        s.log(
            t + 6 * lm.NS, core, "init", f"Initializing a V1 LLM engine (v{plan.vllm}) with config: {config}"
        )
        for proc in workers:
            s.raw(t + 20 * lm.NS, proc, lm.record(
                "INFO", t + 20 * lm.NS, f"Connected to remote storage at {plan.remote}, remote_mla_worker_id_as_0 "  # noqa: E501
                "mode: False", "remote_backend.py", lm.REMOTE[plan.lmcache]["connected"],
                "lmcache.v1.storage_backend.remote_backend"), "stderr")  # fmt: skip
    sizes = [0] * plan.sessions
    t += 30 * lm.NS
    n = 0
    for _ in range(plan.turns):
        for session in range(plan.sessions):
            t += rng.randint(2, 6) * lm.NS
            n += 1
            rid = f"chatcmpl-{rng.getrandbits(64):016x}"
            before = sizes[session]
            total = before + rng.randint(*plan.growth)
            sizes[session] = total
            hit = 0 if plan.mode == "write_only" else before // CHUNK * CHUNK
            computed = hit if hit and rng.random() < 0.3 else 0  # vLLM's own prefix cache still had it
            need = hit - computed
            message = lm.lookup(plan.lmcache, rid, total, computed, hit, need)
            if plan.lmcache == "0.3.9" and rng.random() < 0.3:  # the async lookup still running
                s.raw(
                    t,
                    core,
                    lm.record(
                        "INFO",
                        t,
                        f"Reqid: {rid}, Total tokens {total}, LMCache hit tokens: None.",
                        "vllm_v1_adapter.py",
                        where["lookup"] - 17,
                        lm.ADAPTER,
                    ),
                    "stderr",
                )
            repeats = 2 if rng.random() < 0.2 else 1  # the scheduler asks again while the request waits
            for k in range(repeats):
                s.raw(
                    t + k * 1_000_000,
                    core,
                    lm.record(
                        "INFO", t + k * 1_000_000, message, "vllm_v1_adapter.py", where["lookup"], lm.ADAPTER
                    ),
                    "stderr",
                )
            sums.lookups += 1
            sums.query += total
            sums.hit += hit
            sums.need += max(need, 0)
            tw = t + 40_000_000
            failing = plan.mode == "failed" and need > 0 and rng.random() < 0.35
            for proc in workers:
                worker = f"tp{proc[0][-1]}" if plan.tp > 1 else "tp0"
                if need > 0:
                    got = max(need - CHUNK * rng.randint(1, 2), 0) if failing else need
                    gib = got * KV_BYTES_PER_TOKEN / plan.tp / (1 << 30)
                    s.raw(
                        tw,
                        proc,
                        lm.record(
                            "INFO",
                            tw,
                            lm.retrieved(plan.lmcache, rid, got, need, total, gib, rng.uniform(2, 30)),
                            "cache_engine.py",
                            where["retrieved"],
                            lm.ENGINE,
                        ),
                        "stderr",
                    )
                    sums.add(sums.retrieved, worker, got)
                    if plan.remote:
                        mbytes = got * KV_BYTES_PER_TOKEN / plan.tp / 1e6
                        s.raw(tw, proc, lm.bytes_loaded(plan.lmcache, tw, mbytes, mbytes / rng.uniform(0.8, 2.0)),  # noqa: E501
                              "stderr")  # fmt: skip
                    if got < need:
                        sums.add(sums.short, worker, 1)
                        prefix = "" if plan.lmcache.startswith("0.3.") else f"Request {rid}"
                        s.raw(
                            tw,
                            proc,
                            lm.record(
                                "ERROR",
                                tw,
                                f"{prefix}The number of retrieved tokens is less than the expected number "
                                "of tokens! This should not happen!",
                                "vllm_v1_adapter.py",
                                where["error"],
                                lm.ADAPTER,
                            ),
                            "stderr",
                        )
                        s.raw(
                            tw,
                            proc,
                            lm.record(
                                "ERROR",
                                tw,
                                f"Num retrieved tokens: {got}, num expected tokens: {need}",
                                "vllm_v1_adapter.py",
                                where["numbers"],
                                lm.ADAPTER,
                            ),
                            "stderr",
                        )
                        sums.errors += 1
                offered = total - hit
                new = total - before if plan.mode == "write_only" else offered
                ts = tw + 300_000_000
                if "storing" in where:
                    s.raw(
                        ts,
                        proc,
                        lm.record(
                            "INFO",
                            ts,
                            f"Storing KV cache for {offered} out of {total} tokens "
                            f"(skip_leading_tokens={hit}) for request {rid}",
                            "vllm_v1_adapter.py",
                            where["storing"],
                            lm.ADAPTER,
                        ),
                        "stderr",
                    )
                if plan.remote:  # the adapter's wait_for_save, DEBUG from 0.3.15
                    s.raw(ts, proc, lm.record(
                        "DEBUG", ts, f"Storing KV cache for {offered} out of {total} tokens "
                        f"(skip_leading_tokens={hit}) for request {rid}", "vllm_v1_adapter.py",
                        lm.REMOTE[plan.lmcache]["storing"], lm.ADAPTER), "stderr")  # fmt: skip
                gib = new * KV_BYTES_PER_TOKEN / plan.tp / (1 << 30)
                s.raw(
                    ts,
                    proc,
                    lm.record(
                        "INFO",
                        ts,
                        lm.stored(plan.lmcache, rid, new, offered, gib, rng.uniform(3, 40)),
                        "cache_engine.py",
                        where["stored"],
                        lm.ENGINE,
                    ),
                    "stderr",
                )
                sums.add(sums.stored, worker, new)
                if plan.remote and new:  # the chunks go on to the remote tier in one batched put
                    tr = ts + rng.randint(20, 90) * 1_000_000
                    mbytes = new * KV_BYTES_PER_TOKEN / plan.tp / 1e6
                    s.raw(tr, proc, lm.bytes_offloaded(plan.lmcache, tr, mbytes, mbytes / rng.uniform(0.9, 2.4)),  # noqa: E501
                          "stderr")  # fmt: skip
        t += 4 * lm.NS
        external = 0.0 if plan.mode == "write_only" else rng.uniform(30, 70)
        st = Stat(
            prompt=rng.uniform(400, 1600),
            gen=rng.uniform(40, 120),
            running=rng.randint(1, 6),
            waiting=0,
            kv=rng.uniform(2, 20),
            prefix=rng.uniform(5, 30),
            external=external,
        )
        s.log(t, api, "stats", stats_msg(plan.vllm, "Engine 000: ", st))
    return plain(s.render()), sums


def section(name: str, plan: Plan, sums: Sums, what: str, maker: str) -> str:
    """The sample's README section: what it shows and the sums a correct parser finds."""
    per = ", ".join(f"{w} {sums.stored[w]}" for w in sorted(sums.stored))
    got = ", ".join(f"{w} {sums.retrieved.get(w, 0)}" for w in sorted(sums.stored))
    return "\n".join([
        f"## `{name}`", "",
        f"LMCache {plan.lmcache} inside vLLM {plan.vllm}, TP={plan.tp}: {what} Made by `{maker}`.", "",
        "Expected (what a correct parser sums):", "",
        f"- lookups {sums.lookups}, query tokens {sums.query}, hit tokens {sums.hit}, need-load tokens {sums.need}",  # noqa: E501
        f"- stored tokens per worker: {per}",
        f"- retrieved tokens per worker: {got}; short loads {sum(sums.short.values())}, "
        f"retrieve errors {sums.errors}",
    ])  # fmt: skip
