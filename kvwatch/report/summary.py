"""What `replay --format text` tells a human about each source, gathered as events pass."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kvwatch.model import (
    EngineFact,
    Event,
    LlamaRequest,
    SourceCounts,
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
    store_bytes: int | None = None  # None: no KV line carried a byte count (another connector)
    load_bytes: int | None = None


@dataclass
class SourceView:
    """One source's figures over the replay."""

    engine: str  # after a replay, the engines that recognised a line of it ("": none did)
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


#: Event type -> whether the summary keeps more of it than its time.
_KEPT: dict[type, bool] = {}


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
        time = event.time
        if view.first is None or time < view.first:  # min() and max(), without the calls
            view.first = time
        if view.last is None or time > view.last:
            view.last = time
        kept = _KEPT.get(type(event))
        if kept is None:
            kept = _KEPT[type(event)] = issubclass(
                type(event), (VllmStats, VllmKvTransfer, VllmPrefixV0, EngineFact, LlamaRequest, UsageRecord)
            )
        if not kept:  # (an event type the summary shows nothing of but its time)
            return
        if isinstance(event, VllmStats):
            eng = view.engines.get(event.engine) or self._engine(view, event.engine)
            eng.stats_lines += 1
            if event.prefix_hit is not None:
                eng.prefix = event.prefix_hit
            if event.external_hit is not None:
                eng.external = event.external_hit
            if event.kv_cache_usage is not None:
                eng.kv_usage = event.kv_cache_usage
        elif isinstance(event, VllmKvTransfer):
            eng = view.engines.get(event.engine) or self._engine(view, event.engine)
            eng.kv_lines += 1
            if event.store_bytes is not None:
                eng.store_bytes = (eng.store_bytes or 0) + event.store_bytes
            if event.load_bytes is not None:
                eng.load_bytes = (eng.load_bytes or 0) + event.load_bytes
        elif isinstance(event, VllmPrefixV0):
            self._engine(view, event.engine).prefix = event.gpu_hit
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

    @staticmethod
    def _engine(view: SourceView, name: str) -> EngineView:
        eng = view.engines.get(name)
        if eng is None:
            eng = view.engines[name] = EngineView()
        return eng
