# ruff: noqa: PLR0917, E501 - the format strings and arguments as the upstream f-strings have them
"""SGLang's log lines, built from the format strings of the released packages (sglang on PyPI).

Each function names the version and file its f-string comes from; samples/README.sglang.md lists them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass


def stamp(t: float, dated: bool = True, ms: bool = False) -> str:
    """asctime as configure_logger's datefmt prints it (UTC here): `%Y-%m-%d %H:%M:%S` or `%H:%M:%S`."""
    text = time.strftime("%Y-%m-%d %H:%M:%S" if dated else "%H:%M:%S", time.gmtime(t))
    return text + (f".{int(t * 1000) % 1000:03d}" if ms else "")


def line(t: float, message: str, ranks: str = "", dated: bool = True, ms: bool = False) -> str:
    """`[%(asctime)s{maybe_ms}{prefix}] %(message)s` (srt/utils.py configure_logger, 0.2.14+)."""
    return f"[{stamp(t, dated, ms)}{ranks}] {message}"


def access(path: str = "/v1/chat/completions", status: str = "200 OK", port: int = 40262) -> str:
    """uvicorn's access line (its default `%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s`)."""
    return f'INFO:     127.0.0.1:{port} - "POST {path} HTTP/1.1" {status}'


@dataclass
class Batch:
    """What one prefill batch prints (the values; each version formats them its own way)."""

    seqs: int
    new: int
    cached: int
    running: int
    queued: int
    usage: float
    rate: float = 0.0  # cumulative cache hit rate (<= 0.4.3)


def fill_0_1_14(b: Batch) -> str:
    """0.1.14 srt/managers/router/model_rpc.py:376."""
    return (
        f"new fill batch. #seq: {b.seqs}. #cached_token: {b.cached}. #new_token: {b.new}. "
        f"#remaining_req: {b.queued}. #running_req: {b.running}. tree_cache_hit_rate: {100.0 * b.rate:.2f}%."
    )


def decode_0_1_14(running: int, used: int, usage: float, queued: int) -> str:
    """0.1.14 srt/managers/router/model_rpc.py:226 (no "Decode batch" word)."""
    return f"#running-req: {running}, #token: {used}, token usage: {usage:.2f}, #queue-req: {queued}"


def prefill_0_2_5(b: Batch, gpu: int = 0) -> str:
    """0.2.5 srt/managers/controller/tp_worker.py:416."""
    return (
        f"[gpu_id={gpu}] Prefill batch. #new-seq: {b.seqs}, #new-token: {b.new}, #cached-token: {b.cached}, "
        f"cache hit rate: {100.0 * b.rate:.2f}%, #running-req: {b.running}, #queue-req: {b.queued}"
    )


def decode_0_2_5(running: int, used: int, usage: float, tps: float, queued: int, gpu: int = 0) -> str:
    """0.2.5 srt/managers/controller/tp_worker.py:240."""
    return (
        f"[gpu_id={gpu}] Decode batch. #running-req: {running}, #token: {used}, token usage: {usage:.2f}, "
        f"gen throughput (token/s): {tps:.2f}, #queue-req: {queued}"
    )


def prefill_0_2_14(b: Batch, mixed: int | None = None) -> str:
    """0.2.14 srt/managers/tp_worker.py:446 (mixed chunk) and :456."""
    if mixed is not None:
        return (
            f"Prefill batch(mixed #running-req: {mixed}). #new-seq: {b.seqs}, #new-token: {b.new}, "
            f"#cached-token: {b.cached}, cache hit rate: {100.0 * b.rate:.2f}%, #queue-req: {b.queued}"
        )
    return (
        f"Prefill batch. #new-seq: {b.seqs}, #new-token: {b.new}, #cached-token: {b.cached}, "
        f"cache hit rate: {100.0 * b.rate:.2f}%, #running-req: {b.running}, #queue-req: {b.queued}"
    )


def decode_0_2_14(running: int, used: int, usage: float, tps: float, queued: int) -> str:
    """0.2.14 srt/managers/tp_worker.py:287 (the same through 0.4.1 srt/managers/scheduler.py:677)."""
    return (
        f"Decode batch. #running-req: {running}, #token: {used}, token usage: {usage:.2f}, "
        f"gen throughput (token/s): {tps:.2f}, #queue-req: {queued}"
    )


