"""LMCache records exactly as each release prints them (format strings, `file:lineno` and colours read
from the PyPI packages: `pip download lmcache==X --no-deps`, lmcache/logging.py,
lmcache/integration/vllm/vllm_v1_adapter.py, lmcache/v1/cache_engine.py,
lmcache/v1/multiprocess/server.py, lmcache/v1/distributed/storage_manager.py)."""

from __future__ import annotations

from datetime import datetime, timezone

NS = 1_000_000_000
COLOURS = {"DEBUG": "\x1b[1m", "INFO": "\x1b[32;20m", "WARNING": "\x1b[33;20m", "ERROR": "\x1b[31;20m"}
ADAPTER = "lmcache.integration.vllm.vllm_v1_adapter"
ENGINE = "lmcache.v1.cache_engine"
#: The logging call's line per release: lookup (adapter), store and retrieve (cache_engine), error pair.
WHERE: dict[str, dict[str, int]] = {
    "0.3.9": {"lookup": 1206, "storing": 1094, "stored": 292, "retrieved": 513, "error": 891, "numbers": 895,
              "block": 1180},
    "0.3.12": {"lookup": 1602, "storing": 1374, "stored": 446, "retrieved": 742, "error": 1083, "numbers": 1089,  # noqa: E501
               "block": 1492},
    "0.4.4": {"lookup": 1327, "stored": 552, "retrieved": 886, "error": 854, "numbers": 860, "block": 1664},
    "0.5.6": {"lookup": 1476, "min_retrieve": 1464, "stored": 588, "retrieved": 985, "error": 876, "numbers": 882,  # noqa: E501
              "block": 1793, "pressure": 519},
}  # fmt: skip

#: A remote tier's lines (lmcache 0.5.6): the adapter's DEBUG `Storing KV cache ...` (wait_for_save), the
#: remote backend's INFO `Connected to remote storage at %s, remote_mla_worker_id_as_0 mode: %s`, and
#: v1/storage_backend/connector/instrumented_connector.py's DEBUG batched_put / batched_get lines.
REMOTE: dict[str, dict[str, int]] = {
    "0.5.6": {"storing": 1193, "connected": 84, "offloaded": 194, "loaded": 166}
}
INSTRUMENTED = "lmcache.v1.storage_backend.connector.instrumented_connector"
#: RedisConnector has no __repr__: InstrumentedRemoteConnector's name holds object.__repr__'s address.
REDIS = "InstrumentedRemoteConnector(<lmcache.v1.storage_backend.connector.redis_connector.RedisConnector object at 0x7f3a5c1e2d90>)"  # noqa: E501


def bytes_offloaded(version: str, t: int, mbytes: float, ms: float) -> str:
    """`[%s]Bytes offloaded: %.3f MBytes in %.3f ms` (0.3.15-0.5.6; 0.3.9-0.3.12's f-string: `in %.3fms`)."""
    message = f"[{REDIS}]Bytes offloaded: {mbytes:.3f} MBytes in {ms:.3f} ms"
    return record(
        "DEBUG", t, message, "instrumented_connector.py", REMOTE[version]["offloaded"], INSTRUMENTED
    )


def bytes_loaded(version: str, t: int, mbytes: float, ms: float) -> str:
    """`[%s]Bytes loaded: %.3f MBytes in %.3f ms` (batched_get)."""
    message = f"[{REDIS}]Bytes loaded: {mbytes:.3f} MBytes in {ms:.3f} ms"
    return record("DEBUG", t, message, "instrumented_connector.py", REMOTE[version]["loaded"], INSTRUMENTED)


def record(level: str, t: int, message: str, file: str, lineno: int, name: str) -> str:  # noqa: PLR0917
    """One record of LMCache's CustomFormatter (lmcache/logging.py), local time = UTC, with its newline."""
    moment = datetime.fromtimestamp(t // NS, tz=timezone.utc)
    stamp = moment.strftime("%Y-%m-%d %H:%M:%S") + f",{(t % NS) // 1_000_000:03d}"
    return (
        f"{COLOURS[level]}[{stamp}] LMCache {level}:\x1b[0m {message} "
        f"\x1b[3m({file}:{lineno}:{name})\x1b[0m\n"
    )


def lookup(version: str, rid: str, total: int, computed: int, hit: int, need: int) -> str:  # noqa: PLR0917
    """The scheduler's lookup message: 0.3.15+ with the computed tokens and max(need, 0)."""
    if version.startswith("0.3.") and version != "0.3.15":
        return f"Reqid: {rid}, Total tokens {total}, LMCache hit tokens: {hit}, need to load: {need}"
    return (
        f"Reqid: {rid}, Total tokens {total}, Inference Engine computed tokens: {computed}, "
        f"LMCache hit tokens: {hit}, need to load: {max(need, 0)}"
    )


def stored(version: str, rid: str, n: int, m: int, gib: float, ms: float) -> str:  # noqa: PLR0917
    """cache_engine's store message (`gb` and no req_id up to 0.3.12)."""
    put = ms * 0.6
    tail = f"cost {ms:.4f} ms, throughput: {gib / (ms / 1000):.4f} GB/s; offload_time: {ms - put:.4f} ms, put_time: {put:.4f} ms"  # noqa: E501
    if version.startswith("0.3.") and version != "0.3.15":
        return f"Stored {n} out of total {m} tokens. size: {gib:.4f} gb, {tail}"
    return f"[req_id={rid}] Stored {n} out of total {m} tokens. size: {gib:.4f} GB, {tail}"


def retrieved(  # noqa: PLR0917
    version: str, rid: str, n: int, required: int, total: int, gib: float, ms: float
) -> str:
    """cache_engine's retrieve message (0.3.9+; req_id from 0.3.15)."""
    text = (
        f"Retrieved {n} out of {required} required tokens (from {total} total tokens). size: {gib:.4f} gb, "
        f"cost {ms:.4f} ms, throughput: {gib / (ms / 1000):.4f} GB/s;"
    )
    if version.startswith("0.3.") and version != "0.3.15":
        return text
    return f"[req_id={rid}] {text}"
