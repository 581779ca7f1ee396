"""LM Studio's part of `replay --format text`: requests and hit rate per model, cache clears and trims,
the vision cache's disk, the last requests."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kvwatch.engines.capabilities import SourceView
from kvwatch.engines.cells import pct, size, table, tokens
from kvwatch.engines.lmstudio.events import (
    LmstudioCacheEvent,
    LmstudioCompletion,
    LmstudioDiskUsage,
    LmstudioRequest,
)
from kvwatch.times import iso

#: Rows kept per source: (model, runtime) pairs (then "other"), and the last requests shown.
MAX_MODELS = 16
LAST = 10

_MODELS = ("model", "runtime", "requests", "prompt tokens", "cached", "hit rate", "lifetime eff")
_LAST = ("time", "model", "runtime", "prompt", "cached", "new", "hit rate")


@dataclass
class Figures:
    """One source's LM Studio events, summed: per (model, runtime) [requests, prompt, cached]."""

    models: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    efficiency: dict[tuple[str, str], float] = field(default_factory=dict)  # last logged
    completions: int = 0
    clears: dict[str, int] = field(default_factory=dict)  # reason -> count (reasons are the parser's few)
    trims: int = 0
    trimmed: int = 0
    mlx: bool = False  # mlx-engine logs clears and trims; LM Studio's llama.cpp runtime does not
    disk: LmstudioDiskUsage | None = None
    last: deque[LmstudioRequest] = field(default_factory=lambda: deque(maxlen=LAST))

    def observe(self, event: object) -> None:
        """Take one LM Studio event into account."""
        if isinstance(event, LmstudioRequest):
            key = (event.model, event.runtime)
            if key not in self.models and len(self.models) >= MAX_MODELS:
                key = ("other", event.runtime)
            totals = self.models.setdefault(key, [0, 0, 0])
            totals[0] += 1
            totals[1] += event.prompt_tokens
            totals[2] += event.cached_tokens
            if event.lifetime_efficiency is not None:
                self.efficiency[key] = event.lifetime_efficiency
            self.mlx = self.mlx or event.runtime.startswith("mlx")
            self.last.append(event)
        elif isinstance(event, LmstudioCompletion):
            self.completions += 1
        elif isinstance(event, LmstudioCacheEvent):
            self.mlx = True
            if event.kind == "clear":
                self.clears[event.reason] = self.clears.get(event.reason, 0) + 1
            else:
                self.trims += 1
                self.trimmed += event.tokens
        elif isinstance(event, LmstudioDiskUsage):
            self.mlx = True
            self.disk = event


def section(view: SourceView) -> list[str] | None:
    """A source's LM Studio figures (None: it has none)."""
    figures: Figures | None = view.parts.get("lmstudio")
    if figures is None:
        return None
    requests = sum(totals[0] for totals in figures.models.values())
    lines = []
    if figures.completions or requests:
        lines.append(f"  chat completions begun {figures.completions}, requests with a cache line {requests}")
    if figures.models:
        rows = []
        for key, (count, prompt, cached) in sorted(figures.models.items()):
            efficiency = figures.efficiency.get(key)
            rate = pct(cached / prompt) if prompt else "-"
            rows.append(
                (key[0][:32] or "-", key[1], str(count), str(prompt), str(cached), rate, pct(efficiency))
            )
        lines.extend("  " + row for row in table(_MODELS, rows, frozenset({"model", "runtime"})))
    if figures.mlx:
        reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(figures.clears.items()))
        clears = sum(figures.clears.values())
        lines.append(
            f"  cache clears {clears}{f' ({reasons})' if reasons else ''}, "
            f"trims {figures.trims} ({figures.trimmed} tokens)"
        )
    if figures.disk is not None:
        disk = figures.disk
        lines.append(
            f"  vision disk cache {size(int(disk.used_bytes))} of {size(int(disk.cap_bytes))}, "
            f"{disk.records} records (last logged)"
        )
    if figures.last:
        note = "" if len(figures.last) == requests else f" (last {len(figures.last)} of {requests})"
        lines.append(f"  requests{note}")
        lines.extend(
            "    " + row for row in table(_LAST, [_row(r) for r in figures.last], frozenset(_LAST[:3]))
        )
    return lines


def _row(record: LmstudioRequest) -> tuple[str, ...]:
    """One request's cells."""
    prompt, cached = record.prompt_tokens, record.cached_tokens
    return (
        iso(record.time),
        record.model[:32] or "-",
        record.runtime,
        *tokens(prompt, cached),
    )
