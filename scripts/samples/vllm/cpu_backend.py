"""Makes samples/vllm-cpu-backend.log (+ .golden): vLLM 0.9.0's V0 engine on the CPU backend."""

# From 0.9.0 (vllm PR #18674, `engine/llm_engine.py` `_get_stats`, through 0.10.2) the V0 engine on the
# CPU swaps the two columns of its stats lines: the CPU worker (`worker/cpu_worker.py`) reports its
# cache as "GPU" blocks and 0 swap blocks, so the real cache figures print as `CPU KV cache usage` and
# `Prefix cache hit rate: ... CPU: y%`, the GPU column is the empty swap space. The first three stats
# pairs are the PR's own log lines (its comment of 2025-05-25), verbatim.

from __future__ import annotations

import random

from scripts.samples.made import Made
from scripts.samples.vllm.lines import NS, ROUTES
from scripts.samples.vllm.messages import access
from scripts.samples.vllm.readme import Tally, readme_section
from scripts.samples.vllm.server import Server, at, plain

MODEL = "Qwen/Qwen2.5-1.5B-Instruct"
#: vllm PR #18674's log lines after the fix (stats `metrics.py:486`, prefix `metrics.py:502`).
PR_18674 = (
    ("2026-05-25T06:50:29", "15.5", "0.1"),
    ("2026-05-25T06:50:34", "15.3", "0.1"),
    ("2026-05-25T06:50:39", "14.5", "0.2"),
)


def _stats(gen: str, cpu_usage: str, prompt: str = "0.0", running: int = 1) -> str:
    """V0's stats message (`engine/metrics.py` LoggingStatLogger.log, 0.9.0) on the CPU backend."""
    return (
        f"Avg prompt throughput: {prompt} tokens/s, Avg generation throughput: {gen} tokens/s, "
        f"Running: {running} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, "
        f"CPU KV cache usage: {cpu_usage}%."
    )


def _config() -> str:
    """VllmConfig.__str__ of 0.9.0 (`config.py`) for a CPU serve (compilation_config abridged)."""
    return (
        f"model='{MODEL}', speculative_config=None, tokenizer='{MODEL}', skip_tokenizer_init=False, "
        "tokenizer_mode=auto, revision=None, override_neuron_config={}, tokenizer_revision=None, "
        "trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=32768, download_dir=None, "
        "load_format=LoadFormat.AUTO, tensor_parallel_size=1, pipeline_parallel_size=1, "
        "disable_custom_all_reduce=False, quantization=None, enforce_eager=True, kv_cache_dtype=auto,  "
        "device_config=cpu, decoding_config=DecodingConfig(backend='auto', disable_fallback=False, "
        "disable_any_whitespace=False, disable_additional_properties=False, reasoning_backend=''), "
        "observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, "
        "otlp_traces_endpoint=None, collect_detailed_traces=None), seed=None, "
        f"served_model_name={MODEL}, num_scheduler_steps=1, multi_step_stream_outputs=True, "
        "enable_prefix_caching=True, chunked_prefill_enabled=False, use_async_output_proc=False, "
        'pooler_config=None, compilation_config={"level":0,"custom_ops":["none"],"splitting_ops":[],'
        '"use_inductor":true,"compile_sizes":[],"use_cudagraph":true,"cudagraph_num_of_warmups":0,'
        '"cudagraph_capture_sizes":[],"max_capture_size":0}'
    )


