"""What a forensic report draws, gathered as plain arrays: from a replay's events (`EventCollector`, an
observer of the pipeline) or from the daemon's windows (`from_windows`).

Per source: each request group's requests (prompt and cached tokens, by slot or conversation where the
engine shows them; a gateway's by entry and model), each engine's cache-rate lines (hit rate and the
prompt throughput that weighs it), each offload tier's stores and loads, the engines' startup facts
and restarts. Never a prompt's text: no event carries one.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kvwatch.engines import ENGINES, engine_of
from kvwatch.engines.capabilities import ConvertsRequests
from kvwatch.model import (
    CacheRateSample,
    EngineFact,
    Event,
    OffloadCounters,
    OffloadTransfer,
    RequestAdapter,
    RequestRecord,
    ServerRestart,
    ServerStopped,
    UsageRecord,
)

NAN = math.nan


@dataclass
class RequestGroup:
    """One group's requests in arrival order: a server's (lanes: slots or conversations) or one gateway
    entry's and model's; `labels` are those its alerts carry."""

    source: str
    name: str  # "" for a server's requests, else `entry · model`
    labels: dict[str, str]
    time: array[float] = field(default_factory=lambda: array("d"))
    prompt: array[float] = field(default_factory=lambda: array("d"))
    cached: array[float] = field(default_factory=lambda: array("d"))
    lane: array[int] = field(default_factory=lambda: array("l"))  # index into `lanes`
    lanes: list[str] = field(default_factory=list)
    derived: int = 0  # requests whose counts were derived from timings (less exact)
    _lane_of: dict[str, int] = field(default_factory=dict, repr=False)

    def add(self, time: float, prompt: int, cached: int, lane: str, derived: bool) -> None:
        """One request."""
        index = self._lane_of.get(lane)
        if index is None:
            index = self._lane_of[lane] = len(self.lanes)
            self.lanes.append(lane)
        self.time.append(time)
        self.prompt.append(prompt)
        self.cached.append(cached)
        self.lane.append(index)
        if derived:
            self.derived += 1


@dataclass
class RateSeries:
    """One engine's cache-rate lines: the hit rate (0-1, nan: not on the line), the prompt throughput
    that weighs it, and the external (offload) tier's rate (nan: not reported)."""

    source: str
    engine: str
    time: array[float] = field(default_factory=lambda: array("d"))
    hit: array[float] = field(default_factory=lambda: array("d"))
    weight: array[float] = field(default_factory=lambda: array("d"))
    external: array[float] = field(default_factory=lambda: array("d"))


@dataclass
class OffloadSeries:
    """One offload tier's stores and loads as they were logged (each an increment), in `unit`."""

    source: str
    tier: str
    unit: str  # "bytes" or "tokens"
    labels: dict[str, str]
    time: array[float] = field(default_factory=lambda: array("d"))
    stored: array[float] = field(default_factory=lambda: array("d"))
    loaded: array[float] = field(default_factory=lambda: array("d"))
    unknown: int = 0  # lines that reported no byte counts (unknown, not zero)


@dataclass
class Collected:
    """Everything a report draws, per source."""

    groups: dict[tuple[str, str], RequestGroup] = field(default_factory=dict)
    rates: dict[tuple[str, str], RateSeries] = field(default_factory=dict)
    offloads: dict[tuple[str, str], OffloadSeries] = field(default_factory=dict)
    facts: dict[str, dict[str, str]] = field(default_factory=dict)
    restarts: dict[str, list[float]] = field(default_factory=dict)
    first: float | None = None
    last: float | None = None
    #: source -> [first, last] event time gathered of it
    periods: dict[str, list[float]] = field(default_factory=dict)

    def group(self, source: str, name: str, labels: dict[str, str]) -> RequestGroup:
        """The request group `name` of `source`, created empty."""
        found = self.groups.get((source, name))
        if found is None:
            found = self.groups[source, name] = RequestGroup(source, name, labels)
        return found

    def rate(self, source: str, engine: str) -> RateSeries:
        """The rate series of one engine of `source`, created empty."""
        found = self.rates.get((source, engine))
        if found is None:
            found = self.rates[source, engine] = RateSeries(source, engine)
        return found

    def offload(self, source: str, tier: str, unit: str, labels: dict[str, str]) -> OffloadSeries:
        """The offload series of one tier of `source`, created empty."""
        found = self.offloads.get((source, tier))
        if found is None:
            found = self.offloads[source, tier] = OffloadSeries(source, tier, unit, labels)
        return found

    def seen(self, source: str, time: float) -> None:
        """Widen the period, and `source`'s, to `time`."""
        period = self.periods.get(source)
        if period is None:
            self.periods[source] = [time, time]
            if self.first is None or time < self.first:
                self.first = time
            if self.last is None or time > self.last:
                self.last = time
            return
        if time < period[0]:
            period[0] = time
            if self.first is None or time < self.first:
                self.first = time
        elif time > period[1]:
            period[1] = time
            if self.last is None or time > self.last:
                self.last = time

    def sources(self) -> list[str]:
        """Every source something was gathered of, sorted."""
        names = {s for s, _ in self.groups} | {s for s, _ in self.rates} | {s for s, _ in self.offloads}
        return sorted(names | set(self.facts) | set(self.restarts) | set(self.periods))


