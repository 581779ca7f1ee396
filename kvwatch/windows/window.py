"""Event-time windows per source: the recent history that detectors judge, bounded in time and count.

`Windows.observe(event)` is the only writer. Detectors read it as plain data. Nothing here reads a clock:
entries older than the horizon are dropped relative to the newest event time seen. An engine's cache-rate
samples and offload counters (kvwatch.model.CacheRateSample, OffloadCounters) are kept as points, one
per run of lines that share an event time (engines stamp whole seconds), each summarising its lines
exactly, so a flood of lines costs one point a second. An engine's request events become
engine-neutral request points through its adapter (kvwatch.model.RequestAdapter), one per source,
or are `RequestRecord`s themselves. What windows know of the engines (which makes an event, which
converts requests, what a restart forgets) is handed in (kvwatch.windows.facts.EngineFacts).
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import islice
from typing import Any, NamedTuple, TypeVar

from kvwatch.model import (
    CachePrefetch,
    CacheRateSample,
    EngineFact,
    EngineFailed,
    EngineReady,
    Event,
    Finding,
    OffloadCounters,
    OffloadFailure,
    OffloadLookup,
    OffloadTransfer,
    RequestAdapter,
    RequestRecord,
    ServerRestart,
    ServerStopped,
    UsageRecord,
)
from kvwatch.windows.facts import EngineFacts
from kvwatch.windows.offloads import OffloadHistory
from kvwatch.windows.usages import UsageWindows

Labels = tuple[tuple[str, str], ...]
K = TypeVar("K")
V = TypeVar("V")
#: How a window takes one event of a type in (Windows._known chooses it).
_Take = Callable[["SourceWindow", Any], None]
#: The event types windows keep something of, besides those an engine's request adapter converts
#: (others only name their source's engine).
_KEPT = (
    CacheRateSample, OffloadCounters, EngineFact, UsageRecord, RequestRecord,
    CachePrefetch, ServerRestart, OffloadLookup, OffloadTransfer, OffloadFailure,
    EngineFailed, EngineReady, ServerStopped,
)  # fmt: skip

#: How much event time windows keep, and how many per-request points per group.
HORIZON = 3600.0
MAX_REQUESTS = 500
#: Points kept per engine series: more than the horizon's seconds, so whole-second stamps never hit it.
MAX_POINTS = 4096
#: Prompt throughputs a stats point keeps of its newest lines (the busy lines write_only_offload counts).
POINT_TAIL = 64


def newest(points: Sequence[RequestPoint], count: int) -> list[RequestPoint]:
    """`list(points)[-count:]`, without copying a whole window to keep its last few."""
    size = len(points)
    if count <= 0 or size <= count:
        return list(points)[-count:]
    # (read from the newest end: islice from the oldest would step over every point before them)
    return list(islice(reversed(points), count))[::-1]


def ordered(mapping: Mapping[K, V]) -> list[tuple[K, V]]:
    """`sorted(mapping.items())`, without sorting one item (a tick's detectors walk one group or source
    at a time, and most windows hold one)."""
    return list(mapping.items()) if len(mapping) < 2 else sorted(mapping.items())


class RequestPoint(NamedTuple):
    """One request as the per-request detectors see it, whatever engine or gateway logged it."""

    # (a NamedTuple: immutable as a frozen dataclass, and a quarter of its cost to build, once per request)

    time: float
    prompt: int
    cached: int
    full_reprocess: bool = False
    selection: str = ""
    derived: bool = False
    slot: int | None = None
    conversation: str = ""  # the conversation the engine shows it continues ("": not known)
    reprocess_cause: str = ""  # RequestRecord.reprocess_cause


@dataclass(slots=True)
class Tally:
    """Of one request group's kept points: how often each positive cached length occurs, how many
    points the commonest one has, how many carry a conversation, and each conversation's points
    numbered in the group's order (what the request detectors read before scanning the group)."""

    counts: dict[int, int] = field(default_factory=dict)
    often: dict[int, int] = field(default_factory=dict)  # count -> how many lengths occur that often
    top: int = 0
    conversations: int = 0
    #: conversation -> its kept points, oldest first, each with its number (`added` when it came); the
    #: conversations in the order of their newest points
    turns: dict[str, deque[tuple[int, RequestPoint]]] = field(default_factory=dict)
    added: int = 0  # points counted in since the last clear (the next point's number)
    #: What a request detector noted of the group at its last full judgement, by its name (each says
    #: what its note holds and why it stays true as points come): dropped with the points.
    notes: dict[str, object] = field(default_factory=dict)

    def add(self, point: RequestPoint) -> None:
        """Count a point in (the group's newest)."""
        name = point.conversation
        if name:
            self.conversations += 1
            # (moved to the end: `turns` stays in the order of each conversation's newest turn)
            turns = self.turns.pop(name, None)
            if turns is None:
                turns = deque()
            self.turns[name] = turns
            turns.append((self.added, point))
        self.added += 1
        cached = point.cached
        if cached <= 0:
            return
        counts, often = self.counts, self.often
        count = counts.get(cached, 0)
        if count:
            often[count] -= 1
        counts[cached] = count + 1
        often[count + 1] = often.get(count + 1, 0) + 1
        if count >= self.top:  # (max(), without the call: it runs per request)
            self.top = count + 1

    def remove(self, point: RequestPoint) -> None:
        """Count a point out (the group's oldest)."""
        name = point.conversation
        if name:
            self.conversations -= 1
            turns = self.turns[name]
            turns.popleft()
            if not turns:
                del self.turns[name]
        cached = point.cached
        if cached <= 0:
            return
        counts, often = self.counts, self.often
        count = counts[cached]
        often[count] -= 1
        if count == 1:
            del counts[cached]
        else:
            counts[cached] = count - 1
            often[count - 1] += 1
        if count == self.top and not often[count]:
            self.top = count - 1

    def clear(self) -> None:
        """Count every point out."""
        self.counts.clear()
        self.often.clear()
        self.turns.clear()
        self.notes.clear()
        self.top = self.conversations = self.added = 0


