"""The vocabulary: the small value types that cross each seam of the pipeline.

sources -> LogLine -> parsers -> Event -> metrics / detectors -> Finding -> alerts -> Alert -> notifiers.
This module imports nothing of kvwatch's own, so every stage can depend on it.
Times are float seconds since the Unix epoch, UTC, taken from the logs (event time), never the wall clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any, Literal, Protocol

Severity = Literal["critical", "warning", "info"]
AlertState = Literal["firing", "resolved"]


# Not frozen: one is built per line on the hot path, and a frozen dataclass's __init__ costs three times
# as much (it sets each field through object.__setattr__). Nothing changes a LogLine once made.
@dataclass(slots=True)
class LogLine:
    """One logical log line of a source, without its line ending; `time` is the transport's, if any;
    `origin` the process that wrote it where the transport names one apart from the text (journald's
    `SYSLOG_IDENTIFIER[_PID]`): one source can carry several processes' lines."""

    source: str
    text: str
    time: float | None = None
    origin: str | None = None


# ---------------------------------------------------------------------------------------------
# Events: what parsers make of lines. Each carries the source name and its event time. Like LogLine
# they are not frozen (a frozen init costs ~2 us against ~0.3 us, per event on the replay's hot path);
# nothing changes an event after its parser made it.
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class CacheRateSample:
    """Engine-neutral: one engine's periodic stats line (the `cache_rate` signal): the traffic it covers
    and the cache's hit rates over it.

    `engine` is the engine index without padding ("0" when the line has none, "all" when aggregated).
    Ratios are 0-1; None means the line did not carry the field. `kv_device` is the device label of
    the usage read.
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


@dataclass(slots=True)
class OffloadCounters:
    """Engine-neutral: one engine's offload counters over one logging interval (the `offload` signal).

    `store_bytes` / `load_bytes` are 0 when the engine's line lacks one of its byte counts, and None
    when it carries no byte counts at all (a connector that reports none: unknown, not zero);
    `lookups` is None where not reported. A connector that counts KV blocks, not bytes, gives
    `store_blocks` / `load_blocks` instead (None: the line counts no blocks; 0: none this interval).
    """

    source: str
    time: float
    engine: str
    store_bytes: int | None
    load_bytes: int | None
    lookups: int | None
    store_blocks: int | None = None
    load_blocks: int | None = None


@dataclass(slots=True)
class EngineFact:
    """A startup fact detectors need (version, connector, excluded KV groups, KV capacity, ...).

    Known keys: version, connector, connector_config, kv_offloading_size, spec_method,
    offload_excluded_groups, hybrid_kv_disabled, stats_disabled, kv_capacity_tokens, block_size,
    platform (vLLM's detected platform, e.g. cpu), device (the engine config's device_config), model
    (the model served, as clients name it), prefix_caching (vLLM's enable_prefix_caching, True/False),
    simple_offload (vLLM's SimpleCPU connector).
    """

    source: str
    time: float
    key: str
    value: str
    engine: str = "0"


@dataclass(slots=True)
class RequestRecord:
    """One request, engine-neutral: an engine's request event may be (a subclass of) this, or its
    engine converts its own events into these (kvwatch.engines.capabilities.ConvertsRequests).

    `conversation` names the conversation the engine shows the request continues ("": not known);
    `reprocess_cause` why the engine re-processed the prompt in full, where its lines say a cause the
    detectors word differently (`memory_truncate_failed`: llama.cpp could not cut its memory back; "":
    none told);
    `selection` how the engine chose where to serve it ("": not told); `derived` marks counts inferred
    (less exact); `entry` the gateway entry point it came through (None: not a gateway's); `server` the
    process that served it where one source carries several (a journal's `name[pid]`; None: the source's
    only one): once a source's requests name a second server, windows keep each server's apart and the
    request detectors judge each on its own.
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
    server: str | None = None
    reprocess_cause: str = ""


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
class ServerRestart:
    """The engine process (re)started: per-source state from before no longer applies. `server`: the
    process that started where the source names its processes (a journal's `name[pid]`, a compose
    service; None: the source's whole history goes): where the source carries several servers, only
    its history, and that of those that said they stopped (`ServerStopped`), goes."""

    source: str
    time: float
    engine_kind: str
    server: str | None = None


@dataclass(slots=True)
class ServerStopped:
    """One of the processes a source names said it is exiting (llama-server's `cleaning up before
    exit`): its requests still tell of it, until a process of the source starts (the one that
    replaces it, most often)."""

    source: str
    time: float
    server: str


@dataclass(slots=True)
class EngineFailed:
    """Engine-neutral: the engine stopped on an error. `phase` is "startup" (it never served since it
    last started) or "crash" (it had served); `error` is its last error line as logged (the root
    cause where a traceback shows one); `cause` names the KV connector or offload setting the error
    comes from ("" when it is none of those); `engine` is the engine's display name."""

    source: str
    time: float
    engine: str
    phase: Literal["startup", "crash"]
    error: str
    cause: str = ""


@dataclass(slots=True)
class EngineReady:
    """Engine-neutral: the engine finished starting and serves (a failure before it is over)."""

    source: str
    time: float
    engine: str


@dataclass(slots=True)
class UnreadFields:
    """A line of a shape kvwatch knows carried fields it does not know: the line was read for what it
    knows, and these are counted. `shape` is sanitised: field names with numbers masked, no values."""

    source: str
    time: float
    engine: str
    shape: str
    count: int = 1


class Event(Protocol):
    """What parsers make of lines: any event carries its source's name and its event time. The
    engine-neutral ones are here; each engine's own are in its package (kvwatch/engines/<name>/events.py)."""

    source: str
    time: float


# ---------------------------------------------------------------------------------------------
# Detection and alerting
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    """A detector's verdict at one event time: the problem is present with this evidence.

    `server`: the server whose requests a request detector judged, labelled or not (a source's only
    server is not labelled): kvwatch.alerts keeps one incident one alert when that label comes or goes.
    """

    alert: str
    labels: tuple[tuple[str, str], ...]
    severity: Severity
    summary: str
    cause: str
    fix: str
    evidence: dict[str, Any]
    server: str | None = None


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


def pickle_by_fields(namespace: Mapping[str, Any]) -> None:
    """Give every dataclass a module (`namespace`: its globals()) defines the pickling by fields above
    (an engine's events module calls it last)."""
    module = namespace["__name__"]
    for cls in list(namespace.values()):
        if isinstance(cls, type) and cls.__module__ == module and hasattr(cls, "__dataclass_fields__"):
            _reduce_by_fields(cls)


# ---------------------------------------------------------------------------------------------
# What an engine hands the windows and detectors (through kvwatch.windows.facts.EngineFacts): they
# name no engine, the pipeline passes them the registry's answers.
# ---------------------------------------------------------------------------------------------

#: How exactly a request's counts were read: from the engine's own lines ("exact"), derived from its
#: timings at default verbosity ("derived"), or derived for a request whose start was not read ("joined").
Basis = Literal["exact", "derived", "joined"]

#: An engine's own wording of one engine-neutral alert's finding: the finding with the cause and fix its
#: users act on (kvwatch.detectors.advice).
Advise = Callable[["Finding"], "Finding"]

#: An engine's own no_signal verdict: (source name, the source's facts) -> its finding, or None.
Blindness = Callable[[str, Mapping[str, str]], "Finding | None"]


class RequestAdapter(Protocol):
    """One source's conversion of an engine's request events into engine-neutral request records."""

    def convert(self, event: Any) -> tuple[Basis | None, RequestRecord | None]:
        """How exactly the event counts a request (None: not counted), and its record (None: its
        counts are not known, or it is no request)."""

    def restart(self) -> None:
        """The engine restarted: forget what was known of the process before."""


pickle_by_fields(globals())
