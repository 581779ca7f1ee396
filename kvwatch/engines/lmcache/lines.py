"""LMCache's line formats, 0.3.0 to 0.5.6, as the released packages print them (`pip download lmcache==X`).

The record (lmcache/logging.py, the same from 0.3.0 to 0.5.6): `{colour}[%(asctime)s] LMCache
%(levelname)s:{reset} %(message)s {italic}(%(filename)s:%(lineno)d:%(name)s){reset}`
with ANSI codes in the raw stream (`\\x1b[32;20m` INFO, `\\x1b[1m` DEBUG, `\\x1b[3m` italic, `\\x1b[0m`
reset), asctime `YYYY-MM-DD HH:MM:SS,mmm` in the process's local time, and vLLM's process tag in front
when a worker or engine subprocess printed it. The 2024 `lmcache_vllm` integration's record (LMCache
issue #167, not in a wheel on PyPI) was `INFO LMCache: <message> [asctime] -- /path/file.py:N`.
The messages are matched by shape and key, never by a version: vLLM's in-tree copy of the adapter prints
the old lookup form with a newer LMCache.
"""

from __future__ import annotations

import re

from kvwatch.parsers.drift import Shapes

#: The literal every LMCache record holds (the marker: cheaper than any regex), and the 2024 one's.
MARKER = "] LMCache "
OLD_MARKER = " LMCache: "
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

# --- lookups: the scheduler's `get_num_new_matched_tokens` (integration/vllm/vllm_v1_adapter.py) ---
# 0.3.0-0.3.12 `Reqid: %s, Total tokens %d, LMCache hit tokens: %d, need to load: %d` (need can be
# negative: hit - vLLM computed, - 1 on a whole-prompt hit); `... LMCache hit tokens: None.` (0.3.6-0.3.9
# INFO, 0.3.12 DEBUG: the async lookup still runs). 0.3.15-0.5.6 add `Inference Engine computed tokens:
# %d, ` and print max(need, 0); their min_retrieve form ends `but need to load: %d < min_retrieve %d, skip
# retrieve but record for save skip`.
LOOKUP = re.compile(
    r"Reqid: (\S+?), Total tokens (\d+), (?:Inference Engine computed tokens: (\d+), )?"
    r"LMCache hit tokens: (?:(\d+), (?:need to load: (-?\d+)|but need to load: (-?\d+) < min_retrieve \d+, "
    r"skip retrieve but record for save skip)|(None)\.)\Z"
)
#: The lookup line read by key (its parts in any order, keys of no release around them): each part's
#: name and reading, for a line LOOKUP's exact shapes do not match.
LOOKUP_PARTS = (
    ("Total tokens", re.compile(r"Total tokens (\d+)\Z")),
    ("computed", re.compile(r"Inference Engine computed tokens: (\d+)\Z")),
    ("hit", re.compile(r"LMCache hit tokens: (\d+)\Z")),
    ("need", re.compile(r"(?:but )?need to load: (-?\d+)(?: < min_retrieve \d+)?\Z")),
)
LOOKUP_SKIP = "skip retrieve but record for save skip"


def lookup_by_key(message: str) -> tuple[tuple[str, str, str | None, str, str], list[str]] | None:
    """(request, total, computed, hit, need) of a lookup line read by key, and the parts it does not
    know; None without a request, total, hit or need (another shape: drift)."""
    parts = message.rstrip(" .,").split(", ")
    if not parts[0].startswith("Reqid: "):
        return None
    found: dict[str, str] = {"request": parts[0][7:]}
    unknown: list[str] = []
    for part in parts[1:]:
        if part == LOOKUP_SKIP:
            found["skip"] = "0"
            continue
        for name, pattern in LOOKUP_PARTS:
            match = pattern.match(part)
            if match is not None:
                found[name] = match[1]
                break
        else:
            unknown.append(part.partition(":")[0].rstrip("0123456789 -"))
    if not all(key in found for key in ("Total tokens", "hit", "need")):
        return None
    need = "0" if "skip" in found else found["need"]  # (a min_retrieve skip loads nothing)
    return (found["request"], found["Total tokens"], found.get("computed"), found["hit"], need), unknown