def lane_of(record: RequestRecord) -> str:
    """The lane a server's request is drawn in: its slot, else its conversation ("": neither known)."""
    if record.slot is not None:
        return f"slot {record.slot}"
    return record.conversation


class EventCollector:
    """A pipeline observer gathering `Collected` from events between `since` and `until` (event time)."""

    def __init__(self, since: float = -math.inf, until: float = math.inf) -> None:
        self.data = Collected()
        self.since, self.until = since, until
        self._takers: dict[type, Callable[[Any], None]] = {}
        self._adapters: dict[tuple[str, str], RequestAdapter | None] = {}
        # Per source, as the windows keep them (kvwatch.windows.window): its only server named so far,
        # whether a second one named itself (then a group per server), the servers that said they stopped.
        self._lone: dict[str, str] = {}
        self._several: set[str] = set()
        self._stopped: dict[str, set[str]] = {}

    def observe(self, event: Event) -> None:
        """Take one event in (the pipeline's observer)."""
        time = event.time
        if time < self.since or time > self.until:
            return
        take = self._takers.get(type(event))
        if take is None:
            take = self._taker(type(event))
        take(event)

    def _taker(self, kind: type) -> Callable[[Any], None]:
        """How events of `kind` are taken in, remembered (a subclass is taken as its base)."""
        take: Callable[[Any], None] = self._other
        for base, taker in (
            (CacheRateSample, self._stats),
            (OffloadCounters, self._kv),
            (UsageRecord, self._usage),
            (RequestRecord, self._record),
            (OffloadTransfer, self._transfer),
            (EngineFact, self._fact),
            (ServerRestart, self._restart),
            (ServerStopped, self._stop),
        ):
            if issubclass(kind, base):
                take = taker
                break
        else:
            owner = engine_of(kind)
            if owner and isinstance(ENGINES[owner], ConvertsRequests):
                take = self._adapted
        self._takers[kind] = take
        return take

    def _other(self, event: Event) -> None:
        self.data.seen(event.source, event.time)

    def _stats(self, event: CacheRateSample) -> None:
        data = self.data
        data.seen(event.source, event.time)
        series = data.rates.get((event.source, event.engine)) or data.rate(event.source, event.engine)
        hit, external = event.prefix_hit, event.external_hit
        series.time.append(event.time)
        series.hit.append(NAN if hit is None else hit)
        series.weight.append(event.prompt_throughput)
        series.external.append(NAN if external is None else external)

    def _kv(self, event: OffloadCounters) -> None:
        data = self.data
        data.seen(event.source, event.time)
        labels = {"source": event.source, "engine": event.engine}
        series = data.offloads.get((event.source, event.engine)) or data.offload(
            event.source, event.engine, "bytes", labels
        )
        if event.store_bytes is None:
            series.unknown += 1
            return
        series.time.append(event.time)
        series.stored.append(event.store_bytes)
        series.loaded.append(event.load_bytes or 0)

    def _transfer(self, event: OffloadTransfer) -> None:
        data = self.data
        data.seen(event.source, event.time)
        tier = f"worker {event.worker}" if event.worker else "offload"
        series = data.offloads.get((event.source, tier)) or data.offload(
            event.source, tier, "tokens", {"source": event.source}
        )
        series.time.append(event.time)
        series.stored.append(0 if event.load else event.tokens)
        series.loaded.append(event.tokens if event.load else 0)

    def _usage(self, event: UsageRecord) -> None:
        data = self.data
        data.seen(event.source, event.time)
        name = f"{event.entry} · {event.model}" if event.model else event.entry
        labels = {"source": event.source, "entry": event.entry, "model": event.model}
        group = data.groups.get((event.source, name)) or data.group(event.source, name, labels)
        group.add(event.time, event.prompt_tokens, event.cached_tokens, "", False)

    def _record(self, record: RequestRecord) -> None:
        data = self.data
        data.seen(record.source, record.time)
        if record.entry is not None:
            name, labels = record.entry, {"source": record.source, "entry": record.entry}
        elif record.server is not None:
            name, labels = self._server_group(record.source, record.server)
        else:
            name, labels = "", {"source": record.source}
        group = data.groups.get((record.source, name)) or data.group(record.source, name, labels)
        group.add(record.time, record.prompt_tokens, record.cached_tokens, lane_of(record), record.derived)

    def _adapted(self, event: Event) -> None:
        """An engine's own request event: its engine-neutral record, by the source's adapter. One that
        is no request says nothing of the period (a gateway's row that is none carries the time of the
        last row, or the clock's start before any)."""
        owner = engine_of(type(event)) or ""
        key = (event.source, owner)
        if key not in self._adapters:
            engine = ENGINES[owner]
            self._adapters[key] = engine.requests() if isinstance(engine, ConvertsRequests) else None
        adapter = self._adapters[key]
        if adapter is None:
            return
        basis, record = adapter.convert(event)
        if record is not None:
            self._record(record)
        elif basis is not None:
            self.data.seen(event.source, event.time)

    def _fact(self, event: EngineFact) -> None:
        self.data.seen(event.source, event.time)
        self.data.facts.setdefault(event.source, {})[event.key] = event.value

    def _server_group(self, source: str, server: str) -> tuple[str, dict[str, str]]:
        """The group of a request of `server`: its source's own while the server is its only one; one
        per server once a second names itself (the first's requests so far moved to its own)."""
        if source not in self._several:
            lone = self._lone.setdefault(source, server)
            if lone == server:
                return "", {"source": source}
            self._several.add(source)
            group = self.data.groups.pop((source, ""), None)
            if group is not None:
                group.name, group.labels = lone, {"source": source, "server": lone}
                self.data.groups[source, lone] = group
        return server, {"source": source, "server": server}

    def _stop(self, event: ServerStopped) -> None:
        self.data.seen(event.source, event.time)
        self._stopped.setdefault(event.source, set()).add(event.server)

    def _restart(self, event: ServerRestart) -> None:
        self.data.seen(event.source, event.time)
        self.data.restarts.setdefault(event.source, []).append(event.time)
        source, server = event.source, event.server
        stopped = self._stopped.pop(source, set())
        lone = self._lone.get(source)
        if source not in self._several and (server is None or lone in (None, server) or lone in stopped):
            self._lone.pop(source, None)  # (a restart of the source's only server: see Windows._restart)
        for (source, _), adapter in self._adapters.items():
            if source == event.source and adapter is not None:
                adapter.restart()


