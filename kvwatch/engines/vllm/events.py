"""The events vLLM's parser makes of its lines: vLLM's own vocabulary (the engine-neutral
values they are, or carry, are in kvwatch.model)."""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.model import CacheRateSample, OffloadCounters, pickle_by_fields


@dataclass(slots=True)
class VllmStats(CacheRateSample):
    """vLLM's periodic stats line (V1 `loggers.py`, or V0 `metrics.py` with its prefix line); `kv_device`
    is V0's column holding the engine's KV cache (CPU on the CPU backend from 0.9.0)."""

    v0: bool = False


@dataclass(slots=True)
class VllmPrefixV0:
    """V0's separate `Prefix cache hit rate: GPU: x%, CPU: y%` record: the KV cache's rate, swap's apart.

    `device` is the column the cache's rate `hit` was read from: GPU, or CPU where the engine runs on
    the CPU backend and prints its cache there (0.9.0-0.10.2); `swap_hit` is the other column's.
    """

    source: str
    time: float
    engine: str
    hit: float
    swap_hit: float
    device: str = "GPU"


@dataclass(slots=True)
class VllmKvTransfer(OffloadCounters):
    """One `KV Transfer metrics:` line: per-interval deltas, attributed to the engine logged just above."""


@dataclass(slots=True)
class VllmSpecDecoding:
    """One `SpecDecoding metrics:` line, attributed to the engine logged just above."""

    source: str
    time: float
    engine: str
    accepted_tokens: int
    drafted_tokens: int


pickle_by_fields(globals())
