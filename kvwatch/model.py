"""The vocabulary: the small value types that cross each seam of the pipeline.

sources -> LogLine -> parsers -> Event -> metrics / detectors -> Finding -> alerts -> Alert -> notifiers.
This module imports nothing of kvwatch's own, so every stage can depend on it.
Times are float seconds since the Unix epoch, UTC, taken from the logs (event time), never the wall clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, Literal

Severity = Literal["critical", "warning", "info"]
AlertState = Literal["firing", "resolved"]


# Not frozen: one is built per line on the hot path, and a frozen dataclass's __init__ costs three times
# as much (it sets each field through object.__setattr__). Nothing changes a LogLine once made.
@dataclass(slots=True)
class LogLine:
    """One logical log line of a source, without its line ending; `time` is the transport's, if any."""

    source: str
    text: str
    time: float | None = None


# ---------------------------------------------------------------------------------------------
# Events: what parsers make of lines. Each carries the source name and its event time. Like LogLine
# they are not frozen (a frozen init costs ~2 us against ~0.3 us, per event on the replay's hot path);
# nothing changes an event after its parser made it.
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class VllmStats:
    """One engine's periodic stats line (V1 `loggers.py`, or V0 `metrics.py` with its prefix line).

    `engine` is the engine index without padding ("0" when the line has none, "all" when aggregated).
    Ratios are 0-1; None means the line did not carry the field. `kv_device` is the device label of
    the usage read (V0: the column holding the engine's KV cache, CPU on the CPU backend from 0.9.0).
    """

    source: str
    time: float
    engine: str
    prompt_throughput: float
    generation_throughput: float
    running: int
    waiting: int
    kv_cache_usage: float | None
    prefix_hit: float | None = None
    external_hit: float | None = None
    preemptions: int = 0
    kv_device: str = "GPU"
    v0: bool = False

    def __reduce__(self) -> tuple[type[VllmStats], tuple[Any, ...]]:
        """Pickled as its fields in order (replay's parsing child sends one per stats line)."""
        return VllmStats, _VLLMSTATS_FIELDS(self)


_VLLMSTATS_FIELDS = attrgetter(*(f.name for f in fields(VllmStats)))


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
class VllmKvTransfer:
    """One `KV Transfer metrics:` line: per-interval deltas, attributed to the engine logged just above.

    `store_bytes` / `load_bytes` are 0 when their key is missing from a line that has byte keys, and None
    when the line carries no byte counts at all (a connector that reports none: unknown, not zero).
    `values` keeps every numeric key as printed (nested MultiConnector dicts flattened with "/"); the
    vLLM parser's are read from the line on first use.
    """

    source: str
    time: float
    engine: str
    store_bytes: int | None
    load_bytes: int | None
    lookups: int | None
    values: Mapping[str, float] = field(default_factory=dict)

    def __reduce__(self) -> tuple[type[VllmKvTransfer], tuple[Any, ...]]:
        """Pickled as its fields in order (replay's parsing child sends one per KV Transfer line)."""
        return VllmKvTransfer, _VLLMKV_FIELDS(self)


_VLLMKV_FIELDS = attrgetter(*(f.name for f in fields(VllmKvTransfer)))


@dataclass(slots=True)
class VllmSpecDecoding:
    """One `SpecDecoding metrics:` line, attributed to the engine logged just above."""

    source: str
    time: float
    engine: str
    accepted_tokens: int
    drafted_tokens: int


@dataclass(slots=True)
class EngineFact:
    """A startup fact detectors need (version, connector, excluded KV groups, KV capacity, ...).

    Known keys: version, connector, connector_config, kv_offloading_size, spec_method,
    offload_excluded_groups, hybrid_kv_disabled, stats_disabled, kv_capacity_tokens, block_size,
    platform (vLLM's detected platform, e.g. cpu), device (the engine config's device_config).
    """

    source: str
    time: float
    key: str
    value: str
    engine: str = "0"


