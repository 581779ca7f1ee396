# ruff: noqa: E501, PLR0917 - the format strings and arguments as the upstream sources have them
"""Makes samples/lmcache-0.5.6-sglang-0.5.9-write-only.log and samples/lmcache-0.5.6-sglang-0.5.9-healthy.log (+ .golden): LMCache carried by SGLang."""

# One traffic, its tier write-only in one sample and read back in the other.
# SGLang 0.5.9 (`pip download sglang==0.5.9 --no-deps`): `--enable-lmcache` puts
# srt/mem_cache/storage/lmcache/lmc_radix_cache.py's LMCRadixCache in front of the radix cache. Its
# `match_prefix` asks LMCache only when the radix cache misses a tail of the prompt: LMCache 0.5.6's
# integration/sglang/sglang_adapter.py `LMCacheLayerwiseConnector.start_load_kv` looks the page-aligned
# prompt up (`lookup`: the prefix LMCache holds) with `offset` = what the radix cache holds rounded down to
# a chunk, and logs `LMCache retrieve skipped: lookup=%d, offset=%d, no new tokens to retrieve` (:325)
# when lookup <= offset, else `LMCache retrieve started: lookup=%d, offset=%d, retrieve %d new tokens`
# (:352); the prefill line's `#cached-token` then counts the radix prefix plus what was fetched (lookup).
# A finished request is stored whole (`cache_finished_req`, offset 0, its committed tokens: prompt and
# output but the last): `LMCache store_kv started: tokens=%d, num_layers=%d, offset=%d` (:368), v1/
# cache_engine.py's layerwise `[req_id=%s] Stored %d out of total %d tokens. size: %.4f GB, cost %.4f ms,
# throughput: %.4f GB/s` (:780, req_id `unspecified`: SGLang passes none; only when some chunk is new:
# `store_layer` skips chunks it holds, and writes whole chunks only), then `LMCache store_kv completed:
# stored %d tokens` (:410). LMCache's records carry its own format (lmcache/logging.py), no SGLang prefix.
# SGLang's own lines: srt/utils/common.py configure_logger `[%(asctime)s] %(message)s`; 0.5.9
# srt/managers/scheduler_metrics_mixin.py's prefill line (below) and its decode line (0.5.10's form).

from __future__ import annotations

import random
from dataclasses import dataclass

from scripts.samples.lmcache.lines import record
from scripts.samples.made import Made
from scripts.samples.sglang import lines as sl
from scripts.samples.sglang.families import _args

CHUNK = 256  # LMCache's default chunk_size
LAYERS = 28  # Qwen2.5-7B-Instruct
KV_BYTES_PER_TOKEN = 57344  # 28 layers x 4 KV heads x 128 x 2 (K, V) x bf16
ADAPTER = ("sglang_adapter.py", "lmcache.integration.sglang.sglang_adapter")
ENGINE = ("cache_engine.py", "lmcache.v1.cache_engine")
T0 = 1772442000  # 2026-03-02T09:00:00Z
NS = 1_000_000_000
WHAT = {
    "write_only": (
        "every lookup finds nothing (`LMCache retrieve skipped: lookup=0, ...`) while each finished "
        "request's chunks are written again in full (`Stored N out of total M`): the tier is written "
        "and never read; `write_only_offload` names it (tier `external`), as it does inside vLLM."
    ),
    "healthy": (
        "the same traffic with the tier read back: a session the radix cache evicted gets its prefix "
        "from LMCache (`retrieve started: ... retrieve N new tokens`), the others find it on the GPU "
        "(`retrieve skipped: lookup=L, offset=O` with L > 0); stores write only the new chunks."
    ),
}


def prefill_0_5_9(seqs: int, new: int, cached: int, usage: float, running: int, tps: float) -> str:
    """0.5.9 srt/managers/scheduler_metrics_mixin.py log_prefill_stats (no forward iters, not disaggregated)."""
    return (
        f"Prefill batch, #new-seq: {seqs}, #new-token: {new}, #cached-token: {cached}, "
        f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: 0, "
        f"input throughput (token/s): {tps:.2f}, cuda graph: False"
    )


def lmcache(t: float, message: str, where: tuple[str, str], lineno: int) -> str:
    """An LMCache INFO record at `t` (ms kept), without its newline."""
    return record("INFO", int(t * 1000) * 1_000_000, message, where[0], lineno, where[1]).rstrip("\n")


@dataclass
class Sums:
    """What the LMCache lines print, summed as the metrics must."""

    lookups: int = 0
    hit: int = 0
    need: int = 0
    stored: int = 0
    offered: int = 0
    retrieved: int = 0


