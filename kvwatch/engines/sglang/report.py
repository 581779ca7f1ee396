"""SGLang's part of `replay --format text`: prefill batches per DP rank, requests and their hit rate
(by tier where the log splits it), HiCache prefetches and errors, the last requests."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kvwatch.engines.capabilities import SourceView
from kvwatch.engines.cells import pct, table, tokens
from kvwatch.engines.sglang.events import SglangDecode, SglangHicacheError, SglangPrefill, SglangRequest
from kvwatch.model import CachePrefetch
from kvwatch.times import iso

#: Rows kept per source: DP ranks, tiers, prefetch outcomes and error kinds (then "other"); last requests.
MAX_ROWS = 16
LAST = 10

_RANKS = (
    "rank",
    "batches",
    "seqs",
    "computed",
    "cached",
    "hit rate",
    "decodes",
    "kv usage",
    "running",
    "queued",
)
_LAST = ("time", "prompt", "cached", "new", "hit rate", "tiers", "notes")


@dataclass
class Rank:
    """One DP rank's batch lines: prefill sums, decode lines, the last logged gauges."""

    batches: int = 0
    seqs: int = 0
    computed: int = 0
    cached: int = 0
    decodes: int = 0
    usage: tuple[tuple[str, float], ...] = ()
    running: int | None = None
    queued: int | None = None


def _count(counts: dict[str, int], key: str, amount: int = 1) -> None:
    """Add to a bounded dict of counts (past MAX_ROWS keys, to "other")."""
    if key not in counts and len(counts) >= MAX_ROWS:
        key = "other"
    counts[key] = counts.get(key, 0) + amount


@dataclass
class Figures:
    """One source's SGLang events, summed."""

    ranks: dict[str, Rank] = field(default_factory=dict)
    requests: int = 0
    derived: int = 0
    prompt: int = 0
    cached: int = 0
    tiers: dict[str, int] = field(default_factory=dict)  # cached tokens by tier, where the log splits them
    prefetches: dict[str, int] = field(default_factory=dict)  # outcome -> count
    errors: dict[str, int] = field(default_factory=dict)  # kind -> count
    last: deque[SglangRequest] = field(default_factory=lambda: deque(maxlen=LAST))

    def observe(self, event: object) -> None:
        """Take one SGLang event into account."""
        if isinstance(event, SglangPrefill):
            rank = self._rank(event.engine)
            rank.batches += 1
            rank.seqs += event.seqs
            rank.computed += event.computed
            rank.cached += event.cached
            self._gauges(rank, event.running, event.queued, event.usage)
        elif isinstance(event, SglangDecode):
            rank = self._rank(event.engine)
            rank.decodes += 1
            self._gauges(rank, event.running, event.queued, event.usage)
        elif isinstance(event, SglangRequest):
            self.requests += 1
            self.derived += event.derived
            self.prompt += event.prompt_tokens
            self.cached += event.cached_tokens
            for tier, tokens in event.tiers:
                _count(self.tiers, tier, tokens)
            self.last.append(event)
        elif isinstance(event, CachePrefetch):
            _count(self.prefetches, event.outcome)
        elif isinstance(event, SglangHicacheError):
            _count(self.errors, event.kind)

    def _rank(self, name: str) -> Rank:
        if name not in self.ranks and len(self.ranks) >= MAX_ROWS:
            name = "other"
        rank = self.ranks.get(name)
        if rank is None:
            rank = self.ranks[name] = Rank()
        return rank

    @staticmethod
    def _gauges(
        rank: Rank, running: int | None, queued: int | None, usage: tuple[tuple[str, float], ...]
    ) -> None:
        if running is not None:
            rank.running = running
        if queued is not None:
            rank.queued = queued
        if usage:
            rank.usage = usage


def section(view: SourceView) -> list[str] | None:
    """A source's SGLang figures (None: it has none)."""
    figures: Figures | None = view.parts.get("sglang")
    if figures is None:
        return None
    lines: list[str] = []
    if figures.ranks:
        rows: list[tuple[str, ...]] = [
            (
                name,
                str(rank.batches),
                str(rank.seqs),
                str(rank.computed),
                str(rank.cached),
                pct(rank.cached / (rank.computed + rank.cached)) if rank.computed + rank.cached else "-",
                str(rank.decodes),
                ",".join(f"{pool}={pct(value)}" for pool, value in rank.usage) or "-",
                "-" if rank.running is None else str(rank.running),
                "-" if rank.queued is None else str(rank.queued),
            )
            for name, rank in sorted(figures.ranks.items())
        ]
        lines.extend("  " + row for row in table(_RANKS, rows, frozenset({"rank", "kv usage"})))
    if figures.requests:
        how = (
            "from prefill batches" if figures.derived == figures.requests
            else "--log-requests" if not figures.derived
            else f"{figures.derived} from prefill batches"
        )  # fmt: skip
        rate = pct(figures.cached / figures.prompt) if figures.prompt else "-"
        lines.append(
            f"  requests {figures.requests} ({how}): prompt tokens {figures.prompt}, "
            f"cached {figures.cached} ({rate})"
        )
        if figures.tiers:
            split = ", ".join(f"{tier} {tokens}" for tier, tokens in sorted(figures.tiers.items()))
            lines.append(f"  cached tokens by tier: {split}")
    for name, counts in (("hicache prefetches", figures.prefetches), ("hicache errors", figures.errors)):
        if counts:
            said = ", ".join(f"{key} {count}" for key, count in sorted(counts.items()))
            lines.append(f"  {name} {sum(counts.values())} ({said})")
    if figures.last:
        note = (
            ""
            if len(figures.last) == figures.requests
            else f" (last {len(figures.last)} of {figures.requests})"
        )
        lines.append(f"  requests{note}")
        rows = [_row(record) for record in figures.last]
        lines.extend("    " + row for row in table(_LAST, rows, frozenset({"time", "tiers", "notes"})))
    return lines or None


def _row(record: SglangRequest) -> tuple[str, ...]:
    """One request's cells."""
    prompt, cached = record.prompt_tokens, record.cached_tokens
    return (
        iso(record.time),
        *tokens(prompt, cached),
        ",".join(f"{tier}={tokens}" for tier, tokens in record.tiers),
        "derived" if record.derived else "",
    )
