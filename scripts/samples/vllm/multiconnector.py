"""Makes samples/vllm-multiconnector.log (+ .golden): vLLM 0.33.0 MultiConnector, no Prefix."""

from __future__ import annotations

import random

from scripts.samples.made import Made
from scripts.samples.vllm.lines import LOGO, NS
from scripts.samples.vllm.messages import Stat, stats_msg, walk
from scripts.samples.vllm.readme import Tally, readme_section, remember
from scripts.samples.vllm.server import Server, at, fuuid, plain
from scripts.samples.vllm.startup import traffic


def multiconnector_sample() -> tuple[bytes, str]:
    """Extra: MultiConnector (OffloadingConnector with fs tier + NixlConnector) on 0.33.0."""
    version = "0.33.0"
    rng = random.Random(8008)
    s = Server(version, rng)
    tally = Tally()
    model = "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8"
    api = ("APIServer", 1)
    eid = fuuid(rng)
    t = at("2026-11-04T13:30:00") + 250_000_000
    s.log(t, api, "logo", LOGO % (version, "qwen3-coder"))
    s.log(
        t,
        api,
        "args",
        f"non-default args: {{'model_tag': '{model}', 'model': '{model}', "
        "'served_model_name': ['qwen3-coder'], 'tensor_parallel_size': 8, "
        "'enable_prefix_caching': False, 'kv_transfer_config': KVTransferConfig(kv_connector="
        f"'MultiConnector', engine_id='{eid}', kv_buffer_device='cuda', kv_buffer_size="
        "1000000000.0, kv_role='kv_consumer', kv_rank=None, kv_parallel_size=1, kv_ip="
        "'127.0.0.1', kv_port=14579, kv_connector_extra_config={'connectors': [{'kv_connector': "
        "'NixlConnector', 'kv_role': 'kv_consumer'}, {'kv_connector': 'OffloadingConnector', "
        "'kv_role': 'kv_both', 'kv_connector_extra_config': {'cpu_bytes_to_use': 137438953472, "
        "'secondary_tiers': [{'type': 'fs', 'path': '/mnt/kvcache'}]}}]}, "
        "kv_connector_module_path=None, enable_permute_local_kv=False, "
        "kv_load_failure_policy='fail')}",
    )
    s.log(
        t + 40 * NS,
        ("EngineCore", 91),
        "connector",
        f"Creating v1 connector with name: MultiConnector and engine_id: {eid}",
    )
    s.log(
        t + 95 * NS,
        ("EngineCore", 91),
        "kvsize",
        "GPU KV cache size: 2,093,056 tokens, Maximum concurrency for 262,144 tokens per request: 7.98x",
    )
    tally.facts.append(
        "connector MultiConnector (NixlConnector + OffloadingConnector), GPU KV cache size 2,093,056 tokens"
    )
    t += 130 * NS
    ext = 20.0
    for _ in range(8):
        t_stat = t + 10 * NS
        traffic(s, t, 10, 0.5, log_requests=False)
        ext = walk(rng, ext + 2.0, 0.0, 60.0, 4.0)
        fetch = (rng.randint(0, 4), rng.randint(1, 5), rng.randint(0, 2))
        st = Stat(
            prompt=rng.uniform(50, 400),
            gen=rng.uniform(900, 3000),
            running=rng.randint(10, 40),
            waiting=sum(fetch),
            kv=rng.uniform(20, 50),
            prefix=None,
            external=ext,
            fetch=fetch,
        )
        s.log(t_stat, api, "stats", stats_msg(version, "Engine 000: ", st))
        remember(tally, "0", st)
        store = rng.randint(50, 400) * 1179648
        read = rng.randint(10, 300) * 1179648
        n = rng.randint(2, 9)
        xfer = [rng.uniform(0.004, 0.03) for _ in range(n)]
        mb = sum(rng.randint(200, 900) for _ in range(n)) * 1.0
        off = {
            "vllm:kv_offload_store_bytes": store,
            "vllm:kv_offload_store_time": store / rng.uniform(18e9, 23e9),
            "vllm:kv_offload_tiering_read_bytes:('1:fs',)": read,
            "vllm:kv_offload_tiering_read_time:('1:fs',)": read / rng.uniform(2e9, 6e9),
            "vllm:kv_offload_tiering_promotion_latency_seconds:('1:fs', 'success')_count": 3,
            "vllm:kv_offload_tiering_promotion_latency_seconds:('1:fs', 'success')_sum": rng.uniform(
                0.05, 0.4
            ),
            "vllm:kv_offload_cpu_cache_usage_perc": rng.uniform(0.001, 0.02),
        }
        nixl = (
            f"{{'Num successful transfers': {n}, "
            f"'Avg xfer time (ms)': np.float64({round(sum(xfer) / n * 1e3, 3)}), "
            f"'P90 xfer time (ms)': {round(max(xfer) * 1e3, 3)}, "
            f"'Avg post time (ms)': np.float64({round(rng.uniform(0.05, 0.4), 3)}), "
            f"'P90 post time (ms)': {round(rng.uniform(0.4, 0.9), 3)}, "
            f"'Avg MB per transfer': np.float64({round(mb / n, 3)}), "
            f"'Throughput (MB/s)': np.float64({round(mb / sum(xfer), 3)}), "
            f"'Avg number of descriptors': np.float64({round(rng.uniform(300, 2000), 1)})}}"
        )
        s.log(
            t_stat + 600_000,
            api,
            "kvxfer",
            f"KV Transfer metrics: NixlConnector={nixl}, OffloadingConnector={off!r}",
        )
        tally.kv("0", store, 0)
        t = t_stat
    body = [
        f"vLLM **{version}**, a P/D decode instance: `MultiConnector` = NixlConnector "
        "(`kv_consumer`) + OffloadingConnector with an `fs` secondary tier, "
        "`--no-enable-prefix-caching` (connectors still hash blocks), so the 0.31+ stats line "
        "**leaves Prefix out** and carries `KV fetch: ...` and `External prefix cache hit rate`. "
        "8 busy intervals, each with `KV Transfer metrics: NixlConnector={...}, "
        "OffloadingConnector={...}` (MultiConnector's nested `reduce()`; connector order = "
        "first-seen). Nixl's averages are numpy scalars and print as `np.float64(...)` "
        "(numpy 2 repr; the P90 values are plain floats via `.item()`). The Offloading dict holds "
        "labelled 0.33 tiering keys `vllm:kv_offload_tiering_read_bytes:('1:fs',)` (the tier label "
        'is `f"{idx + 1}:{type}"`, see `tiering/metrics.py`) and a two-label histogram key '
        "containing `', '`. Abridged startup (logo, non-default args, connector, KV size). "
        "The line ends where the traffic ends (no idle line).",
    ]
    return plain(s.render()), readme_section(
        "vllm-multiconnector.log",
        body,
        tally,
        "store bytes are `vllm:kv_offload_store_bytes` inside OffloadingConnector={...}; "
        "no `vllm:kv_offload_load_bytes` (reads come from the fs tier: tiering_read_bytes)",
        maker=__name__,
    )


def make() -> list[Made]:
    """The sample and its README section."""
    data, section = multiconnector_sample()
    return [Made("vllm-multiconnector.log", data, section)]