#: LMCache's records of the kinds kvwatch reads (kvwatch.parsers.drift): lookups, stores and loads, by
#: their words; one that reads as none of the shapes above is a reworded record.
SHAPES = Shapes(
    (
        "Reqid: ", "Stored ", "Retrieved ", "Storing KV cache", "hit tokens", " out of ",
        "LMCache retrieve started", "LMCache retrieve skipped",  # (SGLang's adapter: its lookups)
    )
)  # fmt: skip

# 0.4.7-0.5.6 DEBUG: `Reqid: %s, Chunked KV loading: capped from %d to %d external tokens
# (max_tokens_per_load=%d)`
CAPPED = re.compile(r"Reqid: \S+?, Chunked KV loading: capped from \d+ to \d+ external tokens")

# --- stores: the workers' `wait_for_save` (adapter) and `store` (v1/cache_engine.py) ---
# Adapter, INFO up to 0.3.12, DEBUG from 0.3.15: `Storing KV cache for %d out of %d tokens
# (skip_leading_tokens=%d) for request %s`; before 0.3.0 (lmcache.experimental, issue #485) without the
# skip part.
STORING = re.compile(
    r"Storing KV cache for (\d+) out of (\d+) tokens (?:\(skip_leading_tokens=\d+\) )?for request (\S+)\Z"
)
# cache_engine: 0.3.3-0.3.12 INFO `Stored %d out of total %d tokens. size: %.4f gb, cost %.4f ms,
# throughput: %.4f GB/s; offload_time: %.4f ms, put_time: %.4f ms`; 0.3.15-0.5.6 the same behind
# `[req_id=%s] ` with `GB`; layerwise 0.3.15+ `[req_id=%s] Stored ... size: %.4f GB, cost %.4f ms,
# throughput: %.4f GB/s`; 0.3.0 (both) and the 0.3.3-0.3.12 layerwise store, DEBUG: `Stored %d out of
# total %d tokens`. N = tokens written, M = tokens offered. A real 0.5.6 engine (in-process, local_cpu,
# chunk 64) wrote only whole chunks (`Stored 448 out of total 484`: the last 36 tokens are a partial chunk,
# not saved by default), and wrote a prefix it already held again when handed it whole (the vLLM adapter
# masks what it stored before; the engine itself does not look).
STORED = re.compile(
    r"(?:\[req_id=(\S+)\] )?Stored (\d+) out of total (\d+) tokens"
    r"(?:\. size: (\d+(?:\.\d+)?) (?:gb|GB), cost (\d+(?:\.\d+)?) ms, throughput: \S+ GB/s"
    r"(?:; offload_time: \S+ ms, put_time: \S+ ms)?)?\Z"
)
# 2024-2025 `lmcache_vllm` (pre-V1 integration; lmcache_vllm 0.6.2.3 vllm_adapter.py:490, DEBUG): a
# store skips the prefix LMCache already holds (engine.lookup); its retrieve (:615) logs the tokens
# injected beyond those vLLM's own prefix cache computed (they are masked out of the ask), so 0 next to
# a stored prefix is a vLLM prefix-cache hit, not a failed load.
STORE_SKIPS = re.compile(r"Store skips (\d+) tokens and then stores (\d+) tokens\Z")
INJECTED = re.compile(r"Injected token number: (\d+)\Z")
# SGLang's LMCache adapter (lmcache/integration/sglang/sglang_adapter.py, LMCache PR #2410, 2026-01; in
# 0.5.6 LMCacheLayerwiseConnector.start_load_kv, :352 and :325), INFO, one per lookup: SGLang's radix
# cache (sglang 0.5.x srt/mem_cache/storage/lmcache/lmc_radix_cache.py match_prefix, up to 0.5.21) asks
# only when it misses a tail of the prompt; `lookup` is the prefix LMCache holds (its `lookup()`, the
# TP ranks' minimum), `offset` what the radix cache holds (rounded down to a chunk). Started: `LMCache
# retrieve started: lookup=%d, offset=%d, retrieve %d new tokens` (lookup - offset loaded); none new:
# `LMCache retrieve skipped: lookup=%d, offset=%d, no new tokens to retrieve` (`to load` in the PR).
# The layerwise retrieve's own `Retrieved ... out of total` line is never reached there (the adapter
# stops its generator one step before it): the started line is the load.
SGLANG_RETRIEVE = re.compile(
    r"LMCache retrieve (?:started: lookup=(\d+), offset=(\d+), (?:retrieve (\d+)|new_tokens=(\d+))"
    r"(?: new tokens)?|skipped: lookup=(\d+), offset=(\d+), no new tokens to (?:load|retrieve))\Z"
)
# Its store (0.5.0-0.5.6, INFO): `LMCache store_kv started: tokens=%d, num_layers=%d, offset=%d` and
# `LMCache store_kv completed: stored %d tokens`, around the engine's own `Stored N out of total M`, which
# counts the store: recognised only.
SGLANG_STORE_KV = re.compile(
    r"LMCache store_kv (?:started: tokens=\d+, num_layers=\d+, offset=\d+|completed: stored \d+ tokens)\Z"
)
# MP mode's opt-in window stats (lmcache 0.5.2-0.5.6, `--enable-extra-logging`,
# v1/mp_observability/subscribers/logging/extra_stats.py:160):
# `L0<->L1 stats [%s] last %.1fs: store ops=N tokens=N size=X.XXGB avg_copy=... | retrieve ops=...`; the
# `cumulative:` twin repeats the totals. Both repeat the per-operation INFO lines below: recognised only.
MP_WINDOW = re.compile(
    r"L0<->L1 stats \[([^\]]*)\] last [\d.]+s: store ops=(\d+) tokens=(\d+) size=([\d.]+)GB \S+ \| "
    r"retrieve ops=(\d+) tokens=(\d+) size=([\d.]+)GB"
)
MP_CUMULATIVE = re.compile(r"L0<->L1 stats \[[^\]]*\] cumulative: store ops=")
# Remote connectors, DEBUG (v1/storage_backend/connector/instrumented_connector.py): 0.3.15-0.5.6 put /
# batched_put `[%s]Bytes offloaded: %.3f MBytes in %.3f ms` (:40, :195; %s: the connector's name,
# `InstrumentedRemoteConnector(<...RedisConnector object at 0x...>)` where it has no __repr__), get /
# batched_get `[%s]Bytes loaded: ...` the same; 0.3.9-0.3.12's f-string `... in %.3fms`; 0.3.0's
# `Bytes offloaded: %.4f MBytes` alone.
BYTES_OFFLOADED = re.compile(
    r"(?:\[(.*)\])?Bytes (?:offloaded|loaded): ([\d.]+) MBytes(?: in ([\d.]+) ?ms)?\Z"
)
# MP mode's server (v1/multiprocess/server.py 0.3.12-0.4.x, modules/*_transfer.py 0.5.x), INFO.
MP_STORED = re.compile(r"Stored (\d+) tokens in (\d+(?:\.\d+)?) seconds\Z")
MP_RETRIEVED = re.compile(r"Retrieved (\d+) tokens in (\d+(?:\.\d+)?) seconds\Z")