@dataclass(slots=True)
class StatsPoint:
    """The stats lines of one engine at one event time: counts, maxima and newest values detectors read."""

    time: float
    lines: int = 0
    #: prompt throughput of the newest lines (at most 2 x POINT_TAIL, at least POINT_TAIL when there were)
    prompts: array[float] = field(default_factory=lambda: array("d"))
    external_lines: int = 0
    external_max: float = 0.0
    usage_last: float | None = None
    #: lines with prefill and a prefix hit rate (prefix_hit_rate_low's lines)
    rate_lines: int = 0
    rate_max: float = 0.0
    rate_last: float = 0.0

    @classmethod
    def of(cls, line: CacheRateSample) -> StatsPoint:
        """`StatsPoint(line.time)` with `line` added, built at once (most points hold one line)."""
        prompt, external, rate = line.prompt_throughput, line.external_hit, line.prefix_hit
        point = cls(line.time, 1, array("d", (prompt,)), usage_last=line.kv_cache_usage)
        if external is not None:
            point.external_lines, point.external_max = 1, external
        if rate is not None and prompt > 0:
            point.rate_lines, point.rate_max, point.rate_last = 1, rate, rate
        return point

    def add(self, line: CacheRateSample) -> None:
        """Take one more line of this time in."""
        self.lines += 1
        prompts = self.prompts
        prompts.append(line.prompt_throughput)
        if len(prompts) >= 2 * POINT_TAIL:
            del prompts[:POINT_TAIL]
        external = line.external_hit
        if external is not None:
            if not self.external_lines or external > self.external_max:
                self.external_max = external
            self.external_lines += 1
        if line.kv_cache_usage is not None:
            self.usage_last = line.kv_cache_usage
        rate = line.prefix_hit
        if rate is not None and line.prompt_throughput > 0:
            if not self.rate_lines or rate > self.rate_max:
                self.rate_max = rate
            self.rate_lines += 1
            self.rate_last = rate


