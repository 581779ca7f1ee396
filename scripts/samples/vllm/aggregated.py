"""Makes samples/vllm-aggregated.log (+ .golden): vLLM 0.20.2, aggregated engine logging."""

from __future__ import annotations

import random

from scripts.samples.made import Made
from scripts.samples.vllm.lines import NS
from scripts.samples.vllm.messages import Stat, stats_msg, walk
from scripts.samples.vllm.readme import Tally, readme_section, remember
from scripts.samples.vllm.server import Server, at, fuuid, plain
from scripts.samples.vllm.startup import Setup, startup, traffic, vllm_config


def aggregated_sample() -> tuple[bytes, str]:
    """--aggregate-engine-logging on 0.20.2 with the 0.16-0.23 GPU_to_CPU keys."""
    version = "0.20.2"
    rng = random.Random(4004)
    s = Server(version, rng)
    tally = Tally()
    model = "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8"
    api = ("APIServer", 1)
    engs = [(f"EngineCore_DP{k}", 301 + k) for k in range(4)]
    workers = [[(f"Worker_DP{d}_TP{k}", 520 + 2 * d + k) for k in range(2)] for d in range(4)]
    eid = fuuid(rng)
    ktc = (
        f"KVTransferConfig(kv_connector='OffloadingConnector', engine_id='{eid}', "
        "kv_buffer_device='cuda', kv_buffer_size=1000000000.0, kv_role='kv_both', "
        "kv_rank=None, kv_parallel_size=1, kv_ip='127.0.0.1', kv_port=14579, "
        "kv_connector_extra_config={'cpu_bytes_to_use': 214748364800}, "
        "kv_connector_module_path=None, enable_permute_local_kv=False, "
        "kv_load_failure_policy='fail')"
    )
    args = (
        f"{{'model_tag': '{model}', 'api_server_count': 1, 'model': '{model}', "
        "'max_model_len': 131072, 'served_model_name': ['qwen3-235b'], "
        "'tensor_parallel_size': 2, 'data_parallel_size': 4, 'aggregate_engine_logging': True, "
        f"'kv_transfer_config': {ktc}}}"
    )
    cfg = Setup(
        model=model,
        served="qwen3-235b",
        args=args,
        config=vllm_config(model, "qwen3-235b", max_len=131072, tp=2, dp=4),
        kv_tokens=812_864,
        max_len=131072,
        conc=6.20,
        kv_gib="73.42",
        engines=engs,
        workers=workers,
        connector="OffloadingConnector",
        shards=24,
        arch="Qwen3MoeForCausalLM",
        engine_id=eid,
    )
    t = startup(s, at("2026-05-12T07:58:02") + 771_000_000, cfg, tally)
    t += 11 * NS
    prefix, kvu, ext = 71.0, 22.0, 0.0
    block = 16 * 4 * 94 * 128 * 2  # per 16-token block per TP rank pair (fp8 KV), summed
    for k in range(32):
        t_stat = t + 10 * NS
        traffic(s, t, 10, 1.2, log_requests=False)
        prefix = walk(rng, prefix + 0.2, 60.0, 90.0, 1.0)
        kvu = walk(rng, kvu, 10.0, 85.0, 5.0)
        ext = walk(rng, ext + 0.8, 0.0, 35.0, 1.5) if k else 0.0
        st = Stat(
            prompt=rng.uniform(9000, 42000),
            gen=rng.uniform(2000, 7000),
            running=rng.randint(40, 160),
            waiting=rng.choice([0, 0, 2, 5, 11]),
            kv=kvu,
            prefix=prefix,
            external=ext,
            deferred=rng.choice([0, 0, 0, 1, 3]),
            preempt=rng.choice([0] * 7 + [3]),
        )
        s.log(t_stat, api, "stats", stats_msg(version, "4 Engines Aggregated: ", st))
        remember(tally, "aggregated", st)
        pairs: list[tuple[str, object]] = []
        store = rng.randint(300, 5000) * block if rng.random() < 0.9 else 0
        load = rng.randint(20, 1200) * block if (k > 3 and rng.random() < 0.7) else 0
        dirs = [("GPU_to_CPU", store), ("CPU_to_GPU", load)]
        if rng.random() < 0.4:
            dirs.reverse()
        for d, nbytes in dirs:
            if nbytes:
                pairs += [(f"{d}_total_bytes", nbytes), (f"{d}_total_time", nbytes / rng.uniform(15e9, 24e9))]
        if pairs:
            s.log(
                t_stat + 500_000,
                api,
                "kvxfer",
                "KV Transfer metrics: " + ", ".join(f"{a}={b}" for a, b in pairs),
            )
            tally.kv("aggregated", store, load)
        t = t_stat
    st = Stat(0.0, 0.0, 0, 0, 0.0, prefix, ext)
    t += 10 * NS
    s.log(t, api, "stats", stats_msg(version, "4 Engines Aggregated: ", st))
    remember(tally, "aggregated", st)
    body = [
        f"vLLM **{version}**, V1, `--data-parallel-size 4 --tensor-parallel-size 2 "
        "--api-server-count 1 --aggregate-engine-logging` (0.15.1+ would otherwise default "
        "api_server_count to 4 and print no stats at all). One `4 Engines Aggregated: ` line per "
        "interval (32 busy intervals + one `0.0 tokens/s` line): running/waiting summed, KV usage "
        "averaged, `Deferred: N reqs` on some lines (0.20.2+), `Preemptions` on some. "
        "OffloadingConnector via `--kv-transfer-config` (`cpu_bytes_to_use=214748364800`), so "
        "`KV Transfer metrics:` uses the 0.16-0.23 keys `GPU_to_CPU_total_bytes`, "
        "`GPU_to_CPU_total_time`, `CPU_to_GPU_total_bytes`, `CPU_to_GPU_total_time`, first-seen "
        "order (the CPU_to_GPU pair comes first in some intervals), a direction with no transfer is "
        "missing, and intervals with neither have no KV line at all. Startup has the aggregated "
        "`4 Engines: vllm cache_config_info ...` INFO line and the logo.",
    ]
    return plain(s.render()), readme_section(
        "vllm-aggregated.log",
        body,
        tally,
        "engine label: the whole `4 Engines Aggregated` group",
        maker=__name__,
    )


def make() -> list[Made]:
    """The sample and its README section."""
    data, section = aggregated_sample()
    return [Made("vllm-aggregated.log", data, section)]
