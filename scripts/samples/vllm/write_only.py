"""Makes samples/vllm-write-only-offload.log and samples/vllm-0.34-write-only-offload.log: incident 2."""

from __future__ import annotations

import random

from scripts.samples.made import Made
from scripts.samples.vllm.lines import LINES, NS, vtuple
from scripts.samples.vllm.messages import Stat, offload_kv, spec_msg, stats_msg, walk
from scripts.samples.vllm.readme import Tally, readme_section, remember
from scripts.samples.vllm.server import Server, at, fuuid, plain
from scripts.samples.vllm.startup import Setup, kvtc, startup, traffic, vllm_config


def write_only_sample(
    version: str = "0.26.0", seed: int = 2002, start: str = "2026-08-18T01:19:40"
) -> tuple[bytes, list[str], Tally]:
    """The incident-2 shape (MTP draft groups make every lookup miss): the log, what it shows, the tally."""
    rng = random.Random(seed)
    s = Server(version, rng)
    tally = Tally()
    model = "deepseek-ai/DeepSeek-V4-Flash"
    api = ("APIServer", 1)
    eng = ("EngineCore", 288)
    workers = [(f"Worker_TP{k}", 420 + k) for k in range(8)]
    eid = fuuid(rng)
    spec = "{'method': 'mtp', 'num_speculative_tokens': 7}"
    args = (
        f"{{'model_tag': '{model}', 'model': '{model}', 'trust_remote_code': True, "
        "'max_model_len': 163840, 'served_model_name': ['deepseek-v4-flash'], "
        "'tensor_parallel_size': 8, 'block_size': 256, 'gpu_memory_utilization': 0.9, "
        f"'kv_transfer_config': {kvtc(eid, repr({'cpu_bytes_to_use': 960000000000}))}, "
        f"'speculative_config': {spec}}}"
    )
    spec_cfg = "SpeculativeConfig(method='mtp', model='deepseek-ai/DeepSeek-V4-Flash', num_spec_tokens=7)"
    cfg = Setup(
        model=model,
        served="deepseek-v4-flash",
        args=args,
        config=vllm_config(model, "deepseek-v4-flash", max_len=163840, tp=8, dp=1, spec=spec_cfg),
        kv_tokens=1_591_312,
        max_len=163840,
        conc=9.71,
        kv_gib="61.38",
        engines=[eng],
        workers=[workers],
        connector="OffloadingConnector",
        eagle="[2]",
        engine_id=eid,
        shards=46,
        arch="DeepseekV4ForCausalLM",
    )
    t = startup(s, at(start) + 88_000_000, cfg, tally)
    tally.facts.insert(
        0,
        "non-default args: kv_transfer_config KVTransferConfig(kv_connector="
        "'OffloadingConnector', kv_role='kv_both', cpu_bytes_to_use=960000000000), "
        "block_size 256, speculative_config mtp x7",
    )
    t += 22 * NS
    prefix, kvu = 86.0, 2.0
    for k in range(40):
        t_stat = t + 10 * NS
        traffic(s, t, 10, 0.8, log_requests=False)
        incident = k == 23
        prefix = 88.3 if incident else walk(rng, prefix, 84.5, 90.5, 0.9)
        kvu = 0.5 if incident else walk(rng, kvu, 0.3, 7.5, 1.2)
        st = Stat(
            prompt=34844.3 if incident else rng.uniform(15000, 31000),
            gen=rng.uniform(800, 2400),
            running=rng.randint(18, 60),
            waiting=rng.choice([0, 0, 1, 2, 4]),
            kv=kvu,
            prefix=prefix,
            external=0.0,
        )
        s.log(t_stat, api, "stats", stats_msg(version, "Engine 000: ", st))
        remember(tally, "0", st)
        s.log(t_stat + 400_000, api, "specdec", spec_msg(rng, 7, 10.0, rng.randint(9000, 16000)))
        tally.spec_lines["0"] = tally.spec_lines.get("0", 0) + 1
        store = 20646236160 if incident else rng.randint(240_000, 560_000) * 4096
        lookups = 40 + k * 3 + rng.randint(0, 9)
        text, sb, _ = offload_kv(
            rng, store // 4096, 0, 4096, lookups=lookups, order=k + 1, cpu_block=8_355_840
        )
        s.log(t_stat + 800_000, api, "kvxfer", f"KV Transfer metrics: {text}")
        tally.kv("0", sb, 0)
        tally.facts.append(f"interval {k + 1}: lookup_sync_delay_seconds_count={lookups}") if k in (
            0,
            39,
        ) else None
        t = t_stat
    st = Stat(prompt=0.0, gen=0.0, running=0, waiting=0, kv=0.0, prefix=prefix, external=0.0)
    t += 10 * NS
    s.log(t, api, "stats", stats_msg(version, "Engine 000: ", st))
    remember(tally, "0", st)
    eagle = LINES[version]["eagle"]
    body = [
        f"vLLM **{version}**, V1, `deepseek-ai/DeepSeek-V4-Flash` on TP=8 (`Worker_TP0..7`), "
        "OffloadingConnector via `--kv-transfer-config` with `cpu_bytes_to_use=960000000000`, "
        "`block_size` 256, MTP speculative decoding with 7 tokens. Startup has the INFO "
        f"`[{eagle}] KV offloading: EAGLE/MTP draft attention groups [2] detected.` line"
        + (
            " (0.34's whole line: 0.24-0.33 add `The trailing chunk of these groups will be excluded from "
            "offloading due to volatility.`; `distributed/kv_transfer/kv_connector/v1/offloading/"
            "scheduler.py`, read in the 0.34.0 wheel). "
            if vtuple(version) >= (0, 34)
            else " (`... excluded from offloading due to volatility.` follows). "
        )
        + "Then 40 intervals of 10 s (6 min 40 s) of heavy prefill, each with an `Engine 000:` line, a "
        "`SpecDecoding metrics:` line and a `KV Transfer metrics:` line that has store keys, "
        "`lookup_sync_delay_seconds_count` (growing 40 -> ~160 per interval), "
        "`cpu_cache_read_usage_perc=0.0` and never a load key. `External prefix cache hit rate: "
        "0.0%` on every line. Interval 24 is the incident's moment: prompt 34844.3 tokens/s, GPU KV "
        "0.5%, Prefix 88.3%, External 0.0%, `vllm:kv_offload_store_bytes=20646236160`. Ends with "
        "one `0.0 tokens/s` line. Fires `write_only_offload`, whose advice names both wordings.",
    ]
    return plain(s.render()), body, tally


SAMPLES = (
    ("vllm-write-only-offload.log", "0.26.0", 2002, "2026-08-18T01:19:40"),
    ("vllm-0.34-write-only-offload.log", "0.34.0", 3402, "2026-11-21T14:02:10"),
)


def make() -> list[Made]:
    """The samples and their README sections."""
    made = []
    for name, version, seed, start in SAMPLES:
        data, body, tally = write_only_sample(version, seed, start)
        section = readme_section(name, body, tally, "load bytes: 0 (no load key anywhere)", maker=__name__)
        made.append(Made(name, data, section))
    return made