def prefill_0_4_1(b: Batch) -> str:
    """0.4.1 srt/managers/scheduler.py:648 (log_prefill_stats; 0.3.4-0.4.3 alike)."""
    return (
        f"Prefill batch. #new-seq: {b.seqs}, #new-token: {b.new}, #cached-token: {b.cached}, "
        f"cache hit rate: {100.0 * b.rate:.2f}%, token usage: {b.usage:.2f}, #running-req: {b.running}, "
        f"#queue-req: {b.queued}"
    )


def prefill_0_4_4(b: Batch) -> str:
    """0.4.4 srt/managers/scheduler.py log_prefill_stats: no hit rate, trailing `, `."""
    return (
        f"Prefill batch. #new-seq: {b.seqs}, #new-token: {b.new}, #cached-token: {b.cached}, "
        f"token usage: {b.usage:.2f}, #running-req: {b.running}, #queue-req: {b.queued}, "
    )


def decode_0_4_4(running: int, used: int, usage: float, tps: float, queued: int) -> str:
    """0.4.4 srt/managers/scheduler.py log_decode_stats (trailing `, `)."""
    return (
        f"Decode batch. #running-req: {running}, #token: {used}, token usage: {usage:.2f}, "
        f"gen throughput (token/s): {tps:.2f}, #queue-req: {queued}, "
    )


def prefill_0_4_9_pd(
    b: Batch, used_full: int, used_swa: int, swa_usage: float, boot: int, inflight: int, tps: float
) -> str:
    """0.4.9 srt/managers/scheduler.py (PD prefill role) with srt/mem_cache/allocator.py:220 SWA log_usage."""
    usage = (
        f"#token: full={used_full}, swa={used_swa}, token usage: full={b.usage:.2f}, swa={swa_usage:.2f}, "
    )
    return (
        f"Prefill batch. #new-seq: {b.seqs}, #new-token: {b.new}, #cached-token: {b.cached}, {usage}"
        f"#unbootstrapped-req: {boot}, #queue-req: {b.queued}, #transferring-req: {inflight}, "
        f"input throughput (token/s): {tps:.2f} "
    )


def prefill_0_5_4(b: Batch, forward_ct: int, mamba: float | None = None) -> str:
    """0.5.4 srt/managers/scheduler_metrics_mixin.py:126 (hybrid mamba usage parts)."""
    usage = (
        f"token usage: {b.usage:.2f}, "
        if mamba is None
        else f"full token usage: {b.usage:.2f}, mamba usage: {mamba:.2f}, "
    )
    return (
        f"Prefill batch [{forward_ct + 1}], #new-seq: {b.seqs}, #new-token: {b.new}, #cached-token: {b.cached}, "
        f"{usage}#running-req: {b.running}, #queue-req: {b.queued}, "
    )


def decode_0_5_4(
    forward_ct: int, running: int, used: int, usage: float, tps: float, queued: int, graph: bool
) -> str:
    """0.5.4 srt/managers/scheduler_metrics_mixin.py log_decode_stats."""
    return (
        f"Decode batch [{forward_ct}], #running-req: {running}, #token: {used}, token usage: {usage:.2f}, "
        f"cuda graph: {graph}, gen throughput (token/s): {tps:.2f}, #queue-req: {queued}, "
    )


def prefill_0_5_10(b: Batch, graph: bool, tps: float, tflops: float) -> str:
    """0.5.10 srt/observability/scheduler_metrics_mixin.py:389 (graph before throughput, est. TFLOPS)."""
    return (
        f"Prefill batch, #new-seq: {b.seqs}, #new-token: {b.new}, #cached-token: {b.cached}, "
        f"token usage: {b.usage:.2f}, #running-req: {b.running}, #queue-req: {b.queued}, "
        f"cuda graph: {graph}, input throughput (token/s): {tps:.2f}, est. prefill TFLOPS/s (per GPU): {tflops:.2f}"
    )


