"""Gateway usage windows: what the usage detectors read of each (source, model)'s last hour of usage
records, per entry, in a bounded number of bytes whatever the number of entries, models and records.

`hit_rate_gap` sums an entry's requests, prompt and cached tokens over a sliding window: an entry keeps
those sums per second of event time (the records of one second add into one bucket), not the records;
with whole-second windows (the detectors' grid) the sums are those of the records. `usage_double_counting`
reads an entry's last Anthropic-shaped, cache-reading records one by one: an entry keeps the last
`RECENT` of those, as numbers in arrays. Buckets and records older than the horizon (from the group's
newest record) go; past `BUDGET` bytes in all, the group updated longest ago goes whole.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Iterator
from typing import NamedTuple

from kvwatch.model import UsageRecord

#: Anthropic-shaped, cache-reading records an entry keeps (usage_double_counting's `max_requests` at most).
RECENT = 64
#: Bytes the usage windows of all sources may hold; past it, the group updated longest ago goes (the
#: daemon's RSS stays under 100 MB: about 45 MB without usage, these bytes, Python's overhead on them).
BUDGET = 16 << 20
#: What a group and an entry cost besides their arrays' items (objects, dicts, nine array headers).
GROUP_BYTES = 600
ENTRY_BYTES = 900
#: Token counts are kept as 32-bit numbers (a request of 4 billion tokens is not one); NONE: not logged.
_MAX = 0xFFFFFFFE
NONE = 0xFFFFFFFF


class Totals(NamedTuple):
    """An entry's requests, prompt and cached tokens over a window."""

    requests: int
    prompt: int
    cached: int


class Recent(NamedTuple):
    """One Anthropic-shaped, cache-reading record, as usage_double_counting reads it."""

    time: float
    input_tokens: int
    cached_tokens: int
    cache_creation_tokens: int
    upstream_prompt_tokens: int | None


def _count(value: int) -> int:
    return min(max(value, 0), _MAX)


class EntryUsage:
    """One entry's usage in a (source, model) group: per-second sums (seconds ascending), and its last
    RECENT Anthropic-shaped, cache-reading records in the order they came."""

    __slots__ = (
        "cached",
        "creations",
        "inputs",
        "prompt",
        "reads",
        "requests",
        "seconds",
        "times",
        "upstreams",
    )

    def __init__(self) -> None:
        self.seconds, self.requests = array("q"), array("I")
        self.prompt, self.cached = array("q"), array("q")
        self.times, self.inputs, self.reads = array("d"), array("I"), array("I")
        self.creations, self.upstreams = array("I"), array("I")

    @property
    def nbytes(self) -> int:
        """What the entry holds, in bytes (its arrays' items, and a fixed cost)."""
        return ENTRY_BYTES + len(self.seconds) * 28 + len(self.times) * 24

    def add(self, record: UsageRecord) -> None:
        """Count the record into its second's sums; keep it whole if Anthropic-shaped and cache-reading."""
        second = math.ceil(record.time)  # (a record at t is in the window (since, now] iff its ceiling is)
        seconds = self.seconds
        at = len(seconds) - 1
        if at < 0 or seconds[at] < second:
            seconds.append(second)
            self.requests.append(0)
            self.prompt.append(0)
            self.cached.append(0)
            at += 1
        elif seconds[at] != second:  # (a record older than the entry's newest: its own bucket, in order)
            at = bisect_left(seconds, second)
            if at == len(seconds) or seconds[at] != second:
                seconds.insert(at, second)
                self.requests.insert(at, 0)
                self.prompt.insert(at, 0)
                self.cached.insert(at, 0)
        self.requests[at] += 1
        self.prompt[at] += record.prompt_tokens
        self.cached[at] += record.cached_tokens
        if record.input_tokens is not None and record.cached_tokens > 0:
            self.times.append(record.time)
            self.inputs.append(_count(record.input_tokens))
            self.reads.append(_count(record.cached_tokens))
            self.creations.append(_count(record.cache_creation_tokens))
            upstream = record.upstream_prompt_tokens
            self.upstreams.append(NONE if upstream is None else _count(upstream))
            if len(self.times) > RECENT:
                self._drop_recent(1)

    def trim(self, oldest: float) -> None:
        """Drop the buckets wholly before `oldest`, and the kept records before it."""
        cut = bisect_left(self.seconds, oldest)
        if cut:
            for column in (self.seconds, self.requests, self.prompt, self.cached):
                del column[:cut]
        cut = 0
        while cut < len(self.times) and self.times[cut] < oldest:
            cut += 1
        if cut:
            self._drop_recent(cut)

    def _drop_recent(self, count: int) -> None:
        for column in (self.times, self.inputs, self.reads, self.creations, self.upstreams):
            del column[:count]

    def totals(self, since: float, now: float) -> Totals:
        """Requests, prompt and cached tokens of the seconds in (since, now]."""
        low, high = bisect_right(self.seconds, since), bisect_right(self.seconds, now)
        if low >= high:
            return Totals(0, 0, 0)
        return Totals(sum(self.requests[low:high]), sum(self.prompt[low:high]), sum(self.cached[low:high]))

    def buckets(self) -> Iterator[tuple[int, int, int, int]]:
        """(second, requests, prompt tokens, cached tokens) of every second kept, oldest first."""
        return zip(self.seconds, self.requests, self.prompt, self.cached, strict=True)

    def recent(self, since: float, now: float, limit: int = RECENT) -> list[Recent]:
        """The last `limit` kept records in (since, now], in the order they came."""
        found: list[Recent] = []
        times = self.times
        for at in range(len(times) - 1, -1, -1):
            if len(found) == limit:
                break
            if since < times[at] <= now:
                upstream = self.upstreams[at]
                found.append(
                    Recent(
                        times[at],
                        self.inputs[at],
                        self.reads[at],
                        self.creations[at],
                        None if upstream == NONE else upstream,
                    )
                )
        found.reverse()
        return found


