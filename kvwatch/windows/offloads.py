"""One source's recent history of an external KV tier (an offload layer): lookups, stores, loads, shortfalls.

Fed with the engine-neutral offload events (kvwatch.model.OffloadLookup, OffloadTransfer,
OffloadFailure) by kvwatch.windows.window.Windows; read by write_only_offload and offload_retrieve_failed.
Points are per event second, bounded by the windows' horizon and a count; stored tokens are kept per
worker (each TP worker reports the same tokens: detectors take the busiest worker's).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kvwatch.model import OffloadFailure, OffloadLookup, OffloadTransfer

#: Points and shortfalls kept per source.
MAX_POINTS = 4096
MAX_SHORTFALLS = 1024


@dataclass(slots=True)
class OffloadPoint:
    """What one second of a source's offload lines said, summed."""

    time: float
    lookups: int = 0
    hit_lookups: int = 0  # lookups that found a prefix in the tier
    hit_tokens: int = 0
    stored: dict[str, int] = field(default_factory=dict)  # worker -> tokens newly stored
    loads: int = 0
    loaded_tokens: int = 0  # all workers' (the report's charts draw it)


@dataclass(slots=True)
class Shortfall:
    """A load that fell short or failed on one worker: when, its request ("": not printed), tokens lost."""

    time: float
    worker: str
    request: str
    lost: int | None
    kind: str


@dataclass
class OffloadHistory:
    """A source's offload points in time order, its shortfalls, and its totals since the start."""

    points: deque[OffloadPoint] = field(default_factory=lambda: deque(maxlen=MAX_POINTS))
    shortfalls: deque[Shortfall] = field(default_factory=lambda: deque(maxlen=MAX_SHORTFALLS))
    lookups_total: int = 0
    stored_totals: dict[str, int] = field(default_factory=dict)  # worker -> tokens stored since the start
    loaded_total: int = 0  # tokens loaded, all workers

    def _point(self, time: float, horizon: float) -> OffloadPoint:
        points = self.points
        if points and points[-1].time == time:
            return points[-1]
        point = OffloadPoint(time)
        points.append(point)
        oldest = time - horizon
        while points[0].time < oldest:
            points.popleft()
        return point

    def lookup(self, event: OffloadLookup, horizon: float) -> None:
        """Take a lookup in."""
        points = self.points
        # (_point's call only for a new second: most events share the newest point's)
        point = points[-1] if points and points[-1].time == event.time else self._point(event.time, horizon)
        point.lookups += event.lookups
        self.lookups_total += event.lookups
        hits = event.hits if event.hits >= 0 else int(event.hit_tokens > 0)
        point.hit_lookups += hits
        point.hit_tokens += event.hit_tokens

    def transfer(self, event: OffloadTransfer, horizon: float) -> None:
        """Take a worker's stores or loads in."""
        points = self.points
        point = points[-1] if points and points[-1].time == event.time else self._point(event.time, horizon)
        worker = event.worker
        if not event.load:
            point.stored[worker] = point.stored.get(worker, 0) + event.tokens
            self.stored_totals[worker] = self.stored_totals.get(worker, 0) + event.tokens
            return
        point.loads += event.lines
        point.loaded_tokens += event.tokens
        self.loaded_total += event.tokens
        if event.short:
            lost = None if event.asked is None else event.asked - event.tokens
            self._shortfall(Shortfall(event.time, event.worker, event.request, lost, "short"), horizon)

    def failure(self, event: OffloadFailure, horizon: float) -> None:
        """Take a failed load in: one shortfall, or the details of the short load it explains."""
        if not event.retrieve:
            return
        last = self.shortfalls[-1] if self.shortfalls else None
        # The connector logs its error right after the short load's own line (the same load).
        if (
            last is not None
            and last.kind == "short"
            and last.worker == event.worker
            and event.time - last.time <= 1.0
            and event.request in ("", last.request)
        ):
            last.kind = event.kind
            last.request = last.request or event.request
            if event.tokens is not None:
                last.lost = event.tokens
            return
        self._shortfall(Shortfall(event.time, event.worker, event.request, event.tokens, event.kind), horizon)

    def _shortfall(self, shortfall: Shortfall, horizon: float) -> None:
        shortfalls = self.shortfalls
        shortfalls.append(shortfall)
        oldest = shortfall.time - horizon
        while shortfalls[0].time < oldest:
            shortfalls.popleft()

    def restart(self) -> None:
        """The engine restarted: its tier's recent history says nothing about the new process."""
        self.points.clear()
        self.shortfalls.clear()
