"""The vLLM messages a sample repeats: stats, SpecDecoding, KV Transfer, SamplingParams, uvicorn, tqdm."""

from __future__ import annotations

import random
from dataclasses import dataclass

from scripts.samples.vllm.lines import BAR, vtuple

# Every format string, `file:line`, process prefix and colour rule here was read from the PyPI wheel of
# the version a sample claims (`pip download vllm==X --no-deps`; see samples/README.vllm.md).


def params_repr(version: str, rng: random.Random) -> str:
    """SamplingParams.__repr__ of the version (fields read from sampling_params.py)."""
    temp = rng.choice([0.6, 0.7, 1.0, 0.0])
    top_p = 0.95 if temp else 1.0
    top_k = 20 if temp == 0.6 else 0 if vtuple(version) >= (0, 9) else -1
    max_tokens = rng.choice([4096, 8192, 16384, 32000])
    head = (
        f"SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
        f"temperature={temp}, top_p={top_p}, top_k={top_k}, min_p=0.0, seed=None, stop=[], "
        f"stop_token_ids=[], bad_words=[], "
    )
    if vtuple(version) >= (0, 26):
        head += "thinking_token_budget=None, "
    tail = (
        f"include_stop_str_in_output=False, ignore_eos=False, max_tokens={max_tokens}, "
        "min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, "
        "spaces_between_special_tokens=True, "
    )
    if vtuple(version) < (0, 7):
        return head + tail + "truncate_prompt_tokens=None, guided_decoding=None)"
    if vtuple(version) < (0, 26):
        return head + tail + "truncate_prompt_tokens=None, structured_outputs=None, extra_args=None)"
    return head + tail + "structured_outputs=None, extra_args=None)"


def access(
    rng: random.Random, path: str = "/v1/chat/completions", method: str = "POST", client: str | None = None
) -> str:
    """A default-config uvicorn access line."""
    addr = client or f"172.17.0.{rng.choice([4, 4, 4, 5, 7])}:{rng.randrange(32768, 61000)}"
    return f'INFO:     {addr} - "{method} {path} HTTP/1.1" 200 OK\n'


def tqdm_bar(n_shards: int, secs: float) -> list[tuple[float, str]]:
    """tqdm with vLLM's _BAR_FORMAT (which ends in \\n): '\\r'+bar per update, a repeat, then '\\n'."""
    rate = secs / n_shards
    out: list[tuple[float, str]] = [(0.0, f"\r{BAR}:   0% Completed | 0/{n_shards} [00:00<?, ?it/s]\n")]
    for k in range(1, n_shards + 1):
        el = rate * k
        rem = rate * (n_shards - k)
        rfmt = f"{rate:5.2f}s/it" if rate >= 1 else f"{1 / rate:5.2f}it/s"
        bar = (
            f"{BAR}: {round(100 * k / n_shards):3d}% Completed | {k}/{n_shards} "
            f"[{int(el) // 60:02d}:{int(el) % 60:02d}<{int(rem) // 60:02d}:{int(rem) % 60:02d}, "
            f"{rfmt}]\n"
        )
        out.append((el, "\r" + bar))
    out.append((secs, "\r" + out[-1][1][1:] + "\n"))
    return out


@dataclass
class Stat:
    """One interval of one engine, as the LoggingStatLogger sees it."""

    prompt: float
    gen: float
    running: int
    waiting: int
    kv: float
    prefix: float | None
    external: float | None = None
    deferred: int = 0
    preempt: int = 0
    fetch: tuple[int, int, int] = (0, 0, 0)


def stats_msg(version: str, label: str, s: Stat) -> str:
    """The V1 stats line exactly as loggers.py builds it for `version`."""
    v = vtuple(version)
    parts = [
        f"Avg prompt throughput: {s.prompt:.1f} tokens/s",
        f"Avg generation throughput: {s.gen:.1f} tokens/s",
        f"Running: {s.running} reqs",
        f"Waiting: {s.waiting + s.deferred} reqs",
    ]
    if v >= (0, 20, 2) and s.deferred:
        parts.append(f"Deferred: {s.deferred} reqs")
    if v >= (0, 32) and any(s.fetch):
        a, b, c = s.fetch
        parts.append(f"KV fetch: {a} waiting to start, {b} in progress, {c} completed waiting")
    if v >= (0, 11, 1) and s.preempt:
        parts.append(f"Preemptions: {s.preempt}")
    parts.append(f"GPU KV cache usage: {s.kv:.1f}%")
    if s.prefix is not None:
        parts.append(f"Prefix cache hit rate: {s.prefix:.1f}%")
    if s.external is not None and v >= (0, 11, 1):
        parts.append(f"External prefix cache hit rate: {s.external:.1f}%")
    return label + ", ".join(parts)