class UsageGroup:
    """One (source, model)'s entries, and its newest record's time."""

    __slots__ = ("entries", "newest")

    def __init__(self) -> None:
        self.entries: dict[str, EntryUsage] = {}
        self.newest = -math.inf


class UsageWindows:
    """Every (source, model)'s usage group, at most `budget` bytes in all (see the module docstring)."""

    def __init__(self, horizon: float, budget: int = BUDGET) -> None:
        self.horizon, self.budget = horizon, budget
        self.groups: OrderedDict[tuple[str, str], UsageGroup] = OrderedDict()  # updated longest ago first
        self.nbytes = 0

    def __bool__(self) -> bool:
        return bool(self.groups)

    def __len__(self) -> int:
        return len(self.groups)

    def __contains__(self, key: object) -> bool:
        return key in self.groups

    def add(self, record: UsageRecord) -> bool:
        """Take the record in; whether its group is new."""
        key = (record.source, record.model)
        group = self.groups.get(key)
        new = group is None
        if group is None:
            group = self.groups[key] = UsageGroup()
            self.nbytes += GROUP_BYTES
        else:
            self.groups.move_to_end(key)
        entry = group.entries.get(record.entry)
        if entry is None:
            entry = group.entries[record.entry] = EntryUsage()
            before = 0
        else:
            before = entry.nbytes
        group.newest = max(group.newest, record.time)
        entry.add(record)
        entry.trim(group.newest - self.horizon)
        self.nbytes += entry.nbytes - before
        while self.nbytes > self.budget and len(self.groups) > 1:
            self._drop(next(iter(self.groups)))
        return new

    def forget(self, source: str) -> None:
        """Drop every group of `source`."""
        for key in [k for k in self.groups if k[0] == source]:
            self._drop(key)

    def _drop(self, key: tuple[str, str]) -> None:
        group = self.groups.pop(key)
        self.nbytes -= GROUP_BYTES + sum(entry.nbytes for entry in group.entries.values())

    def sorted(self) -> Iterator[tuple[tuple[str, str], UsageGroup]]:
        """The groups by (source, model)."""
        for key in sorted(self.groups):
            yield key, self.groups[key]
