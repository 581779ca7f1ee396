"""The KV connectors that print their own keys on vLLM's `KV Transfer metrics:` line, and the keys each
prints: a key no release of its connector printed, or the keys of a connector kvwatch does not know, are
counted (kvwatch.parsers.drift), never dropped silently.

vLLM's `kv_connector/v1/metrics.py` (`KVConnectorLogging.log`) prints the connector's
`KVConnectorStats.reduce()` as `key=value, ...`; under MultiConnector (`multi_connector.py`) each
connector's dict under its class name, `NixlConnector={...}, OffloadingConnector={...}`. Read from vLLM
0.11.0 to 0.34.0 (`kv_connector/v1/...`, each connector's `reduce()`) and LMCache 0.5.6:

- NixlConnector, and NixlPullConnector / NixlPushConnector (the same stats): 0.11 `nixl_connector.py`
  `num_successful_transfers`; 0.12-0.19 `nixl_connector.py`, 0.20-0.34 `nixl/stats.py` the eight
  `Num successful transfers`, `Avg xfer time (ms)`, ...; 0.31 adds `Num failed transfers` and
  `Num KV expired reqs`, 0.32 `Num notifs after expiry`.
- MooncakeConnector: 0.21-0.34 `mooncake/stats.py`.
- MooncakeStoreConnector: 0.22-0.34 `mooncake/store/metrics.py`, `<operation>_<figure>` for the
  operations its worker records (`save_exists`, `save_put`, `load_get`, `lookup_exists`; 0.34
  `selective_lease.py`'s `lookup_lease`).
- HF3FSKVConnector: 0.20-0.34 `hf3fs/hf3fs_connector.py`.
- HiSparseConnector: 0.30-0.34 `hisparse/stats.py` (0.32 adds the usage gauge).
- UMBPStoreConnector: 0.33-0.34 `umbp/stats.py`, `<load|store>_<submitted|completed|failed|num_bytes>`.
- OffloadingConnector: 0.16-0.23 (`offloading_connector.py`, then `offloading/metrics.py`)
  `<src>_to_<dst>_total_bytes` / `_total_time` between the mediums `GPU` and `CPU` (`kv_offload/
  mediums.py`); 0.24-0.34 `offloading/metrics.py`, the flat metric names its and its specs' metric
  definitions declare (`kv_offload/cpu/spec.py`, `kv_offload/tiering/`, the KVCR tier's from the kvcr
  package 0.1.1), each as `name`, labelled
  `name:('label', ...)`, and a histogram's as `name_count` and `name_sum`.
- SimpleCPUOffloadConnector: 0.32-0.34 `v1/simple_kv_offload/metrics.py` (kvwatch.engines.vllm.simplecpu).
- LMCacheMPConnector: LMCache 0.5.6's own (`lmcache/integration/vllm/lmcache_mp_metrics.py`; vLLM's
  `lmcache_mp_connector.py` prints nothing).
The others print nothing on the line (no stats class, or `build_kv_connector_stats` returns None):
LMCacheConnectorV1, P2pNcclConnector, SharedStorageConnector / ExampleConnector, MoRIIOConnector,
FlexKVConnectorV1, DecodeBenchConnector.

A connector kvwatch knows that prints a key none of its releases printed was upgraded: the key is counted
and told as format drift, as an unknown label on a stats line is. A connector kvwatch does not know (a
plugin's, through `kv_connector_module_path`) has no keys kvwatch could have read: its keys are counted
and listed, not told as drift (nothing kvwatch read changed; kvwatch.engines.vllm.parser).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_NIXL = frozenset(
    {
        "num_successful_transfers",  # 0.11
        "Num successful transfers", "Avg xfer time (ms)", "P90 xfer time (ms)", "Avg post time (ms)",
        "P90 post time (ms)", "Avg MB per transfer", "Throughput (MB/s)", "Avg number of descriptors",
        "Num failed transfers", "Num KV expired reqs",  # 0.31
        "Num notifs after expiry",  # 0.32
    }
)  # fmt: skip
_MOONCAKE = frozenset(
    {
        "Num successful transfers", "Avg xfer time (ms)", "P90 xfer time (ms)", "Avg MB per transfer",
        "Throughput (MB/s)", "Avg number of descriptors", "Num failed transfers", "Num failed recvs",
        "Num KV expired reqs",
    }
)  # fmt: skip
_MOONCAKE_STORE = frozenset(
    f"{operation}_{figure}"
    for operation in ("save_exists", "save_put", "load_get", "lookup_exists", "lookup_lease")
    for figure in ("count", "avg_ms", "p90_ms", "total_keys", "total_bytes", "failed_keys", "error_count")
)
_HF3FS = frozenset(
    {
        "Num transfers task", "Num save task success", "Num save task failed", "Num load task success",
        "Num load task failed", "Avg save duration (ms)", "P90 save duration (ms)",
        "Avg load duration (ms)", "P90 load duration (ms)",
    }
)  # fmt: skip
_HISPARSE = frozenset(
    {
        "HiSparse hot-buffer hits", "HiSparse hot-buffer misses", "HiSparse host-to-device bytes",
        "HiSparse host KV cache usage %",
    }
)  # fmt: skip
_UMBP = frozenset(
    f"{operation}_{figure}"
    for operation in ("load", "store")
    for figure in ("submitted", "completed", "failed", "num_bytes")
)
_OFFLOADING = frozenset(
    {
        # 0.16-0.23: `<src>_to_<dst>_total_bytes` / `_total_time`
        "GPU_to_CPU_total_bytes", "GPU_to_CPU_total_time", "CPU_to_GPU_total_bytes", "CPU_to_GPU_total_time",
        # offloading/metrics.py (connector and deprecated names) and kv_offload/cpu/spec.py
        "vllm:kv_offload_load_bytes", "vllm:kv_offload_load_time", "vllm:kv_offload_load_size",
        "vllm:kv_offload_store_bytes", "vllm:kv_offload_store_time", "vllm:kv_offload_store_size",
        "vllm:kv_offload_lookup_sync_delay_seconds", "vllm:kv_offload_lookup_async_delay_seconds",
        "vllm:kv_offload_allocation_failure", "vllm:kv_offload_stores_skipped",
        "vllm:kv_offload_total_bytes", "vllm:kv_offload_total_time", "vllm:kv_offload_size",
        "vllm:kv_offload_config_info", "vllm:kv_offload_cpu_cache_usage_perc",
        "vllm:kv_offload_cpu_allocation_size", "vllm:kv_offload_cpu_cache_write_usage_perc",
        "vllm:kv_offload_cpu_cache_read_usage_perc",
        # kv_offload/tiering/ (0.28-0.34)
        "vllm:kv_offload_tiering_active_cascade_jobs", "vllm:kv_offload_tiering_active_promotion_jobs",
        "vllm:kv_offload_tiering_backpressure_blocks_dropped",
        "vllm:kv_offload_tiering_backpressure_store_latency_ema",
        "vllm:kv_offload_tiering_backpressure_stores_dropped",
        "vllm:kv_offload_tiering_cascade_job_failures", "vllm:kv_offload_tiering_chunk_hits",
        "vllm:kv_offload_tiering_chunk_queries", "vllm:kv_offload_tiering_deferred_release_chunks",
        "vllm:kv_offload_tiering_deferred_release_hold_seconds",
        "vllm:kv_offload_tiering_lookup_async_delay_seconds",
        "vllm:kv_offload_tiering_lookup_sync_delay_seconds",
        "vllm:kv_offload_tiering_primary_read_usage_perc",
        "vllm:kv_offload_tiering_primary_write_usage_perc",
        "vllm:kv_offload_tiering_promotion_allocation_failures",
        "vllm:kv_offload_tiering_promotion_job_failures",
        "vllm:kv_offload_tiering_promotion_latency_seconds", "vllm:kv_offload_tiering_read_bytes",
        "vllm:kv_offload_tiering_read_time", "vllm:kv_offload_tiering_write_bytes",
        "vllm:kv_offload_tiering_write_time",
        # the KVCR tier's, with `enable_telemetry` (0.30-0.34 `kv_offload/tiering/kvcr/manager.py`,
        # `vllm:` + kvcr 0.1.1's `core.py` names)
        "vllm:kvcr_duration_seconds", "vllm:kvcr_transfer_bytes", "vllm:kvcr_transfer_blocks",
        "vllm:kvcr_state",
    }
)  # fmt: skip
_SIMPLE_CPU = frozenset(
    {
        "vllm:simple_kv_offload_save_outcomes_total", "vllm:simple_kv_offload_load_blocks_total",
        "vllm:simple_kv_offload_pending_store_blocks", "vllm:simple_kv_offload_used_blocks",
    }
)  # fmt: skip
_LMCACHE_MP = frozenset({"LMCache MP lookup count", "LMCache MP lookup avg latency (ms)"})

#: Each connector's class name (a MultiConnector payload's key) -> the keys its releases print (a metric
#: name stands for its labelled and histogram forms).
CONNECTORS: Mapping[str, frozenset[str]] = {
    "NixlConnector": _NIXL,
    "NixlPullConnector": _NIXL,
    "NixlPushConnector": _NIXL,
    "MooncakeConnector": _MOONCAKE,
    "MooncakeStoreConnector": _MOONCAKE_STORE,
    "HF3FSKVConnector": _HF3FS,
    "HiSparseConnector": _HISPARSE,
    "UMBPStoreConnector": _UMBP,
    "OffloadingConnector": _OFFLOADING,
    "SimpleCPUOffloadConnector": _SIMPLE_CPU,
    "LMCacheMPConnector": _LMCACHE_MP,
}
_HISTOGRAM = ("_count", "_sum")
#: Every key some connector prints (a metric name stands for its labelled and histogram forms).
_ANY = frozenset().union(*CONNECTORS.values())
#: ... and those of them that a flat payload read the fast way can hold, as they are: the common payload
#: known in one test, with no per-key work.
_EXACT = _ANY | {name + suffix for name in _ANY for suffix in _HISTOGRAM}
_DIGITS = re.compile(r"\d+")
_NAME_CUT = 40
#: What a connector name kvwatch does not know is shown as in a flat payload (which names none).
UNNAMED = "(unknown connector)"


@dataclass(frozen=True, slots=True)
class Unread:
    """Keys of one connector's part of a payload that kvwatch does not know; `known`: whether it knows
    the connector (then these are keys its releases never printed: drift)."""

    connector: str
    keys: tuple[str, ...]
    known: bool


def known_key(key: str, names: frozenset[str]) -> bool:
    """Whether `key` is one of `names`, or a metric name of them with labels (`name:('fs',)`) or a
    histogram's `_count` / `_sum` (after its labels, if any)."""
    if key in names:
        return True
    name = key.partition(":(")[0] if ":(" in key else key
    if name in names:
        return True
    return any(name.endswith(suffix) and name[: -len(suffix)] in names for suffix in _HISTOGRAM)


