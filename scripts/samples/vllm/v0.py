"""Makes samples/vllm-v0.log (+ .golden): vLLM 0.6.6's V0 engine, two-record stats, across midnight."""

from __future__ import annotations

import random

from scripts.samples.made import Made
from scripts.samples.vllm.lines import NS, ROUTES
from scripts.samples.vllm.messages import access, params_repr, tqdm_bar, walk
from scripts.samples.vllm.readme import Tally, readme_section
from scripts.samples.vllm.server import Server, at, plain


def v0_sample() -> tuple[bytes, str]:
    """The V0 engine of 0.6.6 with the two-record stats and irregular spacing."""
    version = "0.6.6"
    rng = random.Random(5005)
    s = Server(version, rng)
    tally = Tally()
    model = "meta-llama/Llama-3.1-8B-Instruct"
    t = at("2026-12-20T23:51:02") + 331_000_000
    s.log(t, None, "banner", f"vLLM API server version {version}")
    s.log(
        t,
        None,
        "args",
        "args: Namespace(subparser='serve', model_tag='" + model + "', "
        "config='', host=None, port=8000, uvicorn_log_level='info', allow_credentials=False, "
        "allowed_origins=['*'], allowed_methods=['*'], allowed_headers=['*'], api_key=None, "
        "lora_modules=None, prompt_adapters=None, chat_template=None, chat_template_content_format"
        "='auto', response_role='assistant', ssl_keyfile=None, ssl_certfile=None, "
        "ssl_ca_certs=None, ssl_cert_reqs=0, root_path=None, middleware=[], return_tokens_as_"
        "token_ids=False, disable_frontend_multiprocessing=False, enable_request_id_headers="
        "False, enable_auto_tool_choice=False, tool_call_parser=None, tool_parser_plugin='', "
        f"model='{model}', task='auto', tokenizer=None, skip_tokenizer_init=False, revision=None, "
        "code_revision=None, tokenizer_revision=None, tokenizer_mode='auto', trust_remote_code="
        "False, allowed_local_media_path=None, download_dir=None, load_format='auto', "
        "config_format=<ConfigFormat.AUTO: 'auto'>, dtype='auto', kv_cache_dtype='auto', "
        "quantization_param_path=None, max_model_len=32768, guided_decoding_backend='xgrammar', "
        "distributed_executor_backend=None, worker_use_ray=False, pipeline_parallel_size=1, "
        "tensor_parallel_size=1, max_parallel_loading_workers=None, ray_workers_use_nsight=False, "
        "block_size=None, enable_prefix_caching=True, disable_sliding_window=False, "
        "use_v2_block_manager=True, num_lookahead_slots=0, seed=0, swap_space=4, "
        "cpu_offload_gb=0, gpu_memory_utilization=0.9, num_gpu_blocks_override=None, "
        "max_num_batched_tokens=None, max_num_seqs=None, max_logprobs=20, disable_log_stats="
        "False, quantization=None, rope_scaling=None, rope_theta=None, hf_overrides=None, "
        "enforce_eager=False, max_seq_len_to_capture=8192, disable_custom_all_reduce=False, "
        "served_model_name=['llama-3.1-8b'], disable_log_requests=False, max_log_len=32, "
        "disable_fastapi_docs=False, enable_prompt_tokens_details=False, "
        "dispatch_function=<function serve at 0x7f3b2c1a5e40>)",
    )
    s.log(t + 2 * NS, None, "engine_pid", "Started engine process with PID 77")
    t += 9 * NS
    s.log(
        t,
        None,
        "init",
        f"Initializing an LLM engine (v{version}) with config: model='{model}', "
        "speculative_config=None, tokenizer='" + model + "', skip_tokenizer_init=False, "
        "tokenizer_mode=auto, revision=None, override_neuron_config=None, tokenizer_revision=None, "
        "trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=32768, download_dir=None, "
        "load_format=LoadFormat.AUTO, tensor_parallel_size=1, pipeline_parallel_size=1, "
        "disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
        "kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, "
        "decoding_config=DecodingConfig(guided_decoding_backend='xgrammar'), observability_config="
        "ObservabilityConfig(otlp_traces_endpoint=None, collect_model_forward_time=False, "
        "collect_model_execute_time=False), seed=0, served_model_name=llama-3.1-8b, "
        "num_scheduler_steps=1, multi_step_stream_outputs=True, enable_prefix_caching=True, "
        "chunked_prefill_enabled=False, use_async_output_proc=True, disable_mm_preprocessor_cache="
        'False, mm_processor_kwargs=None, pooler_config=None, compilation_config={"splitting_ops'
        '":["vllm.unified_attention","vllm.unified_attention_with_output"],"candidate_'
        'compile_sizes":[],"compile_sizes":[],"capture_sizes":[256,248,240,232,224,216,208,'
        "200,192,184,176,168,160,152,144,136,128,120,112,104,96,88,80,72,64,56,48,40,32,24,16,8,4,"
        '2,1],"max_capture_size":256}, use_cached_outputs=True, ',
    )
    t += 3 * NS
    s.log(t, None, "load_start", f"Starting to load model {model}...")
    for off, text in tqdm_bar(4, 5.2):
        s.raw(t + int(off * NS), None, text, "stderr")
    t += 6 * NS
    s.log(t, None, "weights", "Loading model weights took 14.9889 GB")
    t += 2 * NS
    s.log(
        t,
        None,
        "profile",
        "Memory profiling takes 1.83 seconds\nthe current vLLM instance can "
        "use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB\nmodel "
        "weights take 14.99GiB; non_torch_memory takes 0.21GiB; PyTorch activation peak memory "
        "takes 1.22GiB; the rest of the memory reserved for KV Cache is 55.05GiB.",
    )
    s.log(t, None, "blocks", "# GPU blocks: 28185, # CPU blocks: 2048")
    s.log(t, None, "maxconc", "Maximum concurrency for 32768 tokens per request: 13.76x")
    tally.facts.append(
        "# GPU blocks: 28185 (16-token blocks = 450,960 tokens), max concurrency 13.76x, prefix caching on"
    )
    t += NS
    s.log(
        t,
        None,
        "capture",
        "Capturing cudagraphs for decoding. This may lead to unexpected "
        "consequences if the model is not static. To run the model in eager mode, set "
        "'enforce_eager=True' or use '--enforce-eager' in the CLI. If out-of-memory error occurs "
        "during cudagraph capture, consider decreasing `gpu_memory_utilization` or switching to "
        "eager mode. You can also reduce the `max_num_seqs` as needed to decrease memory usage.",
    )
    t += 14 * NS
    s.log(t, None, "graphs", "Graph capturing finished in 14 secs, took 0.85 GiB")
    s.log(t, None, "initeng", "init engine (profile, create kv cache, warmup model) took 17.82 seconds")
    t += NS
    s.log(t, None, "routes", "Available routes are:")
    for path, methods in ROUTES[:12]:
        s.log(t, None, "route", f"Route: {path}, Methods: {methods}")
    s.raw(t, None, "INFO:     Started server process [1]\n", "stderr")
    s.raw(t, None, "INFO:     Waiting for application startup.\n", "stderr")
    s.raw(t, None, "INFO:     Application startup complete.\n", "stderr")
    s.raw(t, None, "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n", "stderr")
    t += 95 * NS
    gpu_hit, kvu, last = 0.0, 3.0, t
    prompts = [
        "You are a helpful assistant. Summarize the following support ticket in two se",
        "Translate to German: The quarterly report shows a steady increase in recurr",
        'def parse_config(path: str) -> dict:\n    """Load the YAML file at path and',
    ]
    for k in range(120):
        t_step = last + int(rng.uniform(5.0, 9.8) * NS)
        for _ in range(rng.choice([0, 1, 1, 2])):
            tr = last + rng.randrange(t_step - last)
            rid = f"chatcmpl-{rng.getrandbits(128):032x}"
            prompt = rng.choice(prompts)[:32]
            s.log(
                tr,
                None,
                "received",
                f"Received request {rid}: prompt: {prompt!r}, params: "
                f"{params_repr(version, rng)}, prompt_token_ids: "
                f"{[128000, 128006, 9125, 128007, 271] + [rng.randrange(200, 90000) for _ in range(27)]}"
                ", lora_request: None, prompt_adapter_request: None.",
            )
            s.raw(tr + 3_000_000, None, access(rng))
            s.log(tr + 4_000_000, None, "added", f"Added request {rid}.")
        gpu_hit = walk(rng, gpu_hit + 0.9 if k < 30 else gpu_hit + 0.05, 0.0, 83.0, 1.2)
        kvu = walk(rng, kvu, 1.0, 64.0, 4.0)
        s.log(
            t_step,
            None,
            "stats",
            f"Avg prompt throughput: {rng.uniform(300, 4200):.1f} tokens/s, "
            f"Avg generation throughput: {rng.uniform(60, 900):.1f} tokens/s, Running: "
            f"{rng.randint(1, 22)} reqs, Swapped: 0 reqs, Pending: {rng.choice([0, 0, 0, 1, 2])} "
            f"reqs, GPU KV cache usage: {kvu:.1f}%, CPU KV cache usage: 0.0%.",
        )
        s.log(t_step, None, "prefix", f"Prefix cache hit rate: GPU: {gpu_hit:.2f}%, CPU: 0.00%")
        tally.stat("0", {"kv_usage": f"{kvu:.1f}%", "prefix(GPU)": f"{gpu_hit:.2f}%", "cpu_prefix": "0.00%"})
        last = t_step
    t_idle = last + 10 * NS + 2_000_000
    s.log(
        t_idle,
        None,
        "stats",
        "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
        "0.0 tokens/s, Running: 0 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: "
        "0.0%, CPU KV cache usage: 0.0%.",
    )
    s.log(t_idle, None, "prefix", f"Prefix cache hit rate: GPU: {gpu_hit:.2f}%, CPU: 0.00%")
    tally.stat("0", {"kv_usage": "0.0%", "prefix(GPU)": f"{gpu_hit:.2f}%", "cpu_prefix": "0.00%"})
    body = [
        f"vLLM **{version}**, V0 engine (multiprocessing front end; no process prefix, old header "
        "`INFO 12-20 23:51:02 api_server.py:712] ` without `[`). Each stats interval is two "
        "records: `metrics.py:467] Avg prompt throughput: ... Swapped: ... Pending: ..., GPU KV "
        "cache usage: x%, CPU KV cache usage: 0.0%.` and `metrics.py:483] Prefix cache hit rate: "
        "GPU: x%, CPU: 0.00%` (two decimals). Spacing is irregular, 5.0-9.8 s (the V0 engine logs "
        "from its step loop, at most every 5 s). Traffic starts 12-20 23:53 and crosses midnight to "
        "12-21 00:08; one `0.0 tokens/s` pair closes it (10 s later, from the idle poll loop). "
        "Request logging is V0's default: `Received request ...: prompt: '...', params: "
        "SamplingParams(...), prompt_token_ids: [...]` (`--max-log-len 32`) and `Added request`. "
        "The `Memory profiling takes ...` startup record is a `\\r\\n` multi-line record; the "
        "tqdm bar lines begin with a lone `\\r`; uvicorn prints `Uvicorn running on ...`.",
    ]
    return plain(s.render()), readme_section(
        "vllm-v0.log", body, tally, "stats records: 121 pairs (120 busy + 1 idle)", maker=__name__
    )


def make() -> list[Made]:
    """The sample and its README section."""
    data, section = v0_sample()
    return [Made("vllm-v0.log", data, section)]
