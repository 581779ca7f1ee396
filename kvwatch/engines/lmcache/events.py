"""The events LMCache's parser makes of its lines: LMCache's own vocabulary (the engine-neutral
values they are, or carry, are in kvwatch.model)."""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.model import OffloadFailure, OffloadLookup, OffloadTransfer, pickle_by_fields


@dataclass(slots=True)
class LmcacheLookup(OffloadLookup):
    """LMCache's `Reqid: ...` lookup lines (the first with a number per request id), summed."""


@dataclass(slots=True)
class LmcacheTransfer(OffloadTransfer):
    """LMCache's `Stored ...` / `Retrieved ...` lines of one worker, summed."""


@dataclass(slots=True)
class LmcacheFailure(OffloadFailure):
    """An LMCache WARNING/ERROR line about a failed retrieve or memory pressure."""


@dataclass(slots=True)
class LmcacheStoreRequest:
    """LMCache's `Storing KV cache for N out of M tokens` (the connector hands a request's new tokens
    to LMCache; INFO up to 0.3.12, DEBUG from 0.3.15)."""

    source: str
    time: float
    worker: str
    tokens: int
    total: int


@dataclass(slots=True)
class LmcachePrefetch:
    """The LMCache server's (MP mode) `Prefetch request completed (L1+L2)`: keys (chunks) found of
    those asked, logged only when some were found."""

    source: str
    time: float
    hit_keys: int
    requested_keys: int
    seconds: float


pickle_by_fields(globals())