def cpu_backend_sample() -> tuple[bytes, str]:
    """The V0 engine of 0.9.0 on the CPU: startup facts, then stats pairs with the cache in the CPU column."""
    version = "0.9.0"
    rng = random.Random(18674)
    s = Server(version, rng)
    tally = Tally()
    t = at("2026-05-25T06:48:41") + 204_000_000
    s.log(t, None, "platform", "Automatically detected platform cpu.")
    t += 2 * NS
    s.log(t, None, "banner", f"vLLM API server version {version}")
    s.log(
        t,
        None,
        "args",
        f"non-default args: {{'model_tag': '{MODEL}', 'model': '{MODEL}', 'enable_prefix_caching': True, "
        "'disable_log_requests': True}",
    )
    t += 3 * NS
    s.log(
        t,
        None,
        "v0fallback",
        "device type=cpu is not supported by the V1 Engine. Falling back to V0. ",
        level="WARNING",
    )
    s.log(
        t,
        None,
        "kvspace",
        "Environment variable VLLM_CPU_KVCACHE_SPACE (GiB) for CPU backend is not set, using 4 by default.",
        level="WARNING",
    )
    s.log(t + NS, None, "engine_pid", "Started engine process with PID 112")
    t += 4 * NS
    s.log(t, None, "platform", "Automatically detected platform cpu.")
    t += 2 * NS
    s.log(
        t,
        None,
        "init",
        f"Initializing a V0 LLM engine (v{version}) with config: {_config()}, use_cached_outputs=True, ",
    )
    t += NS
    s.log(t, None, "sdpa", "Using Torch SDPA backend.")
    t += 9 * NS
    # 4 GiB / (16 tokens x 28 layers x 2 (K, V) x 2 KV heads x 128 x 2 bytes) = 9362 blocks
    s.log(t, None, "blocks", "# cpu blocks: 9362, # CPU blocks: 0")
    s.log(t, None, "maxconc", "Maximum concurrency for 32768 tokens per request: 4.57x")
    s.log(t, None, "initeng", "init engine (profile, create kv cache, warmup model) took 1.87 seconds")
    tally.facts.append("platform cpu (`Automatically detected platform cpu.`, twice: front end and engine)")
    tally.facts.append("device_config=cpu in `Initializing a V0 LLM engine (v0.9.0)`; `# cpu blocks: 9362`")
    t += NS
    s.log(t, None, "starting", "Starting vLLM API server on http://0.0.0.0:8000")
    s.log(t, None, "routes", "Available routes are:")
    for path, methods in ROUTES:
        s.log(t, None, "route", f"Route: {path}, Methods: {methods}")
    s.raw(t, None, "INFO:     Started server process [1]\n", "stderr")
    s.raw(t, None, "INFO:     Waiting for application startup.\n", "stderr")
    s.raw(t, None, "INFO:     Application startup complete.\n", "stderr")
    for stamp, gen, usage in PR_18674:
        step = at(stamp) + 611_000_000
        s.log(step, None, "stats", _stats(gen, usage))
        s.log(step, None, "prefix", "Prefix cache hit rate: GPU: 0.00%, CPU: 90.00%")
        tally.stat("0", {"kv_usage(CPU column)": f"{usage}%", "prefix(CPU column)": "90.00%"})
        s.raw(step + 2 * NS, None, access(rng, "/v1/completions", client="127.0.0.1:49294"))
    # Then the same repeated prompt goes on (generated, same format): one request at a time, its
    # prefix found in the cache nine times out of ten, the cache filling by a block now and then.
    step, usage_blocks = at("2026-05-25T06:50:39") + 611_000_000, 19
    for k in range(24):
        step += 5 * NS + rng.randrange(2_000_000, 9_000_000)
        prompt = f"{rng.uniform(900.0, 1100.0):.1f}" if k % 6 == 5 else "0.0"
        usage_blocks += rng.choice([0, 0, 1, 2])
        usage = f"{usage_blocks / 9362 * 100:.1f}"
        s.log(step, None, "stats", _stats(f"{rng.uniform(14.0, 15.9):.1f}", usage, prompt))
        s.log(step, None, "prefix", "Prefix cache hit rate: GPU: 0.00%, CPU: 90.00%")
        tally.stat("0", {"kv_usage(CPU column)": f"{usage}%", "prefix(CPU column)": "90.00%"})
        if k % 6 == 5:
            s.raw(step - 3 * NS, None, access(rng, "/v1/completions", client="127.0.0.1:49294"))
    body = [
        f"vLLM **{version}**, V0 engine on the **CPU backend** (`vllm serve {MODEL}` with prefix "
        "caching, `VLLM_CPU_KVCACHE_SPACE` unset: 4 GiB of cache). V1 does not run on the CPU in "
        "0.9.0 (`device type=cpu is not supported by the V1 Engine. Falling back to V0.`). The startup "
        "says where the engine runs three times: `[__init__.py:243] Automatically detected platform "
        "cpu.` (vllm/platforms/__init__.py, in the front end and again in the engine process), "
        "`device_config=cpu` in `Initializing a V0 LLM engine (v0.9.0) with config: ...` "
        "(VllmConfig.__str__, config.py) and `# cpu blocks: 9362, # CPU blocks: 0` "
        "(executor/executor_base.py). From 0.9.0 to 0.10.2 the V0 `_get_stats` "
        "(engine/llm_engine.py, vllm PR #18674) swaps the GPU and CPU figures when "
        '`device_config.device_type == "cpu"`, because the CPU worker reports its cache as GPU '
        "blocks: the engine's KV cache usage and prefix cache hit rate print in the **CPU column**, "
        "the GPU column is the swap space (0 blocks, always 0.0%). 0.8.5 and older print them in the "
        "GPU column. The first three stats pairs (`[metrics.py:486]` / `[metrics.py:502]`, "
        "05-25 06:50:29-39) are the PR's own log lines, verbatim; 24 more at ~5 s follow in the "
        "same format (generated). The log ends while the server still serves (no idle line).",
    ]
    return plain(s.render()), readme_section(
        "vllm-cpu-backend.log", body, tally, "stats records: 27 pairs", maker=__name__
    )


def make() -> list[Made]:
    """The sample and its README section."""
    data, section = cpu_backend_sample()
    return [Made("vllm-cpu-backend.log", data, section)]
