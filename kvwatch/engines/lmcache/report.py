"""LMCache's part of `replay --format text`: lookups and their hit rate, stores and loads per worker,
short loads and failures, MP mode's prefetches."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvwatch.engines.capabilities import SourceView
from kvwatch.engines.cells import pct, size, table
from kvwatch.engines.lmcache.events import (
    LmcacheFailure,
    LmcacheLookup,
    LmcachePrefetch,
    LmcacheStoreRequest,
    LmcacheTransfer,
)

#: Workers (TP ranks) and failure kinds kept per source, then "other".
MAX_WORKERS = 16
MAX_FAILURES = 16

_WORKERS = (
    "worker",
    "store asked",
    "stores",
    "stored tokens",
    "stored size",
    "retrieves",
    "retrieved tokens",
    "required",
    "retrieved size",
    "short",
)


@dataclass
class Sum:
    """A sum of figures some lines carry and others may not: unknown until one does."""

    total: float = 0
    known: int = 0  # lines that carried it
    unknown: int = 0  # lines that did not

    def add(self, value: float | None, lines: int = 1) -> None:
        """Add one event's figure (None: its lines did not carry it)."""
        if value is None:
            self.unknown += lines
        else:
            self.total += value
            self.known += lines

    def cell(self, bytes_: bool = False) -> str:
        """The sum (a byte count with its unit); `-` when no line carried it, `>=` when only some did."""
        if not self.known:
            return "-"
        text = size(int(self.total)) if bytes_ else str(int(self.total))
        return text if not self.unknown else ">=" + text


@dataclass
class Worker:
    """One worker's stores and loads."""

    store_asked: Sum = field(default_factory=Sum)  # `Storing KV cache for N out of M tokens`
    stores: int = 0
    stored: int = 0
    stored_bytes: Sum = field(default_factory=Sum)
    retrieves: int = 0
    retrieved: int = 0
    required: Sum = field(default_factory=Sum)
    retrieved_bytes: Sum = field(default_factory=Sum)
    short: int = 0


@dataclass
class Figures:
    """One source's LMCache events, summed."""

    lookups: int = 0
    query: int = 0
    hit: int = 0
    need: int = 0
    apc: Sum = field(default_factory=Sum)  # vLLM's own prefix cache's tokens (0.3.15+ lookup lines)
    workers: dict[str, Worker] = field(default_factory=dict)
    failures: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # (worker, kind) -> [n, lost]
    lost: Sum = field(default_factory=Sum)
    prefetches: int = 0
    prefetch_hits: int = 0
    prefetch_keys: int = 0

    def observe(self, event: object) -> None:
        """Take one LMCache event into account."""
        if isinstance(event, LmcacheLookup):
            self.lookups += event.lookups
            self.query += event.query_tokens
            self.hit += event.hit_tokens
            self.need += event.need_load_tokens
            self.apc.add(event.local_tokens, event.lookups)
        elif isinstance(event, LmcacheTransfer):
            worker = self._worker(event.worker)
            if event.load:
                worker.retrieves += event.lines
                worker.retrieved += event.tokens
                worker.required.add(event.asked, event.lines)
                worker.retrieved_bytes.add(event.bytes, event.lines)
                worker.short += event.short
            else:
                worker.stores += event.lines
                worker.stored += event.tokens
                worker.stored_bytes.add(event.bytes, event.lines)
        elif isinstance(event, LmcacheStoreRequest):
            self._worker(event.worker).store_asked.add(event.tokens)
        elif isinstance(event, LmcacheFailure):
            key = (event.worker, event.kind)
            if key not in self.failures and len(self.failures) >= MAX_FAILURES:
                key = ("other", "other")
            counts = self.failures.setdefault(key, [0, 0])
            counts[0] += 1
            counts[1] += event.tokens or 0
            self.lost.add(event.tokens)
        elif isinstance(event, LmcachePrefetch):
            self.prefetches += 1
            self.prefetch_hits += event.hit_keys
            self.prefetch_keys += event.requested_keys

    def _worker(self, name: str) -> Worker:
        if name not in self.workers and len(self.workers) >= MAX_WORKERS:
            name = "other"
        worker = self.workers.get(name)
        if worker is None:
            worker = self.workers[name] = Worker()
        return worker


def section(view: SourceView) -> list[str] | None:
    """A source's LMCache figures (None: it has none)."""
    figures: Figures | None = view.parts.get("lmcache")
    if figures is None:
        return None
    lines = []
    if figures.lookups:
        apc = figures.apc.cell()
        lines.append(
            f"  lmcache lookups {figures.lookups}: query tokens {figures.query or '-'}, hit {figures.hit} "
            f"({pct(figures.hit / figures.query) if figures.query else '-'}), need load {figures.need}"
            + ("" if apc == "-" else f", vLLM prefix cache {apc}")
        )
    if figures.workers:
        rows = [
            (
                name,
                worker.store_asked.cell(),
                str(worker.stores),
                str(worker.stored),
                worker.stored_bytes.cell(bytes_=True),
                str(worker.retrieves),
                str(worker.retrieved),
                worker.required.cell(),
                worker.retrieved_bytes.cell(bytes_=True),
                str(worker.short) if worker.required.known else "-",  # (short: fewer than required)
            )
            for name, worker in sorted(figures.workers.items())
        ]
        lines.extend("  " + row for row in table(_WORKERS, rows, frozenset({"worker"})))
    for (worker, kind), (count, lost) in sorted(figures.failures.items()):
        tokens = f", {lost} tokens lost" if lost else ""
        lines.append(f"  lmcache failures {worker} {kind} {count}{tokens}")
    if figures.prefetches:
        found = pct(figures.prefetch_hits / figures.prefetch_keys) if figures.prefetch_keys else "-"
        lines.append(
            f"  lmcache prefetches {figures.prefetches}: keys found {figures.prefetch_hits} "
            f"of {figures.prefetch_keys} ({found})"
        )
    return lines or None
