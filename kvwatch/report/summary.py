"""What `replay --format text` tells a human about each source, gathered as events pass."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kvwatch.metrics import SourceCounts
from kvwatch.model import (
    EngineFact,
    Event,
    LlamaRequest,
    UsageRecord,
    VllmKvTransfer,
    VllmPrefixV0,
    VllmStats,
)

#: The text report keeps the last this many llama.cpp requests per source (memory stays bounded).
MAX_ROWS = 5000


@dataclass
class EngineView:
    """One vLLM engine's figures over the replay."""

    stats_lines: int = 0
    prefix: float | None = None
    external: float | None = None
    kv_usage: float | None = None
    kv_lines: int = 0
    store_bytes: int = 0
    load_bytes: int = 0


@dataclass
class SourceView:
    """One source's figures over the replay."""

    engine: str
    framing: str
    counts: SourceCounts
    first: float | None = None
    last: float | None = None
    engines: dict[str, EngineView] = field(default_factory=dict)
    facts: dict[str, str] = field(default_factory=dict)
    requests: deque[LlamaRequest] = field(default_factory=lambda: deque(maxlen=MAX_ROWS))
    request_count: int = 0
    usage: dict[tuple[str, str], list[int]] = field(
        default_factory=dict
    )  # (entry, model) -> [n, prompt, cached]


class Summary:
    """Observer that keeps a SourceView per source."""

    def __init__(self) -> None:
        self.sources: dict[str, SourceView] = {}

    @property
    def counts(self) -> dict[str, SourceCounts]:
        """Line counts per source."""
        return {name: view.counts for name, view in self.sources.items()}

    def declare(self, source: str, engine: str, framing: str, counts: SourceCounts) -> None:
        """Register a source before its events arrive (a file may be one of several of a source)."""
        view = self.sources.get(source)
        if view is None:
            self.sources[source] = SourceView(engine, framing, counts)
        elif framing not in view.framing.split(", "):
            view.framing += ", " + framing

    def observe(self, event: Event) -> None:
        """Take one event into account."""
        view = self.sources[event.source]
        view.first = event.time if view.first is None else min(view.first, event.time)
        view.last = event.time if view.last is None else max(view.last, event.time)
        if isinstance(event, VllmStats):
            eng = view.engines.setdefault(event.engine, EngineView())
            eng.stats_lines += 1
            eng.prefix = event.prefix_hit if event.prefix_hit is not None else eng.prefix
            eng.external = event.external_hit if event.external_hit is not None else eng.external
            eng.kv_usage = event.kv_cache_usage if event.kv_cache_usage is not None else eng.kv_usage
        elif isinstance(event, VllmPrefixV0):
            view.engines.setdefault(event.engine, EngineView()).prefix = event.gpu_hit
        elif isinstance(event, VllmKvTransfer):
            eng = view.engines.setdefault(event.engine, EngineView())
            eng.kv_lines += 1
            eng.store_bytes += event.store_bytes or 0
            eng.load_bytes += event.load_bytes or 0
        elif isinstance(event, EngineFact):
            view.facts[event.key] = event.value
        elif isinstance(event, LlamaRequest):
            view.requests.append(event)
            view.request_count += 1
        elif isinstance(event, UsageRecord):
            totals = view.usage.setdefault((event.entry, event.model), [0, 0, 0])
            totals[0] += 1
            totals[1] += event.prompt_tokens
            totals[2] += event.cached_tokens