@dataclass(slots=True)
class KvPoint:
    """The KV Transfer lines of one engine at one event time, summed (over the lines with byte counts)."""

    time: float
    lines: int = 0
    #: lines with byte counts (unknown is not zero), their stored and loaded bytes
    counted: int = 0
    store: int = 0
    load: int = 0
    #: lookups of the counted lines that report them
    lookup_lines: int = 0
    lookups: int = 0
    #: lines that count KV blocks instead (SimpleCPU), their stored and loaded blocks
    block_lines: int = 0
    store_blocks: int = 0
    load_blocks: int = 0

    def add(self, line: OffloadCounters) -> None:
        """Take one more line of this time in."""
        self.lines += 1
        if line.store_blocks is not None:
            self.block_lines += 1
            self.store_blocks += line.store_blocks
            self.load_blocks += line.load_blocks or 0
        if line.store_bytes is None:
            return
        self.counted += 1
        self.store += line.store_bytes
        self.load += line.load_bytes or 0
        if line.lookups is not None:
            self.lookup_lines += 1
            self.lookups += line.lookups


@dataclass
class EngineWindow:
    """One engine's recent stats and KV lines as points in time order, and its totals since start."""

    stats: deque[StatsPoint] = field(default_factory=lambda: deque(maxlen=MAX_POINTS))
    kv: deque[KvPoint] = field(default_factory=lambda: deque(maxlen=MAX_POINTS))
    store_total: int = 0
    load_total: int = 0
    store_blocks_total: int = 0
    load_blocks_total: int = 0
    #: Kept by Windows.observe for write_only_offload: how many adjacent points (of stats, of kv) are out
    #: of time order (0: both strictly increasing), the newest kv point that loaded bytes and the newest
    #: stats point with an External prefix cache hit rate above 0 (None: none kept).
    disorder: int = 0
    loaded: KvPoint | None = None
    external: StatsPoint | None = None


@dataclass
class SourceWindow:
    """One source's recent history."""

    kind: str = ""
    facts: dict[str, str] = field(default_factory=dict)
    engines: dict[str, EngineWindow] = field(default_factory=dict)
    last_event: float | None = None
    last_stats: CacheRateSample | None = None
    started: float | None = None
    derived_requests: int = 0  # request records derived from timings, of requests seen whole
    exact_requests: int = 0  # ... and read from the engine's own lines (both since the last start)
    joined_requests: int = 0  # derived records of requests whose start was not seen (read mid-request)
    prefetches: deque[CachePrefetch] = field(default_factory=deque)  # cache-tier prefetches that ended
    adapters: dict[str, RequestAdapter | None] = field(default_factory=dict)  # engine -> its (or none)
    offload: OffloadHistory | None = None  # an external tier's (offload layer's) history, once it logs
    failed: EngineFailed | None = None  # its engine's failure since it last became ready
    #: The server its requests named first since it started (None: none named), and whether another
    #: has named itself since: then each server's requests are a group of their own (Windows._record).
    server: str | None = None
    servers: bool = False
    #: The servers that said they stopped since a process of the source last started (ServerStopped).
    stopped: set[str] = field(default_factory=set)


def _turns(last: CacheRateSample, line: CacheRateSample) -> bool:
    """Whether a stats line after `last` reads otherwise as no_signal reads a source's last one: with
    prompt throughput, or idle (neither throughput above 0)."""
    prompt, generation = line.prompt_throughput, line.generation_throughput
    before, then = last.prompt_throughput, last.generation_throughput
    return (prompt > 0) is not (before > 0) or (prompt <= 0 and generation <= 0) is not (
        before <= 0 and then <= 0
    )


def _drop(engine: EngineWindow, points: deque[StatsPoint] | deque[KvPoint]) -> None:
    """Drop the oldest of an engine's stats or KV points, keeping its order count and newest marks."""
    gone = points.popleft()
    if points and gone.time > points[0].time:
        engine.disorder -= 1
    if gone is engine.loaded:  # (the newest that loaded: none kept after it loaded either)
        engine.loaded = None
    elif gone is engine.external:
        engine.external = None