# --- loads: the workers' `start_load_kv` (adapter) and `retrieve` (cache_engine) ---
# 0.3.9-0.5.6 INFO `[req_id=%s] Retrieved %d out of %d required tokens (from %d total tokens). size:
# %.4f gb, cost %.4f ms, throughput: %.4f GB/s;` (no req_id up to 0.3.12). Required = the unmasked
# tokens asked for; a miss prints `Retrieved 0 out of N` too (real 0.5.6 engine); `lookup()` prints nothing.
RETRIEVED = re.compile(
    r"(?:\[req_id=(\S+)\] )?Retrieved (\d+) out of (\d+) required tokens \(from \d+ total tokens\)\. "
    r"size: (\d+(?:\.\d+)?) gb, cost (\d+(?:\.\d+)?) ms, throughput: \S+ GB/s;?\Z"
)
# 0.3.6 INFO: `Retrieved %d out of total %d out of total %d tokens. size: %.4f gb, cost %.4f ms,
# throughput: %.4f GB/s;` (the second number is the required count).
RETRIEVED_036 = re.compile(
    r"Retrieved (\d+) out of total (\d+) out of total \d+ tokens\. "
    r"size: (\d+(?:\.\d+)?) gb, cost (\d+(?:\.\d+)?) ms, throughput: \S+ GB/s;?\Z"
)
# f-string `Retrieved {n} out of {required} out of total {len(tokens)} tokens`: 0.3.0 DEBUG, 0.3.3 INFO
# (layerwise DEBUG), 0.3.6-0.3.12 layerwise INFO; 0.3.15+ layerwise with `[req_id=%s] `.
RETRIEVED_SHORT_FORM = re.compile(
    r"(?:\[req_id=(\S+)\] )?Retrieved (\d+) out of (\d+) out of total \d+ tokens\Z"
)
# The adapter's layerwise `Retrieved %d tokens` (INFO, 0.3.0-0.5.6): the last layer's count, which the
# cache_engine's layerwise line above reports as well (from 0.3.6 at INFO): recognised, not summed.
RETRIEVED_LAYERWISE = re.compile(r"Retrieved \d+ tokens\Z")
# The legacy (non-v1) cache engine (lmcache/cache_engine.py, 2024 to 0.3.x): chunks and tokens.
LEGACY_STORED = re.compile(r"Stored/updated \d+ chunks, total time ")
LEGACY_RETRIEVED = re.compile(r"Retrieved (?:\d+ chunks \((\d+) tokens in total\) --|0 chunks\Z)")
# MP mode (v1/distributed/storage_manager.py, 0.5.x), INFO, only when some key was found.
PREFETCH = re.compile(
    r"Prefetch request completed \(L1\+L2\): (\d+)/(\d+) retained keys \(\d+ L1, \d+ L2\) in (\d+(?:\.\d+)?) ms"  # noqa: E501
)
# MP mode's vLLM-side connector (lmcache_mp_connector.py 0.5.x): a preempted request looked up again.
RESUME_LOAD = re.compile(r"<resume-load> req=\S+ apc=\d+ lmcache=\d+ load=\d+\Z")

