"""The events SGLang's parser makes of its lines: SGLang's own vocabulary (the engine-neutral
values they are, or carry, are in kvwatch.model)."""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.model import RequestRecord, pickle_by_fields


@dataclass(slots=True)
class SglangPrefill:
    """One `Prefill batch` (`new fill batch` in 0.1.x) line of one DP rank (`engine`).

    `family` names the version family the line's shape belongs to; None: the line did not carry it.
    `usage` holds the KV pool fractions by pool (`full`, `swa`, `mamba`).
    """

    source: str
    time: float
    engine: str
    family: str
    seqs: int
    computed: int
    cached: int
    running: int | None
    queued: int | None
    pending: int | None
    usage: tuple[tuple[str, float], ...]
    throughput: float | None


@dataclass(slots=True)
class SglangDecode:
    """One decode stats line (every `--decode-log-interval` iterations) of one DP rank.

    `cached_tokens` is the line's `#cached-token` (sglang main after v0.5.23): the sum of `cached_tokens`
    over the requests in the running batch at that moment, nonzero only on a PD decode instance with
    `--disaggregation-decode-enable-radix-cache`. A snapshot, not a count: a request is in it on every
    decode line while it runs, so it is never added to the prefill lines' cached tokens. None: not printed.
    """

    source: str
    time: float
    engine: str
    family: str
    running: int
    queued: int | None
    tokens: int | None
    usage: tuple[tuple[str, float], ...]
    throughput: float | None
    cached_tokens: int | None = None


@dataclass(slots=True)
class SglangRequest(RequestRecord):
    """One request: from a `--log-requests` `Finish:` line (exact) or from prefill batches (`derived`).

    `tiers` splits the cached tokens by tier (`device`, `host`, `storage`) where the log does.
    """

    tiers: tuple[tuple[str, int], ...] = ()
    derived: bool = False


@dataclass(slots=True)
class SglangHicacheError:
    """A HiCache WARNING/ERROR line (failed storage write or page fetch, dead backup thread)."""

    source: str
    time: float
    kind: str


pickle_by_fields(globals())