@dataclass(slots=True)
class LlamaRequest:
    """One llama.cpp request joined from its slot lines.

    Token counts are None when the log did not show them; `derived` marks counts inferred from the
    timing lines at default verbosity (less exact than `memory_seq_rm`).
    """

    source: str
    time: float
    slot: int
    task: int
    prompt_tokens: int | None
    reused_tokens: int | None
    new_tokens: int | None
    selection: Literal["lcp", "lru", "id", "unknown"]
    sim_best: float | None = None
    f_keep: float | None = None
    prompt_cache_rescue: bool = False
    full_reprocess: bool = False
    checkpoint_restores: int = 0
    prompt_eval_seconds: float | None = None
    derived: bool = False

    def __reduce__(self) -> tuple[type[LlamaRequest], tuple[Any, ...]]:
        """Pickled as its fields in order: replay's parsing child sends thousands (a third of the cost)."""
        return LlamaRequest, _LLAMA_FIELDS(self)


_LLAMA_FIELDS = attrgetter(*(f.name for f in fields(LlamaRequest)))


@dataclass(slots=True)
class RequestRecord:
    """One request, engine-neutral: an engine's request event may be (a subclass of) this, or its
    engine's `requests` adapter converts its own events into these (kvwatch.engines.base).

    `conversation` names the conversation the engine shows the request continues ("": not known);
    `selection` how the engine chose where to serve it ("": not told); `derived` marks counts inferred
    (less exact); `entry` the gateway entry point it came through (None: not a gateway's).
    """

    source: str
    time: float
    prompt_tokens: int
    cached_tokens: int
    full_reprocess: bool = False
    slot: int | None = None
    conversation: str = ""
    selection: str = ""
    derived: bool = False
    entry: str | None = None


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

    def __reduce__(self) -> tuple[type[SglangPrefill], tuple[Any, ...]]:
        """Pickled as its fields in order (replay's parsing child sends one per batch line)."""
        return SglangPrefill, _SGLANGPREFILL_FIELDS(self)


_SGLANGPREFILL_FIELDS = attrgetter(*(f.name for f in fields(SglangPrefill)))


@dataclass(slots=True)
class SglangDecode:
    """One decode stats line (every `--decode-log-interval` iterations) of one DP rank."""

    source: str
    time: float
    engine: str
    family: str
    running: int
    queued: int | None
    tokens: int | None
    usage: tuple[tuple[str, float], ...]
    throughput: float | None

    def __reduce__(self) -> tuple[type[SglangDecode], tuple[Any, ...]]:
        """Pickled as its fields in order (replay's parsing child sends one per batch line)."""
        return SglangDecode, _SGLANGDECODE_FIELDS(self)


_SGLANGDECODE_FIELDS = attrgetter(*(f.name for f in fields(SglangDecode)))


@dataclass(slots=True)
class SglangRequest(RequestRecord):
    """One request: from a `--log-requests` `Finish:` line (exact) or from prefill batches (`derived`).

    `tiers` splits the cached tokens by tier (`device`, `host`, `storage`) where the log does.
    """

    tiers: tuple[tuple[str, int], ...] = ()
    derived: bool = False

    def __reduce__(self) -> tuple[type[SglangRequest], tuple[Any, ...]]:
        """Pickled as its fields in order (replay's parsing child sends one per batch line)."""
        return SglangRequest, _SGLANGREQUEST_FIELDS(self)


_SGLANGREQUEST_FIELDS = attrgetter(*(f.name for f in fields(SglangRequest)))


@dataclass(slots=True)
class SglangHicacheError:
    """A HiCache WARNING/ERROR line (failed storage write or page fetch, dead backup thread)."""

    source: str
    time: float
    kind: str


@dataclass(slots=True)
class CachePrefetch:
    """A cache tier's prefetch ended (e.g. storage -> host), engine-neutral: `outcome` is `success`,
    `dropped` or `declined`; `benign` marks an outcome the engine documents as expected."""

    source: str
    time: float
    tier: str
    outcome: str
    tokens: int
    benign: bool = False


@dataclass(slots=True)
class OffloadLookup:
    """Engine-neutral: lookups of an external KV cache tier (an offload layer) for requests: their
    tokens, the prefix the tier holds, what must be loaded, and what the engine's own prefix cache
    already had (None: not reported), summed over `lookups` of them."""

    source: str
    time: float
    query_tokens: int
    hit_tokens: int
    need_load_tokens: int
    local_tokens: int | None = None
    lookups: int = 1  # lookups summed (a parser may sum a stretch of them)
    hits: int = -1  # of them, those that found a prefix (-1: this one, if hit_tokens > 0)