class Windows:
    """All sources' windows, fed with events in event-time order."""

    def __init__(
        self, engines: EngineFacts, horizon: float = HORIZON, max_requests: int = MAX_REQUESTS
    ) -> None:
        #: What the engines are known to do (detectors read it too: a source's engine's signals, ...).
        self.engines = engines
        self.horizon = horizon
        self.max_requests = max_requests
        self.sources: dict[str, SourceWindow] = {}
        self.requests: dict[Labels, deque[RequestPoint]] = {}
        #: The same points by slot: each group's slots (those it holds a point of), each slot's in order.
        self.slots: dict[Labels, dict[int | None, deque[RequestPoint]]] = {}
        #: What each group's points come to (kept as they come and go).
        self.tallies: dict[Labels, Tally] = {}
        self.usage = UsageWindows(horizon)  # (gateway usage, in bounded bytes: kvwatch/windows/usages.py)
        #: The sources that logged a cache tier's prefetch or an offload layer's line: those whose
        #: windows may hold prefetches or offload history (what the cache-tier detectors read).
        self.tiers: set[str] = set()
        #: Changes whenever a request group or a source's kind or facts change: what the request detectors
        #: read (kvwatch.detectors.Memo keeps their findings while it stays the same).
        self.version = 0
        #: Changes whenever the set of sources or a source's kind or facts change (a restart too), and
        #: whenever a request or usage group or a source's cache tier first shows up (so the attributes
        #: detectors read their subjects from turn empty or not only as it moves).
        self.shape = 0
        #: Changes whenever anything else the detectors read changes: an engine's stats and KV points,
        #: a source's last stats line, request tallies, prefetches, offload history, usage records.
        self.changes = 0
        #: Changes whenever something no_signal reads changes besides the shape and event time (and with
        #: `changes`): a source's first stats line, one that turns it busy or idle (see `_turns`) or
        #: goes back in time, its request counts, its prefetches.
        self.signals = 0
        #: Changes whenever an offload history's shortfalls may change besides the shape (and with
        #: `changes`): a short load, a failure.
        self.shortfalls = 0
        # event type -> (the engine that makes it ("": none), how a window takes it in (None: it keeps
        # nothing of it))
        self._owners: dict[type, tuple[str, _Take | None]] = {}

    def source(self, name: str) -> SourceWindow:
        """The window of a source, created empty."""
        window = self.sources.get(name)
        if window is None:
            window = self.sources[name] = SourceWindow()
            self.version += 1
            self.shape += 1
        return window

    def forget(self, source: str) -> None:
        """Drop everything kept of `source` (a source removed from the config)."""
        self.version += 1
        self.shape += 1
        self.changes += 1
        self.sources.pop(source, None)
        self.tiers.discard(source)
        for labels in [k for k in self.requests if dict(k).get("source") == source]:
            del self.requests[labels]
            self.slots.pop(labels, None)
            self.tallies.pop(labels, None)
        self.usage.forget(source)

    def observe(self, event: Event) -> None:
        """Take one event in."""
        window = self.sources.get(event.source)
        if window is None:
            window = self.source(event.source)
        window.last_event = event.time
        kind = type(event)
        owner, take = self._owners.get(kind) or self._known(kind)
        # A source's engine is that of its events (a startup fact does not overrule a request's).
        if owner and window.kind != owner and (not window.kind or kind is not EngineFact):
            window.kind = owner
            self.version += 1
            self.shape += 1
        if take is not None:  # (None: an engine's batch lines, metrics only, nothing for the detectors)
            take(window, event)

    def _known(self, kind: type) -> tuple[str, _Take | None]:
        """The engine that makes events of `kind` ("": none) and how a window takes one in, remembered."""
        owner = self.engines.owner(kind) or ""
        converted = bool(owner) and self.engines.converts(owner)
        take: _Take | None = None
        if converted or issubclass(kind, _KEPT):
            # (the first of these a kind is a subclass of: a subclass is taken in as its base)
            for base, taker in (
                (CacheRateSample, self._stats),
                (OffloadCounters, self._kv),
                (EngineFact, self._fact),
                (RequestRecord, self._request),
                (CachePrefetch, self._prefetch),
                (OffloadTransfer, self._transfer),
                (OffloadLookup, self._lookup),
                (OffloadFailure, self._failure),
                (ServerRestart, self._restart),
                (ServerStopped, self._stopped),
                (EngineFailed, self._engine_state),
                (EngineReady, self._engine_state),
            ):
                if issubclass(kind, base):
                    take = taker
                    break
            else:
                if owner:
                    take = partial(self._adapted, owner)
        known = self._owners[kind] = (owner, take)
        return known

    def _stats(self, window: SourceWindow, event: CacheRateSample) -> None:
        # (_engine's call only for a new engine: this runs for nearly every stats line)
        engine = window.engines.get(event.engine) or self._engine(window, event.engine)
        stats = engine.stats
        time = event.time
        if stats and stats[-1].time == time:
            point = stats[-1]
            point.add(event)
        else:
            point = self._stats_point(engine, event)
        external = event.external_hit
        if external is not None and external > 0:
            engine.external = point
        last = window.last_stats
        if last is None or time < last.time or _turns(last, event):
            self.signals += 1
        window.last_stats = event
        self.changes += 1

    def _kv(self, window: SourceWindow, event: OffloadCounters) -> None:
        engine = window.engines.get(event.engine) or self._engine(window, event.engine)
        kv = engine.kv
        time = event.time
        spot = kv[-1] if kv and kv[-1].time == time else self._kv_point(engine, time)
        spot.add(event)
        if spot.load > 0 or spot.load_blocks > 0:
            engine.loaded = spot
        engine.store_total += event.store_bytes or 0
        engine.load_total += event.load_bytes or 0
        engine.store_blocks_total += event.store_blocks or 0
        engine.load_blocks_total += event.load_blocks or 0
        self.changes += 1

    def _fact(self, window: SourceWindow, event: EngineFact) -> None:
        window.facts[event.key] = event.value
        self.version += 1
        self.shape += 1

    def _engine_state(self, window: SourceWindow, event: EngineFailed | EngineReady) -> None:
        # (a restart line does not clear a failure: a start that fails logs one before failing)
        failed = event if isinstance(event, EngineFailed) else None
        if failed is None and window.failed is None:
            return
        window.failed = failed
        self.version += 1
        self.shape += 1
        self.changes += 1

    def _request(self, window: SourceWindow, event: RequestRecord) -> None:
        self._record(window, event)

    def _prefetch(self, window: SourceWindow, event: CachePrefetch) -> None:
        prefetches = window.prefetches
        prefetches.append(event)
        self.signals += 1
        self._tier(event.source)
        oldest = event.time - self.horizon
        while prefetches and prefetches[0].time < oldest:
            prefetches.popleft()
        self.changes += 1

    def _transfer(self, window: SourceWindow, event: OffloadTransfer) -> None:
        self.changes += 1
        if event.short:
            self.shortfalls += 1
        (window.offload or self._offload(window, event.source)).transfer(event, self.horizon)

    def _lookup(self, window: SourceWindow, event: OffloadLookup) -> None:
        self.changes += 1
        (window.offload or self._offload(window, event.source)).lookup(event, self.horizon)

    def _failure(self, window: SourceWindow, event: OffloadFailure) -> None:
        self.changes += 1
        self.shortfalls += 1
        (window.offload or self._offload(window, event.source)).failure(event, self.horizon)

    def _offload(self, window: SourceWindow, source: str) -> OffloadHistory:
        """A new offload history of `source`'s window (with its first offload event)."""
        history = window.offload = OffloadHistory()
        self._tier(source)
        return history

    def _adapted(self, owner: str, window: SourceWindow, event: Event) -> None:
        """An event of an engine with a request adapter (or a usage record): its request, if any."""
        adapters = window.adapters
        adapter = adapters[owner] if owner in adapters else self._adapter(window, owner)
        if adapter is not None:
            self._convert(window, adapter, event)
        if isinstance(event, UsageRecord):  # (the gateway detectors read per-entry usage summaries)
            self._usage(event)

    def _tier(self, source: str) -> None:
        """Count `source` among those that logged a cache tier (the shape moves when it is new)."""
        if source not in self.tiers:
            self.tiers.add(source)
            self.shape += 1

    def _stats_point(self, engine: EngineWindow, line: CacheRateSample) -> StatsPoint:
        """A new newest stats point of `line`; those that leave the count or the horizon dropped."""
        stats = engine.stats
        time = line.time
        if len(stats) == stats.maxlen:
            _drop(engine, stats)
        if stats and time < stats[-1].time:
            engine.disorder += 1
        point = StatsPoint.of(line)
        stats.append(point)
        oldest = time - self.horizon
        while stats[0].time < oldest:  # (_drop inlined: a point leaves with nearly every new one)
            gone = stats.popleft()
            if gone.time > stats[0].time:
                engine.disorder -= 1
            if gone is engine.external:
                engine.external = None
        return point

    def _kv_point(self, engine: EngineWindow, time: float) -> KvPoint:
        """A new newest KV point at `time`; those that leave the count or the horizon dropped."""
        kv = engine.kv
        if len(kv) == kv.maxlen:
            _drop(engine, kv)
        if kv and time < kv[-1].time:
            engine.disorder += 1
        point = KvPoint(time)
        kv.append(point)
        oldest = time - self.horizon
        while kv[0].time < oldest:  # (as in _stats_point)
            gone = kv.popleft()
            if gone.time > kv[0].time:
                engine.disorder -= 1
            if gone is engine.loaded:
                engine.loaded = None
        return point

    @staticmethod
    def _engine(window: SourceWindow, name: str) -> EngineWindow:
        engine = window.engines.get(name)
        if engine is None:
            engine = window.engines[name] = EngineWindow()
        return engine

    def _adapter(self, window: SourceWindow, owner: str) -> RequestAdapter | None:
        adapter = window.adapters[owner] = self.engines.requests(owner)
        return adapter

    def _convert(self, window: SourceWindow, adapter: RequestAdapter, event: Event) -> None:
        basis, record = adapter.convert(event)
        if basis == "exact":
            window.exact_requests += 1
            self.changes += 1
            self.signals += 1
        elif basis == "joined":
            window.joined_requests += 1
            self.changes += 1
            self.signals += 1
        elif basis == "derived":
            window.derived_requests += 1
            self.changes += 1
            self.signals += 1
        if record is not None:
            self._record(window, record)

    def _record(self, window: SourceWindow, record: RequestRecord) -> None:
        source = record.source
        entry, server = record.entry, record.server
        labels: Labels = (("source", source),) if entry is None else (("source", source), ("entry", entry))
        if server is not None and (window.servers or self._servers(window, labels, server)):
            labels += (("server", server),)  # (one source, several servers: each judged on its own)
        point = RequestPoint(
            record.time,
            record.prompt_tokens,
            record.cached_tokens,
            record.full_reprocess,
            record.selection,
            record.derived,
            record.slot,
            record.conversation,
            record.reprocess_cause,
        )
        self._add_request(labels, point)

    def _servers(self, window: SourceWindow, labels: Labels, server: str) -> bool:
        """Whether a source's requests, this one of `server`, come from several servers (the second one
        to name itself since the source started splits its group: what came before is the first's).
        A source's only server is not named: its group and alerts are those of its source alone."""
        first = window.server
        if first is None:
            window.server = server
            return False
        if first == server:
            return False
        window.servers = True
        self.version += 1
        self.shape += 1
        self.changes += 1
        own = (*labels, ("server", first))
        if labels in self.requests:  # (a group cleared by a restart is kept empty: replaced whole)
            self.requests[own] = self.requests.pop(labels)
            self.slots[own] = self.slots.pop(labels)
            self.tallies[own] = self.tallies.pop(labels)
        return True

    def _add_request(self, labels: Labels, point: RequestPoint) -> None:
        self.version += 1
        points = self.requests.get(labels)
        if points is None:
            points = self.requests[labels] = deque(maxlen=self.max_requests)
            self.shape += 1
            self.slots[labels] = {}
            self.tallies[labels] = Tally()
        slots = self.slots[labels]
        tally = self.tallies[labels]
        if len(points) == points.maxlen:  # the oldest point leaves: so it does its slot's
            if not points:  # (a window that keeps none)
                return
            oldest = points[0]
            kept = slots[oldest.slot]
            kept.popleft()
            if not kept:
                del slots[oldest.slot]
            tally.remove(oldest)
        points.append(point)
        tally.add(point)
        same = slots.get(point.slot)
        if same is None:
            same = slots[point.slot] = deque()
        same.append(point)

    # -----------------------------------------------------------------------------------------
    # Usage records (#6): per (source, raw model) and entry, what hit_rate_gap and
    # usage_double_counting read (kvwatch/windows/usages.py), bounded by the horizon and by bytes.
    # -----------------------------------------------------------------------------------------

    def _usage(self, event: UsageRecord) -> None:
        self.changes += 1
        if self.usage.add(event):
            self.shape += 1

    def server_of(self, finding: Finding) -> Finding:
        """A request detector's finding of a group with the server whose requests it judged: the
        group's `server` label, else the source's only server named so far (Finding.server)."""
        named = dict(finding.labels)
        server = named.get("server")
        if server is None and "entry" not in named:
            window = self.sources.get(named.get("source", ""))
            server = None if window is None or window.servers else window.server
        return finding if server is None else replace(finding, server=server)

    def _stopped(self, window: SourceWindow, event: ServerStopped) -> None:
        window.stopped.add(event.server)

    def _restart(self, window: SourceWindow, event: ServerRestart) -> None:
        server, lone = event.server, window.server
        if server is not None and (
            window.servers or (lone not in (None, server) and lone not in window.stopped)
        ):
            # (a second process starting beside a lone server that did not say it stopped: a second
            # server, whose requests will split the source's group; a lone server killed without a
            # word and restarted under a new pid looks the same, and is taken so too)
            self._restart_server(window, event.source, server)
            return
        # A restarted engine starts from a cold cache: history from before says nothing about it.
        self.version += 1
        self.shape += 1
        self.changes += 1
        window.engines.clear()
        window.last_stats = None
        window.started = event.time
        window.derived_requests = window.exact_requests = window.joined_requests = 0
        window.server, window.servers = None, False  # (a restarted unit's new process: its only server)
        window.stopped.clear()
        window.prefetches.clear()
        if window.offload is not None:
            window.offload.restart()
        for adapter in window.adapters.values():
            if adapter is not None:
                adapter.restart()
        for key in self.engines.forgets(event.engine_kind):
            window.facts.pop(key, None)
        for labels in [k for k in self.requests if dict(k).get("source") == event.source]:
            self.requests[labels].clear()
            self.slots[labels].clear()
            self.tallies[labels].clear()

    def _restart_server(self, window: SourceWindow, source: str, server: str) -> None:
        """One of a source's several servers (re)started: its requests go, and those of the servers
        that said they stopped (the one it replaces, most often: a journal names it by a pid that left
        with it); the other servers' stay, as does what the source as a whole says (facts, stats)."""
        self.version += 1
        self.shape += 1
        self.changes += 1
        self.signals += 1
        gone = window.stopped | {server}
        window.stopped.clear()
        for labels in [
            k for k in self.requests if k[0] == ("source", source) and dict(k).get("server") in gone
        ]:
            del self.requests[labels]
            del self.slots[labels]
            del self.tallies[labels]