def spec_msg(rng: random.Random, positions: int, secs: float, drafts: int) -> str:
    """SpecDecoding line, 0.10.2+ form."""
    rates = sorted((rng.uniform(0.25, 0.92) for _ in range(positions)), reverse=True)
    accepted = int(sum(r * drafts for r in rates))
    drafted = drafts * positions
    return (
        f"SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
        f"Accepted throughput: {accepted / secs:.2f} tokens/s, "
        f"Drafted throughput: {drafted / secs:.2f} tokens/s, Accepted: {accepted} tokens, "
        f"Drafted: {drafted} tokens, Per-position acceptance rate: "
        + ", ".join(f"{r:.3f}" for r in rates)
        + f", Avg Draft acceptance rate: {100 * accepted / drafted:.1f}%"
    )


def walk(rng: random.Random, x: float, lo: float, hi: float, step: float) -> float:
    """A bounded random walk."""
    return min(hi, max(lo, x + rng.uniform(-step, step)))


def ops_alloc(blocks: int, rng: random.Random) -> int:
    """prepare_store calls in an interval: ~14 CPU blocks per allocation."""
    return blocks // rng.randint(10, 18)


def offload_kv(
    rng: random.Random,
    store_blocks: int,
    load_blocks: int,
    block: int,
    *,
    lookups: int,
    order: int,
    cpu_block: int = 0,
) -> tuple[str, int, int]:
    """A 0.26 OffloadingConnectorStats.reduce() line (CPU backend); returns text, store, load."""
    groups: dict[str, list[tuple[str, object]]] = {}
    if lookups:
        groups["lookup"] = [
            ("vllm:kv_offload_lookup_sync_delay_seconds_count", lookups),
            ("vllm:kv_offload_lookup_sync_delay_seconds_sum", lookups * rng.uniform(3e-5, 8e-5)),
        ]
    store = store_blocks * block
    load = load_blocks * block
    if store:
        ops = max(1, store // rng.randint(12_000_000, 20_000_000))  # ~16 MB per transfer op
        groups["store"] = [
            ("vllm:kv_offload_store_bytes", store),
            ("vllm:kv_offload_store_time", store / rng.uniform(17e9, 24e9)),
            ("vllm:kv_offload_store_size_count", ops),
            ("vllm:kv_offload_store_size_sum", store),
        ]
    if load:
        ops = max(1, load // rng.randint(20_000_000, 40_000_000))
        groups["load"] = [
            ("vllm:kv_offload_load_bytes", load),
            ("vllm:kv_offload_load_time", load / rng.uniform(19e9, 25e9)),
            ("vllm:kv_offload_load_size_count", ops),
            ("vllm:kv_offload_load_size_sum", load),
        ]
    w = rng.uniform(0.0004, 0.02) if store else 0.0
    r = rng.uniform(0.0002, 0.01) if load else 0.0
    cpu_blocks = store // (cpu_block or block)
    allocs = max(1, ops_alloc(cpu_blocks, rng)) if store else 0
    groups["cpu"] = [("vllm:kv_offload_cpu_cache_usage_perc", w + r)]
    if allocs:
        groups["cpu"] += [
            ("vllm:kv_offload_cpu_allocation_size_count", allocs),
            ("vllm:kv_offload_cpu_allocation_size_sum", cpu_blocks),
        ]
    groups["cpu"] += [
        ("vllm:kv_offload_cpu_cache_write_usage_perc", w),
        ("vllm:kv_offload_cpu_cache_read_usage_perc", r),
    ]
    orders = [
        ["lookup", "store", "load", "cpu"],
        ["store", "load", "cpu", "lookup"],
        ["cpu", "lookup", "store", "load"],
        ["load", "store", "lookup", "cpu"],
    ]
    pairs = [kv for g in orders[order % 4] if g in groups for kv in groups[g]]
    return ", ".join(f"{k}={v}" for k, v in pairs), store, load