@dataclass(slots=True)
class OffloadTransfer:
    """Engine-neutral: KV stored into (`load` False) or loaded back from (`load` True) an external tier
    by one worker, summed over `lines` log lines: tokens written or loaded, tokens offered or required
    (None: not reported), bytes and seconds (None: not reported), loads that fell short."""

    source: str
    time: float
    worker: str
    load: bool
    tokens: int
    asked: int | None = None
    bytes: float | None = None
    seconds: float | None = None
    lines: int = 1
    short: int = 0
    request: str = ""  # the request of a one-line transfer, where printed


@dataclass(slots=True)
class OffloadFailure:
    """Engine-neutral: an external tier's failure on one worker: `kind` (e.g. `retrieve_error`), the
    request (its id, "" when not printed) and the tokens it lost (None: not printed)."""

    source: str
    time: float
    worker: str
    kind: str
    request: str = ""
    tokens: int | None = None
    retrieve: bool = True  # a failed load (False: a store or memory-pressure problem)


@dataclass(slots=True)
class LmcacheLookup(OffloadLookup):
    """LMCache's `Reqid: ...` lookup lines (the first with a number per request id), summed."""

    def __reduce__(self) -> tuple[type[LmcacheLookup], tuple[Any, ...]]:
        return LmcacheLookup, _LOOKUP_FIELDS(self)


_LOOKUP_FIELDS = attrgetter(*(f.name for f in fields(LmcacheLookup)))


@dataclass(slots=True)
class LmcacheTransfer(OffloadTransfer):
    """LMCache's `Stored ...` / `Retrieved ...` lines of one worker, summed."""

    def __reduce__(self) -> tuple[type[LmcacheTransfer], tuple[Any, ...]]:
        return LmcacheTransfer, _TRANSFER_FIELDS(self)


_TRANSFER_FIELDS = attrgetter(*(f.name for f in fields(LmcacheTransfer)))


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


@dataclass(slots=True)
class OllamaRequest(RequestRecord):
    """One Ollama request's cache use: an MLX `cache hit`/`cache miss`, a `loading cache slot`, or a
    request its bundled llama-server logged; `runner` is the runner's port ("" when not known)."""

    runner: str = ""
    model: str = ""
    matched: int | None = None  # MLX: the trie's match, of which `cached_tokens` could be restored
    derived: bool = False  # llama-server: reuse derived from its timing lines


@dataclass(slots=True)
class OllamaAccess:
    """One `[GIN]` access line of Ollama's HTTP server: a request, its status and latency."""

    source: str
    time: float
    status: int
    seconds: float
    method: str
    path: str


@dataclass(slots=True)
class OllamaCacheEvent:
    """An Ollama runner's cache event: `clear` (removal or shift unsupported, cache dropped),
    `failed_restore` (MLX), `context_shift`, `eviction`, `fork`."""

    source: str
    time: float
    kind: Literal["clear", "failed_restore", "context_shift", "eviction", "fork"]
    runner: str = ""


@dataclass(slots=True)
class LmstudioRequest(RequestRecord):
    """One LM Studio request's cache use: mlx-engine's `Prompt cache: using N/M` (text models) or
    `Prompt cache restore:` (vision/batched, with its lifetime efficiency 0-1), or its llama.cpp
    runtime's `Cache reuse summary`; `runtime` names which ("mlx", "mlx-vision", "llama.cpp")."""

    model: str = ""
    runtime: str = ""
    lifetime_efficiency: float | None = None


@dataclass(slots=True)
class LmstudioCompletion:
    """LM Studio's `Running chat completion on conversation with N messages.`: one request began."""

    source: str
    time: float
    model: str


@dataclass(slots=True)
class LmstudioCacheEvent:
    """mlx-engine dropped or trimmed its prompt cache: `clear` (with its `reason`) or `trim` (`tokens`)."""

    source: str
    time: float
    kind: Literal["clear", "trim"]
    reason: str = ""
    tokens: int = 0


@dataclass(slots=True)
class LmstudioDiskUsage:
    """mlx-engine's vision prompt cache on disk: `VLM prompt cache disk usage` (MiB in the line)."""

    source: str
    time: float
    used_bytes: float
    cap_bytes: float
    records: int