def _guess(keys: Sequence[str]) -> str | None:
    """The connector a flat payload's keys are most of (the first declared on a tie), None for none."""
    best, most = None, 0
    for name, names in CONNECTORS.items():
        found = sum(known_key(key, names) for key in keys)
        if found > most:
            best, most = name, found
    return best


class _Verdicts(dict[tuple[str, str], bool]):
    """known_key() of a (connector, key) against the connector's keys (connector "": any connector's),
    remembered: a log repeats a few keys on every line."""

    def __missing__(self, item: tuple[str, str]) -> bool:
        if len(self) >= 4096:
            self.clear()
        connector, key = item
        verdict = self[item] = known_key(key, CONNECTORS[connector] if connector else _ANY)
        return verdict


_KNOWN = _Verdicts()


def unread(values: Mapping[str, float], keys: Sequence[tuple[str, str]]) -> list[Unread]:
    """The keys of a payload kvwatch does not know, by connector ([]: none). `keys`: each item's
    (connector, key) as kvwatch.engines.vllm.kv's general reader found them, the connector "" for a flat
    item; empty when the payload was read the fast way: then `values`' keys are its (flat) keys."""
    if not keys:
        if _EXACT.issuperset(values):
            return []
        keys = [("", key) for key in values]
    parts: dict[str, list[str]] = {}
    for connector, key in keys:
        parts.setdefault(connector, []).append(key)
    found: list[Unread] = []
    known = _KNOWN
    for connector, names in parts.items():
        if connector and connector not in CONNECTORS:  # a plugin's: none of its keys was ever read
            found.append(Unread(_DIGITS.sub("N", connector)[:_NAME_CUT], tuple(names), False))
            continue
        # (a flat payload names no connector: a key any connector prints is known)
        extra = tuple(key for key in names if not known[connector, key])
        if not extra:
            continue
        if connector:
            found.append(Unread(connector, extra, True))
        else:  # named for the connector it holds most keys of; none: a plugin's
            guessed = _guess(names)
            found.append(Unread(guessed or UNNAMED, extra, guessed is not None))
    return found
