"""A configured engine's events: the engine-neutral ones, each carrying the label values its pattern read.

Each configured engine gets its own subclasses of these (kvwatch.engines.custom.make_events), so that a
source's engine is known by its events and its metrics take exactly its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.model import CacheRateSample, OffloadCounters, RequestRecord


@dataclass(slots=True)
class CustomRequest(RequestRecord):
    """A request record read by a configured pattern."""

    labels: tuple[str, ...] = ()


@dataclass(slots=True)
class CustomRate(CacheRateSample):
    """A cache-rate sample read by a configured pattern."""

    labels: tuple[str, ...] = ()


@dataclass(slots=True)
class CustomOffload(OffloadCounters):
    """Offload counters over one interval read by a configured pattern."""

    labels: tuple[str, ...] = ()


@dataclass(slots=True)
class CustomNotice:
    """Something the parser had to leave out: a match cut off by its timeout ("timeout"), or a label
    value over its cap ("label_overflow"); counted in the engine's metrics."""

    source: str
    time: float
    pattern: str
    kind: str
    label: str = ""