@dataclass(slots=True)
class UsageRecord:
    """One completed request from a gateway usage log (#6); prompt includes cached tokens."""

    source: str
    time: float
    entry: str
    model: str
    prompt_tokens: int
    cached_tokens: int
    cache_creation_tokens: int = 0
    input_tokens: int | None = None
    client: str = ""
    channel: str = ""
    upstream_prompt_tokens: int | None = None  # the upstream (OpenAI-style) prompt_tokens, when logged too


@dataclass(slots=True)
class UsageSkipped:
    """A usage-log row that is no completed request (an error row, another row type, no usage)."""

    source: str
    time: float
    reason: str


@dataclass(slots=True)
class ServerRestart:
    """The engine process (re)started: per-source state from before no longer applies."""

    source: str
    time: float
    engine_kind: str


@dataclass(slots=True)
class UnreadFields:
    """A line of a shape kvwatch knows carried fields it does not know: the line was read for what it
    knows, and these are counted. `shape` is sanitised: field names with numbers masked, no values."""

    source: str
    time: float
    engine: str
    shape: str
    count: int = 1


Event = (
    VllmStats
    | VllmPrefixV0
    | VllmKvTransfer
    | VllmSpecDecoding
    | EngineFact
    | LlamaRequest
    | RequestRecord
    | CachePrefetch
    | SglangPrefill
    | SglangDecode
    | SglangRequest
    | SglangHicacheError
    | OllamaAccess
    | OllamaCacheEvent
    | LmstudioCompletion
    | LmstudioCacheEvent
    | LmstudioDiskUsage
    | UsageRecord
    | UsageSkipped
    | ServerRestart
    | OffloadLookup
    | OffloadTransfer
    | OffloadFailure
    | LmcacheStoreRequest
    | LmcachePrefetch
    | UnreadFields
)


# ---------------------------------------------------------------------------------------------
# Detection and alerting
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    """A detector's verdict at one event time: the problem is present with this evidence."""

    alert: str
    labels: tuple[tuple[str, str], ...]
    severity: Severity
    summary: str
    cause: str
    fix: str
    evidence: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Alert:
    """One alert transition as notifiers and `replay --format json` see it."""

    alert: str
    labels: dict[str, str]
    severity: Severity
    state: AlertState
    at: float
    summary: str
    cause: str
    fix: str
    evidence: dict[str, Any]

    def fingerprint(self) -> str:
        """Identity of the alert: its name plus its sorted labels."""
        return self.alert + "{" + ",".join(f"{k}={v}" for k, v in sorted(self.labels.items())) + "}"


@dataclass(slots=True)
class SourceCounts:
    """What one source's lines came to (kept as plain ints on the hot path; metrics export them)."""

    lines: int = 0
    recognized: int = 0
    errors: int = 0
    truncated: int = 0

    def parsed(self) -> tuple[int, int, int]:
        """(lines, recognized, errors): what parsing adds to (a child's copy comes back as this)."""
        return self.lines, self.recognized, self.errors

    def add(self, parsed: tuple[int, int, int]) -> None:
        """Add what parsing elsewhere (in a child, on its own copy) added: see parsed()."""
        self.lines += parsed[0]
        self.recognized += parsed[1]
        self.errors += parsed[2]


def _reduce_by_fields(cls: type) -> None:
    """Pickle `cls` as (cls, its field values): a forked child sends every event through a pipe, and
    this halves a slots dataclass's pickling both ways (its default goes through a Python-level
    __getstate__/__setstate__ and a dict per object)."""
    names = [f.name for f in fields(cls)]
    # (attrgetter of one name gives the value, not a 1-tuple; a field outside __init__ cannot be passed)
    if len(names) < 2 or not all(f.init for f in fields(cls)):
        return
    values = attrgetter(*names)

    def reduce_ex(self: object, protocol: Any) -> Any:
        if type(self) is cls:
            return cls, values(self)
        return object.__reduce_ex__(self, protocol)  # (a subclass defined elsewhere: its own fields)

    cls.__reduce_ex__ = reduce_ex  # type: ignore[method-assign, assignment]


for _cls in list(globals().values()):
    if isinstance(_cls, type) and _cls.__module__ == __name__ and hasattr(_cls, "__dataclass_fields__"):
        _reduce_by_fields(_cls)
del _cls