def simulate(mode: str, seed: int) -> tuple[bytes, Sums]:
    """The sample's bytes and its sums: 6 agent sessions, 40 turns; every third turn the radix cache
    has evicted the session's own tail and holds only the shared system prompt."""
    rng = random.Random(seed)
    system = 5000
    held = [system] * 6  # tokens of each session's history (committed: prompt and output but the last)
    stored_chunks = [0] * 6  # whole chunks of each session LMCache holds (healthy: all it was given)
    sums = Sums()
    rows: list[tuple[float, str]] = [
        (T0, sl.line(T0, sl.server_args_repr(_args(enable_lmcache=True, chunked_prefill_size=16384))))
    ]
    t = float(T0 + 20)
    next_decode = t
    for turn in range(40):
        t += rng.uniform(3.0, 8.0)
        s = rng.randrange(6)
        prompt = held[s] + rng.randint(1500, 4000)  # the tool output and the user's next message
        evicted = turn % 3 == 2
        radix = system if evicted else held[s]
        offset = radix - radix % CHUNK
        found = stored_chunks[s] * CHUNK if mode == "healthy" else 0
        if found == 0 and mode == "healthy" and any(stored_chunks):
            found = system - system % CHUNK  # (another session stored the shared system prompt)
        sums.lookups += 1
        sums.hit += found
        if found <= offset:
            text = f"LMCache retrieve skipped: lookup={found}, offset={offset}, no new tokens to retrieve"
            rows.append((t + 0.012, lmcache(t + 0.012, text, ADAPTER, 325)))
            cached = radix
        else:
            new = found - offset
            sums.need += new
            sums.retrieved += new
            text = f"LMCache retrieve started: lookup={found}, offset={offset}, retrieve {new} new tokens"
            rows.append((t + 0.012, lmcache(t + 0.012, text, ADAPTER, 352)))
            cached = found
        tps = (prompt - cached) / 0.9
        rows.append((t + 0.9, sl.line(t + 0.9, prefill_0_5_9(1, prompt - cached, cached, 0.4, 1, tps))))
        while next_decode <= t + 4.0:
            rows.append((next_decode, sl.line(next_decode, sl.decode_0_5_10(1, prompt, 0.4, 41.3, 0, True))))
            next_decode += 10.0
        output = rng.randint(120, 600)
        committed = prompt + output - 1
        done = t + 1.0 + output / 42.0
        rows.append((done, sl.line(done, sl.access(port=41000 + turn))))
        start = done + 0.003
        text = f"LMCache store_kv started: tokens={committed}, num_layers={LAYERS}, offset=0"
        rows.append((start, lmcache(start, text, ADAPTER, 368)))
        whole = committed // CHUNK
        fresh = (whole - stored_chunks[s]) * CHUNK if mode == "healthy" else whole * CHUNK
        if fresh > 0:
            size = fresh * KV_BYTES_PER_TOKEN / 2**30
            ms = 2.0 + fresh / 900.0
            text = (
                f"[req_id=unspecified] Stored {fresh} out of total {committed} tokens. size: {size:.4f} GB, "
                f"cost {ms:.4f} ms, throughput: {size / (ms / 1000):.4f} GB/s"
            )
            rows.append((start + ms / 1000, lmcache(start + ms / 1000, text, ENGINE, 780)))
            sums.stored += fresh
            sums.offered += committed
        end = start + 0.05
        rows.append(
            (end, lmcache(end, f"LMCache store_kv completed: stored {committed} tokens", ADAPTER, 410))
        )
        stored_chunks[s] = whole
        held[s] = committed
    rows.sort(key=lambda row: row[0])
    return "".join(f"{text}\n" for _, text in rows).encode(), sums


def section(name: str, mode: str, sums: Sums) -> str:
    """The sample's README section: what it shows and the sums a correct parser finds."""
    return "\n".join([
        f"## `{name}`", "",
        f"LMCache 0.5.6 carried by SGLang 0.5.9 (`--enable-lmcache`, TP=1): {WHAT[mode]} Made by `{__name__}`.", "",
        "Expected (what a correct parser sums):", "",
        f"- lookups {sums.lookups} (query tokens not printed), hit tokens {sums.hit}, need-load tokens {sums.need}",
        f"- stored tokens {sums.stored} of {sums.offered} offered; retrieved tokens {sums.retrieved}",
    ])  # fmt: skip


def make() -> list[Made]:
    """The samples and their README sections."""
    made = []
    for mode, seed in (("write_only", 2591), ("healthy", 2592)):
        name = f"lmcache-0.5.6-sglang-0.5.9-{mode.replace('_', '-')}.log"
        data, sums = simulate(mode, seed)
        made.append(Made(name, data, section(name, mode, sums)))
    return made
