"""LMCache's lookups, stores and loads summed in the parser: one event per stretch, not one per line.

A busy vLLM logs a lookup line per request and a store and a load line per request and TP worker; an
event each would cost more than the rest of the log. The sums (lookups; per worker and direction:
lines, tokens, tokens offered or required, bytes, seconds) are held while their lines come and handed
on as one event per kind and worker, timed at its last line: when the stretch spans `STRETCH` seconds of
event time, before any event that is not a sum (a failure, a short load, a fact: the order of event
times holds), when the carrying parser makes an event of its own (`drain`), and at the end. Sizes are
summed as printed (GiB to 4 decimals) and made bytes per stretch, from their running total. The window
sees a stretch as one point.
"""

from __future__ import annotations

from kvwatch.engines.lmcache.events import LmcacheLookup, LmcacheStoreRequest, LmcacheTransfer
from kvwatch.model import Event

#: Longest stretch of event time summed into one event.
STRETCH = 10.0
_GIB = float(1 << 30)


class Sums:
    """The sums held back for one source."""

    __slots__ = ("_drained", "_source", "_storing", "held", "last", "local", "lookups", "start", "transfers")

    def __init__(self, source: str) -> None:
        self._source = source
        # (The fields below are the run loop's too: LmcacheLayer.take_run adds its rows in place.)
        self.held = False  # anything held
        self.start = 0.0  # event time of the first line held
        self.last = 0.0  # ... and of the last
        # lookups, query, hit, need, lookups with a hit (lookups 0: none held); local (None: not printed)
        self.lookups = [0, 0, 0, 0, 0]
        self.local: int | None = None
        # (worker, load) -> [lines, tokens, asked, has asked, size in 1e-4 GiB, has size, seconds in 100 ns,
        # has seconds]; emptied, never replaced, by drain()
        self.transfers: dict[tuple[str, bool], list[int]] = {}
        self._storing: dict[str, list[int]] = {}  # worker -> [tokens, total] of `Storing KV cache` lines
        # (worker, load) -> sizes drained so far, in 1e-4 GiB: a stretch's bytes are what the running total
        # adds once made bytes, so the bytes summed over stretches do not depend on where stretches end
        # (the live daemon's syncs end them where replay does not)
        self._drained: dict[tuple[str, bool], int] = {}

    def _open(self, when: float) -> list[Event]:
        """Start or continue the stretch at `when`: the events of a stretch it ends."""
        if not self.held:
            self.held, self.start, self.last = True, when, when
            return []
        if when - self.start >= STRETCH:
            done = self.drain()
            self.held, self.start, self.last = True, when, when
            return done
        self.last = max(self.last, when)
        return []

    def lookup(self, when: float, query: int, hit: int, need: int, local: int | None) -> list[Event]:
        """Add a counted lookup; the events of a stretch it ends."""
        done = self._open(when)
        sums = self.lookups
        sums[0] += 1
        sums[1] += query
        sums[2] += hit
        sums[3] += need
        if hit > 0:
            sums[4] += 1
        if local is not None:
            self.local = local if self.local is None else self.local + local
        return done

    def transfer(  # noqa: PLR0917 (the fields of one line, read on the hot path)
        self,
        when: float,
        worker: str,
        load: bool,
        tokens: int,
        asked: int | None,
        size: int | None,
        units: int | None,
    ) -> list[Event]:
        """Add a store or load line (`size` in 1e-4 GiB as printed, `units`: its seconds in 100 ns); the
        events of a stretch it ends."""
        done = self._open(when)
        key = (worker, load)
        sums = self.transfers.get(key)
        if sums is None:
            sums = self.transfers[key] = [0, 0, 0, 0, 0, 0, 0, 0]
        sums[0] += 1
        sums[1] += tokens
        if asked is not None:
            sums[2] += asked
            sums[3] = 1
        if size is not None:
            sums[4] += size
            sums[5] = 1
        if units is not None:
            sums[6] += units
            sums[7] = 1
        return done

    def storing(self, when: float, worker: str, tokens: int, total: int) -> list[Event]:
        """Add a `Storing KV cache for N out of M tokens` line; the events of a stretch it ends."""
        done = self._open(when)
        sums = self._storing.get(worker)
        if sums is None:
            sums = self._storing[worker] = [0, 0]
        sums[0] += tokens
        sums[1] += total
        return done

    def drain(self) -> list[Event]:
        """The events of what is held (none when nothing is)."""
        if not self.held:
            return []
        self.held = False
        when, source = self.last, self._source
        out: list[Event] = []
        sums = self.lookups
        if sums[0]:
            out.append(LmcacheLookup(source, when, sums[1], sums[2], sums[3], self.local, sums[0], sums[4]))
            sums[:] = (0, 0, 0, 0, 0)
            self.local = None
        for key, s in self.transfers.items():
            size = None
            if s[5]:
                before = self._drained.get(key, 0)
                self._drained[key] = after = before + s[4]
                size = round(after * _GIB / 1e4) - round(before * _GIB / 1e4)
            worker, load = key
            out.append(
                LmcacheTransfer(
                    source, when, worker, load, s[1], s[2] if s[3] else None,
                    size, s[6] / 1e7 if s[7] else None, s[0],
                )
            )  # fmt: skip
        self.transfers.clear()
        for worker, (tokens, total) in self._storing.items():
            out.append(LmcacheStoreRequest(source, when, worker, tokens, total))
        self._storing = {}
        return out