def from_windows(windows: Any) -> Collected:
    """What the daemon's windows (a kvwatch.window.Windows) hold, as a report draws it: their recent
    requests, stats and KV points, usage records and offload history."""
    data = Collected()
    gateways = {source for source, _ in windows.usage.groups}
    # (the usage windows keep per-second sums, not records: a second's requests are drawn as one, its mean)
    for (source, model), kept in windows.usage.sorted():
        for entry, usage in sorted(kept.entries.items()):
            name = f"{entry} · {model}" if model else entry
            group = data.group(source, name, {"source": source, "entry": entry, "model": model})
            for second, requests, prompt, cached in usage.buckets():
                data.seen(source, second)
                group.add(second, prompt // requests, cached // requests, "", False)
    for key, points in windows.requests.items():
        labels = dict(key)
        source = labels["source"]
        entry = labels.get("entry")
        if entry is not None and source in gateways:  # (drawn from the usage records, with their model)
            continue
        group = data.group(source, entry or labels.get("server") or "", labels)
        for point in points:
            data.seen(source, point.time)
            lane = f"slot {point.slot}" if point.slot is not None else point.conversation
            group.add(point.time, point.prompt, point.cached, lane, point.derived)
    for source, window in windows.sources.items():
        if window.facts:
            data.facts[source] = dict(window.facts)
        if window.started is not None:
            data.restarts[source] = [window.started]
        for engine, history in window.engines.items():
            rates = data.rate(source, engine)
            for stats in history.stats:
                data.seen(source, stats.time)
                weight = sum(stats.prompts) / len(stats.prompts) if len(stats.prompts) else 0.0
                rates.time.append(stats.time)
                rates.hit.append(stats.rate_last if stats.rate_lines else NAN)
                rates.weight.append(weight)
                rates.external.append(stats.external_max if stats.external_lines else NAN)
            if history.kv:
                kv = data.offload(source, engine, "bytes", {"source": source, "engine": engine})
                for point in history.kv:
                    data.seen(source, point.time)
                    kv.unknown += point.lines - point.counted
                    if point.counted:
                        kv.time.append(point.time)
                        kv.stored.append(point.store)
                        kv.loaded.append(point.load)
        if window.offload is not None and window.offload.points:
            tier = data.offload(source, "offload", "tokens", {"source": source})
            for offload in window.offload.points:
                data.seen(source, offload.time)
                tier.time.append(offload.time)
                tier.stored.append(max(offload.stored.values(), default=0))
                tier.loaded.append(offload.loaded_tokens)
    return data
