"""A configured engine's part of `replay --format text`, as a built-in engine's: per `engine` (the
pattern's `fields.engine`, a rank or worker) its cache-rate samples with the last rates and gauges they
gave, its offload samples with the bytes stored and loaded back and the lookups, then its requests'
totals and the last few requests. Only the event kinds its patterns yield, and only the figures they
set, have a column (a field no pattern sets would read as the event's default, not as what a line
said); a figure no line of the source gave yet is `-`."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kvwatch.engines.capabilities import SourceView
from kvwatch.engines.cells import pct, size, table, tokens
from kvwatch.engines.custom.spec import EngineSpec
from kvwatch.model import CacheRateSample, OffloadCounters, RequestRecord
from kvwatch.times import iso

#: Requests listed at the end.
LAST = 10
#: Engines (ranks, workers) with a row of their own; the figures of any further ones share `other`.
ROWS = 16

#: A cache-rate sample's figures the report shows: (field, column, cell of its last value).
_RATE_COLUMNS = (
    ("prefix_hit", "prefix", pct),
    ("external_hit", "external", pct),
    ("kv_cache_usage", "kv usage", pct),
    ("running", "running", str),
    ("waiting", "waiting", str),
)
#: An offload sample's figures, summed over the replay: (field, column, cell of the sum).
_OFFLOAD_COLUMNS = (
    ("store_bytes", "stored", size),
    ("load_bytes", "loaded", size),
    ("lookups", "lookups", str),
)
_LAST = ("time", "prompt", "cached", "new", "hit rate")


@dataclass
class Figures:
    """One source's figures of a configured engine: per engine its samples' count and the last (cache
    rate) or summed (offload) value of each figure a line gave."""

    rates: dict[str, tuple[int, dict[str, float]]] = field(default_factory=dict)
    offloads: dict[str, tuple[int, dict[str, float]]] = field(default_factory=dict)
    requests: int = 0
    prompt: int = 0
    cached: int = 0
    last: deque[RequestRecord] = field(default_factory=lambda: deque(maxlen=LAST))

    def observe(self, event: object) -> None:
        """Take one of the engine's events into account."""
        if isinstance(event, CacheRateSample):
            engine = _row_of(self.rates, event.engine)
            count, last = self.rates.get(engine, (0, {}))
            for name, _, _ in _RATE_COLUMNS:
                value = getattr(event, name)
                if value is not None:
                    last[name] = value
            self.rates[engine] = (count + 1, last)
        elif isinstance(event, OffloadCounters):
            engine = _row_of(self.offloads, event.engine)
            count, sums = self.offloads.get(engine, (0, {}))
            for name, _, _ in _OFFLOAD_COLUMNS:
                value = getattr(event, name)
                if value is not None:
                    sums[name] = sums.get(name, 0) + max(value, 0)
            self.offloads[engine] = (count + 1, sums)
        elif isinstance(event, RequestRecord):
            self.requests += 1
            self.prompt += event.prompt_tokens
            self.cached += event.cached_tokens
            self.last.append(event)


def _row_of(rows: dict[str, tuple[int, dict[str, float]]], engine: str) -> str:
    """The row an engine's figures go to: its own, or `other` once ROWS engines have one."""
    return engine if engine in rows or len(rows) < ROWS else "other"


def section(view: SourceView, spec: EngineSpec) -> list[str] | None:
    """The source's figures of the configured engine `spec` (None: it has none)."""
    figures: Figures | None = view.parts.get(spec.name)
    if figures is None:
        return None
    lines: list[str] = []
    for samples, kind, columns in (
        (figures.rates, "cache_rate", _RATE_COLUMNS),
        (figures.offloads, "offload", _OFFLOAD_COLUMNS),
    ):
        if not samples:
            continue
        shown = [(name, title, cell) for name, title, cell in columns if name in _set(spec, kind)]
        header = ("engine", f"{kind.replace('_', '-')} samples", *(title for _, title, _ in shown))
        rows = [
            (engine or "-", str(count), *(_cell(values.get(name), cell) for name, _, cell in shown))
            for engine, (count, values) in sorted(
                samples.items(), key=lambda item: (item[0] == "other", item[0])
            )
        ]
        lines.extend("  " + row for row in table(header, rows, frozenset({"engine"})))
    if figures.requests:
        rate = pct(figures.cached / figures.prompt) if figures.prompt else "-"
        lines.append(
            f"  requests {figures.requests}: prompt tokens {figures.prompt}, cached {figures.cached} ({rate})"
        )
        shown_last = len(figures.last)
        note = "" if shown_last == figures.requests else f" (last {shown_last} of {figures.requests})"
        lines.append(f"  requests{note}")
        request_rows = [_row(record) for record in figures.last]
        lines.extend("    " + row for row in table(_LAST, request_rows, frozenset({"time"})))
    return lines or None


def _set(spec: EngineSpec, kind: str) -> set[str]:
    """The fields the engine's patterns of event `kind` set."""
    return {f.name for pattern in spec.patterns if pattern.event == kind for f in pattern.fields}


def _cell(value: float | None, cell: Callable[[Any], str]) -> str:
    """A figure's cell: `-` when no line of the source gave it."""
    if value is None:
        return "-"
    return cell(int(value)) if cell is not pct and float(value).is_integer() else cell(value)


def _row(record: RequestRecord) -> tuple[str, ...]:
    """One request's cells."""
    prompt, cached = record.prompt_tokens, record.cached_tokens
    return (
        iso(record.time),
        *tokens(prompt, cached),
    )
