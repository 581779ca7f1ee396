"""A V1 server's startup records, its request traffic and its config reprs."""

from __future__ import annotations

from dataclasses import dataclass

from scripts.samples.vllm.lines import LINES, LOGO, NS, ROUTES
from scripts.samples.vllm.messages import access, params_repr, tqdm_bar
from scripts.samples.vllm.readme import Tally
from scripts.samples.vllm.server import Server, fuuid

# Every format string, `file:line`, process prefix and colour rule here was read from the PyPI wheel of
# the version a sample claims (`pip download vllm==X --no-deps`; see samples/README.vllm.md).


@dataclass
class Setup:
    """What a V1 server was started with and where its processes live."""

    model: str
    served: str
    args: str
    config: str
    kv_tokens: int
    max_len: int
    conc: float
    kv_gib: str
    engines: list[tuple[str, int]]
    workers: list[list[tuple[str, int]]]
    connector: str | None = None
    eagle: str | None = None
    shards: int = 4
    arch: str = "Qwen3ForCausalLM"
    engine_id: str = ""


def startup(s: Server, t: int, cfg: Setup, tally: Tally) -> int:
    """The startup records of a V1 server from the API server's first line to 'startup complete'."""
    api = ("APIServer", 1)
    sec = NS
    if s.v < (0, 15):
        s.log(t, api, "banner", f"vLLM API server version {s.version}")
    else:
        s.log(t, api, "logo", LOGO % (s.version, cfg.model))  # args.model, not the served name
    s.log(t, api, "args", f"non-default args: {cfg.args}")
    t += 6 * sec + 412_000_000
    s.log(t, api, "arch", f"Resolved architecture: {cfg.arch}")
    s.log(t, api, "maxlen", f"Using max model len {cfg.max_len}")
    s.log(t, api, "chunked", "Chunked prefill is enabled with max_num_batched_tokens=8192.")
    t += 2 * sec
    for k, eng in enumerate(cfg.engines):
        if k == 0:
            s.log(t, eng, "init", f"Initializing a V1 LLM engine (v{s.version}) with config: {cfg.config}")
    t += 9 * sec
    engine_id = cfg.engine_id or fuuid(s.rng)
    if cfg.connector:
        for workers in cfg.workers:
            for w in workers:
                s.log(
                    t,
                    w,
                    "kvbase",
                    "Initializing KVConnectorBase_V1. This API is experimental and "
                    "subject to change in the future as we iterate the design.",
                    level="WARNING",
                )
                s.log(
                    t,
                    w,
                    "connector",
                    f"Creating v1 connector with name: {cfg.connector} and engine_id: {engine_id}",
                )
                if cfg.connector == "OffloadingConnector":
                    s.log(t, w, "offspec", "Creating offloading spec with name: CPUOffloadingSpec")
                    if "offspec_warn" in LINES[s.version]:
                        s.log(
                            t,
                            w,
                            "offspec_warn",
                            "Initializing OffloadingSpec. This API is "
                            "experimental and subject to change in the future as we iterate the "
                            "design.",
                            level="WARNING",
                        )
        tally.facts.append(f"connector {cfg.connector}, engine_id {engine_id}")
    t += 3 * sec
    for workers in cfg.workers[:1]:  # tqdm only on global rank 0
        w0 = workers[0]
        for off, text in tqdm_bar(cfg.shards, cfg.shards * 1.83):
            s.raw(t + int(off * sec), w0, text, stream="stderr")
    t += int(cfg.shards * 1.83 * sec) + sec
    for workers in cfg.workers:
        w0 = workers[0]
        s.log(t, w0, "weights", f"Loading weights took {cfg.shards * 1.83 + 0.41:.2f} seconds")
        gib = cfg.shards * 7.61
        size = str(round(gib, 2)) if s.v >= (0, 20) else f"{gib:.4f}"  # format_gib() from 0.20
        s.log(
            t,
            w0,
            "modelload",
            f"Model loading took {size} GiB memory and {cfg.shards * 1.83 + 3.2:.6f} seconds",
        )
    t += 41 * sec
    for workers in cfg.workers:
        s.log(t, workers[0], "kvmem", f"Available KV cache memory: {cfg.kv_gib} GiB")
    for eng in cfg.engines:
        if s.v >= (0, 33):
            s.log(
                t,
                eng,
                "kvsize",
                f"GPU KV cache size: {cfg.kv_tokens:,} tokens, Maximum "
                f"concurrency for {cfg.max_len:,} tokens per request: {cfg.conc:.2f}x",
            )
        else:
            s.log(t, eng, "kvsize", f"GPU KV cache size: {cfg.kv_tokens:,} tokens")
            s.log(
                t,
                eng,
                "maxconc",
                f"Maximum concurrency for {cfg.max_len:,} tokens per request: {cfg.conc:.2f}x",
            )
    tally.facts.append(
        f"GPU KV cache size {cfg.kv_tokens:,} tokens per engine "
        f"({len(cfg.engines)} engine(s)), max concurrency {cfg.conc:.2f}x"
    )
    if cfg.connector == "OffloadingConnector":
        for workers in cfg.workers:
            for w in workers:
                s.log(t + sec // 3, w, "cputensors", f"Allocating {2 * 64} CPU tensors...")
    t += 18 * sec
    for workers in cfg.workers:
        s.log(t, workers[0], "graphs", "Graph capturing finished in 11 secs, took 0.74 GiB")
    t += sec
    for eng in cfg.engines:
        if s.v >= (0, 20):
            s.log(
                t,
                eng,
                "initeng",
                "init engine (profile, create kv cache, warmup model) took 96.41 s (compilation: 31.87 s)",
            )
        else:
            s.log(
                t, eng, "initeng", "init engine (profile, create kv cache, warmup model) took 96.41 seconds"
            )
        if cfg.connector:
            s.log(
                t,
                eng,
                "kvbase",
                "Initializing KVConnectorBase_V1. This API is experimental and "
                "subject to change in the future as we iterate the design.",
                level="WARNING",
            )
            s.log(
                t,
                eng,
                "connector",
                f"Creating v1 connector with name: {cfg.connector} and engine_id: {engine_id}",
            )
        if cfg.eagle:
            # 0.24-0.33 explain the exclusion; 0.34 prints only the detection (offloading/scheduler.py)
            tail = (
                ""
                if s.v >= (0, 34)
                else " The trailing chunk of these groups will be excluded from offloading due to volatility."
            )
            s.log(
                t,
                eng,
                "eagle",
                f"KV offloading: EAGLE/MTP draft attention groups {cfg.eagle} detected.{tail}",
            )
            tally.facts.append(f"EAGLE/MTP draft attention groups {cfg.eagle} startup line")
    t += 2 * sec
    if "cacheinfo" in LINES[s.version]:
        s.log(
            t,
            api,
            "cacheinfo",
            f"{len(cfg.engines)} Engines: vllm cache_config_info with "
            f"initialization after num_gpu_blocks is: {cfg.kv_tokens // 16}",
        )
    s.log(t, api, "tasks", "Supported tasks: ['generate']")
    if s.v < (0, 18):
        s.log(t, api, "starting", "Starting vLLM API server 0 on http://0.0.0.0:8000")
    else:
        s.log(t, api, "starting", "Starting vLLM server on http://0.0.0.0:8000")
    s.log(t, api, "routes", "Available routes are:")
    for path, methods in ROUTES:
        s.log(t, api, "route", f"Route: {path}, Methods: {methods}")
    up = api if s.v < (0, 31) else None
    t += 80_000_000
    s.raw(t, up, "INFO:     Started server process [1]\n", "stderr")
    s.raw(t, up, "INFO:     Waiting for application startup.\n", "stderr")
    s.raw(t + 2_000_000, up, "INFO:     Application startup complete.\n", "stderr")
    return t + 5 * sec


def traffic(
    s: Server, t0: int, secs: int, rate: float, *, log_requests: bool, chat_share: float = 0.9
) -> None:
    """Access lines (and request-log lines) spread over [t0, t0+secs)."""
    api = ("APIServer", 1)
    up = api if s.v < (0, 31) else None
    n = max(1, int(secs * rate * s.rng.uniform(0.7, 1.3)))
    for _ in range(n):
        t = t0 + s.rng.randrange(secs * NS)
        if log_requests:
            rid = f"chatcmpl-{s.rng.getrandbits(64):016x}"
            where = s.where("received")
            s.log(
                t,
                api,
                "received",
                f"Received request {rid}: params: {params_repr(s.version, s.rng)}, lora_request: None.",
                where=where,
            )
        path = "/v1/chat/completions" if s.rng.random() < chat_share else "/v1/completions"
        s.raw(t + s.rng.randrange(40_000_000, 900_000_000), up, access(s.rng, path))
    scrapes(s, t0, secs)


def scrapes(s: Server, t0: int, secs: int) -> None:
    """Prometheus keeps scraping /metrics while the engine is idle."""
    up = ("APIServer", 1) if s.v < (0, 31) else None
    for k in range(0, secs, 15):
        s.raw(t0 + k * NS + 313_000_000, up, access(s.rng, "/metrics", "GET", "172.17.0.9:46210"))


def kvtc(engine_id: str, extra: str) -> str:
    """KVTransferConfig repr of 0.26 (fields in dataclass order)."""
    return (
        f"KVTransferConfig(kv_connector='OffloadingConnector', engine_id='{engine_id}', "
        "kv_buffer_device='cuda', kv_buffer_size=1000000000.0, kv_role='kv_both', kv_rank=None, "
        f"kv_parallel_size=1, kv_ip='127.0.0.1', kv_port=14579, kv_connector_extra_config={extra}, "
        "kv_connector_module_path=None, enable_permute_local_kv=False, kv_load_failure_policy='fail')"
    )


def vllm_config(model: str, served: str, *, max_len: int, tp: int, dp: int, spec: str = "None") -> str:
    """VllmConfig.__str__ (abridged to the fields every version prints, in its order)."""
    return (
        f"model='{model}', speculative_config={spec}, tokenizer='{model}', "
        "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, "
        f"trust_remote_code=True, dtype=torch.bfloat16, max_seq_len={max_len}, "
        "download_dir=None, load_format=auto, "
        f"tensor_parallel_size={tp}, pipeline_parallel_size=1, data_parallel_size={dp}, "
        "disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
        "kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig("
        "backend='auto', disable_fallback=False, disable_any_whitespace=False, "
        "disable_additional_properties=False, reasoning_parser=''), observability_config="
        "ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, "
        f"collect_detailed_traces=None), seed=0, served_model_name={served}, "
        f"enable_prefix_caching=True, enable_chunked_prefill=True, pooler_config=None, "
        "compilation_config={'level': None, 'mode': 3, 'debug_dump_path': None, 'cache_dir': '', "
        "'backend': 'inductor', 'custom_ops': ['none'], 'splitting_ops': "
        "['vllm::unified_attention', 'vllm::unified_attention_with_output', "
        "'vllm::unified_mla_attention', 'vllm::unified_mla_attention_with_output', "
        "'vllm::mamba_mixer2', 'vllm::mamba_mixer', 'vllm::short_conv', 'vllm::linear_attention', "
        "'vllm::plamo2_mamba_mixer', 'vllm::gdn_attention_core', 'vllm::kda_attention', "
        "'vllm::sparse_attn_indexer'], 'use_inductor_graph_partition': False, "
        "'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, "
        "'cudagraph_capture_sizes': [512, 496, 480, 464, 448, 432, 416, 400, 384, 368, 352, 336, "
        "320, 304, 288, 272, 256, 240, 224, 208, 192, 176, 160, 144, 128, 112, 96, 80, 64, 56, 48, "
        "40, 32, 24, 16, 8, 4, 2, 1], 'max_cudagraph_capture_size': 512, 'pass_config': "
        "{'fuse_norm_quant': False, 'fuse_act_quant': False, 'fuse_attn_quant': False, "
        "'eliminate_noops': True, 'enable_sp': False, 'fuse_gemm_comms': False, "
        "'fuse_allreduce_rms': False}, 'local_cache_dir': None}"
    )