# --- failures (WARNING / ERROR) ---
# Adapter: `The number of retrieved tokens is less than the expected number of tokens! This should not
# happen!` (0.3.0-0.3.12), behind `Request %s` with no space from 0.3.15; then `Num retrieved tokens: %d,
# num expected tokens: %d`.
RETRIEVE_ERROR = re.compile(
    r"(?:Request (\S*?))?The number of retrieved tokens is less than the expected number of tokens!"
)
RETRIEVE_ERROR_NUMBERS = re.compile(r"Num retrieved tokens: (-?\d+), num expected tokens: (-?\d+)\Z")
#: Fixed failure texts -> the failure's kind, and whether it is a failed load.
FAILURES: tuple[tuple[str, str, bool], ...] = (
    # cache_engine (0.3.6+), WARNING
    ("The cache block is in the storage, but it can't be retrieved", "unretrievable_block", True),
    # adapter, WARNING 0.3.0-0.3.x, DEBUG in 0.5.6 (LMCache issue #842)
    ("In connector.start_load_kv, but the attn_metadata is None", "no_attn_metadata", True),
    # cache_engine, WARNING: a partial store (0.3.12+) or none (0.3.6+)
    ("Local cpu memory under pressure so choosing to store only", "cpu_memory_pressure", False),
    ("Local cpu memory under pressure so choosing to not store", "cpu_memory_pressure", False),
    # local_cpu_backend.py, WARNING
    ("Local cpu memory is under pressure. Waiting for", "cpu_memory_pressure", False),
    # local_disk_backend.py / nixl_storage_backend.py
    ("No eviction candidates found. Disk space under pressure.", "storage_pressure", False),
    ("No eviction candidates found. Backend under pressure.", "storage_pressure", False),
)

#: vLLM's process tag: TP rank (`Worker_TP1`, `VllmWorker TP5`, `VllmWorker rank=1`) and DP rank.
TP_RANK = re.compile(r"TP(\d+)\b|\brank=(\d+)")
DP_RANK = re.compile(r"DP(\d+)")