def decode_0_5_10(running: int, used: int, usage: float, tps: float, queued: int, graph: bool) -> str:
    """0.5.10 srt/observability/scheduler_metrics_mixin.py log_decode_stats."""
    return (
        f"Decode batch, #running-req: {running}, #token: {used}, token usage: {usage:.2f}, "
        f"cuda graph: {graph}, gen throughput (token/s): {tps:.2f}, #queue-req: {queued}"
    )


def prefill_0_5_23(b: Batch, pending: int, graph: bool, tps: float, occupancy: float | None = None) -> str:
    """0.5.23 srt/managers/scheduler_components/metrics_reporter.py:753 (+ pool_stats_observer.py parts)."""
    msg = (
        f"Prefill batch, #new-seq: {b.seqs}, #new-token: {b.new}, #cached-token: {b.cached}, "
        f"token usage: {b.usage:.2f}, #running-req: {b.running}, #queue-req: {b.queued}, #pending-token: {pending}, "
        f"cuda graph: {graph}, input throughput (token/s): {tps:.2f}"
    )
    if occupancy is not None:
        msg += f", fwd occupancy: {occupancy:.2f}%, fwd+idle occupancy: {min(100.0, occupancy + 20):.2f}%"
    return msg


def decode_0_5_23(running: int, used: int, usage: float, tps: float, queued: int, graph: bool) -> str:
    """0.5.23 srt/managers/scheduler_components/metrics_reporter.py:963."""
    return (
        f"Decode batch, #running-req: {running}, #token: {used}, token usage: {usage:.2f}, "
        f"cuda graph: {graph}, gen throughput (token/s): {tps:.2f}, #queue-req: {queued}"
    )


def server_args_repr(fields: dict[str, object]) -> str:
    """`logger.info(f"{server_args=}")` (<= 0.5.21): the dataclass repr."""
    return "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")"


def server_args_dict(fields: dict[str, object]) -> str:
    """0.5.22+ srt/entrypoints/engine.py:306: `server_args={_server_args_for_logging(...)}` (a dict)."""
    return f"server_args={fields!r}"


def finish_text(rid: str, prompt: int, cached: int, completion: int, text: str, latency: float) -> str:
    """`Finish: obj=..., out=...` (0.4.1 srt/managers/tokenizer_manager.py:320; 0.5.8+ utils/request_logger.py:197)."""
    obj = f"GenerateReqInput(rid='{rid}', text={text!r}, sampling_params={{'max_new_tokens': 512}}, stream=False)"
    meta = {
        "id": rid,
        "finish_reason": {"type": "stop", "matched": 2},
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cached_tokens": cached,
        "e2e_latency": latency,
    }
    return f"Finish: obj={obj}, out={{'text': 'Sure, here is the plan.', 'meta_info': {meta!r}}}"


def finish_json(iso: str, rid: str, prompt: int, cached: int, tiers: dict[str, int], text: str) -> str:
    """0.5.23 srt/utils/log_utils.py:60 log_json(..., "request.finished", ...) (--log-requests-format json)."""
    meta: dict[str, object] = {
        "id": rid,
        "prompt_tokens": prompt,
        "completion_tokens": 64,
        "cached_tokens": cached,
    }
    if tiers:
        meta["cached_tokens_details"] = {**tiers, "storage_backend": "mooncake"}
    data = {
        "timestamp": iso,
        "event": "request.finished",
        "rid": rid,
        "obj": {"rid": rid, "text": text},
        "out": {"text": "ok", "meta_info": meta},
    }
    return json.dumps(data, ensure_ascii=False)


def prefetch(outcome: str, rid: str, completed: int, matched: int, loaded: int, occupied: int) -> str:
    """0.5.23 srt/mem_cache/unified_radix_cache.py:2526."""
    return f"HiCache prefetch {outcome} req={rid} completed={completed} matched={matched} loaded={loaded} occupied={occupied}"


def declined(rid: str, device_prefix: int, hit: int) -> str:
    """0.5.23 srt/mem_cache/unified_radix_cache.py:3080."""
    return f"HiCache prefetch declined req={rid} reason=unservable_prefix device_prefix={device_prefix} hit={hit}"
