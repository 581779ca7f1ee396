"""Makes samples/vllm-0.34-offload-failures.log (+ .golden): vLLM 0.34.0's failed offload jobs."""

from __future__ import annotations

import random

from scripts.samples.made import Made
from scripts.samples.vllm.lines import NS
from scripts.samples.vllm.messages import Stat, offload_kv, stats_msg, walk
from scripts.samples.vllm.readme import Tally, readme_section, remember
from scripts.samples.vllm.server import Server, at, plain
from scripts.samples.vllm.startup import Setup, startup, traffic, vllm_config

NAME = "vllm-0.34-offload-failures.log"
VERSION = "0.34.0"
#: Intervals whose load jobs fail (interval -> failed loads), and whose store jobs do (-> chunks dropped).
LOAD_FAILS = {14: 1, 15: 2, 16: 1, 18: 1}
STORE_FAILS = {15: 6, 17: 3}


def failures_sample() -> tuple[bytes, str]:
    """A healthy CPU offload whose loads start failing for a few minutes (a host-memory fault)."""
    rng = random.Random(3401)
    s = Server(VERSION, rng)
    tally = Tally()
    model = "Qwen/Qwen3-32B"
    args = (
        f"{{'model_tag': '{model}', 'model': '{model}', 'max_model_len': 131072, "
        "'served_model_name': ['qwen3-32b'], 'gpu_memory_utilization': 0.92, 'kv_offloading_size': 64.0}"
    )
    api, eng = ("APIServer", 1), ("EngineCore", 241)
    cfg = Setup(
        model=model,
        served="qwen3-32b",
        args=args,
        config=vllm_config(model, "qwen3-32b", max_len=131072, tp=1, dp=1),
        kv_tokens=237_536,
        max_len=131072,
        conc=1.81,
        kv_gib="57.99",
        engines=[eng],
        workers=[[eng]],
        connector="OffloadingConnector",
        shards=17,
    )
    t = startup(s, at("2026-11-20T09:58:00") + 97_000_000, cfg, tally)
    tally.facts.insert(0, "non-default args: 'kv_offloading_size': 64.0 (no kv_transfer_config)")
    t += 31 * NS
    block = 16 * 262144  # Qwen3-32B: 64 layers x 8 KV heads x 128 x 2 (K,V) x bf16, 16-token blocks
    prefix, kvu, ext = 66.0, 22.0, 8.0
    job = 400
    for k in range(28):
        t_stat = t + 10 * NS
        traffic(s, t, 10, 0.45, log_requests=False)
        for n in range(LOAD_FAILS.get(k, 0)):
            job += rng.randint(3, 9)
            rid = f"chatcmpl-{rng.getrandbits(64):016x}"
            s.log(
                t + (2 + 3 * n) * NS, eng, "load_failed",
                f"KV offload load job {job} failed; request {rid} will not load from the offloaded cache "
                "again.",
                level="WARNING",
            )  # fmt: skip
            tally.facts.append(f"interval {k + 1}: load job {job} failed ({rid})")
        if k in STORE_FAILS:
            job += rng.randint(3, 9)
            s.log(
                t + 7 * NS, eng, "store_failed",
                f"KV offload store job {job} failed; dropping {STORE_FAILS[k]} chunk(s) from the CPU cache "
                "rather than publishing them.",
                level="WARNING",
            )  # fmt: skip
            tally.facts.append(f"interval {k + 1}: store job {job} failed ({STORE_FAILS[k]} chunks dropped)")
        prefix = walk(rng, prefix + 0.3, 55.0, 92.0, 1.2)
        kvu = walk(rng, kvu, 8.0, 78.0, 6.0)
        ext = walk(rng, ext + 0.8, 0.0, 60.0, 2.0)
        st = Stat(
            prompt=rng.uniform(1800, 9500),
            gen=rng.uniform(300, 1400),
            running=rng.randint(4, 24),
            waiting=rng.choice([0, 0, 0, 1, 2]),
            kv=kvu,
            prefix=prefix,
            external=ext,
        )
        s.log(t_stat, api, "stats", stats_msg(VERSION, "Engine 000: ", st))
        remember(tally, "0", st)
        loads = 0 if k in LOAD_FAILS else rng.randint(30, 400)
        text, sb, lb = offload_kv(
            rng, rng.randint(150, 2400), loads, block, lookups=rng.randint(12, 70), order=k
        )
        s.log(t_stat + 1_000_000, api, "kvxfer", f"KV Transfer metrics: {text}")
        tally.kv("0", sb, lb)
        t = t_stat
    st = Stat(prompt=0.0, gen=0.0, running=0, waiting=0, kv=0.0, prefix=prefix, external=ext)
    s.log(t + 10 * NS, api, "stats", stats_msg(VERSION, "Engine 000: ", st))
    remember(tally, "0", st)
    body = [
        f"vLLM **{VERSION}**, V1, one engine (`EngineCore`, TP=1), `Qwen/Qwen3-32B`, OffloadingConnector "
        "through `--kv-offloading-size 64`. 28 busy intervals of 10 s, each with a stats line and a "
        "`KV Transfer metrics:` line (0.24+ flat keys; no load bytes in an interval whose loads failed), "
        "External prefix cache hit rate above 0. From interval 15 to 19, five load jobs fail: 0.34's "
        "`WARNING [scheduler.py:2481] KV offload load job N failed; request R will not load from the "
        "offloaded cache again.` (`distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py`), and "
        "two store jobs: `KV offload store job N failed; dropping M chunk(s) from the CPU cache rather than "
        "publishing them.` (line 2468). The failed loads are the tier's shortfalls: "
        "`offload_retrieve_failed` fires at the third within 10 minutes; the tier still reads back, so "
        "`write_only_offload` does not. "
        "Every `file:line` is 0.34.0's (`LINES` in `scripts/samples/vllm/lines.py`, from its wheel).",
    ]
    return plain(s.render()), readme_section(NAME, body, tally, maker=__name__)


def make() -> list[Made]:
    """The sample and its README section."""
    data, section = failures_sample()
    return [Made(NAME, data, section)]
