"""vLLM's part of `replay --format text`: a source's startup facts, then one row per engine."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvwatch.engines.capabilities import SourceView
from kvwatch.engines.cells import pct, size
from kvwatch.engines.vllm.events import VllmKvTransfer, VllmPrefixV0, VllmStats
from kvwatch.model import EngineFact
from kvwatch.parsers.drift import FACT as DRIFT_FACT


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
class Figures:
    """One source's vLLM figures: its startup facts and each engine's."""

    engines: dict[str, EngineView] = field(default_factory=dict)
    facts: dict[str, str] = field(default_factory=dict)
    cpu_column: bool = False  # V0 lines read in their CPU column (the CPU backend, 0.9.0+)

    def observe(self, event: object) -> None:
        """Take one vLLM event into account."""
        if isinstance(event, VllmStats):
            eng = self.engines.get(event.engine) or self._engine(event.engine)
            eng.stats_lines += 1
            if event.prefix_hit is not None:
                eng.prefix = event.prefix_hit
            if event.external_hit is not None:
                eng.external = event.external_hit
            if event.kv_cache_usage is not None:
                eng.kv_usage = event.kv_cache_usage
            if event.v0 and event.kv_device == "CPU":
                self.cpu_column = True
        elif isinstance(event, VllmKvTransfer):
            eng = self.engines.get(event.engine) or self._engine(event.engine)
            eng.kv_lines += 1
            if event.store_bytes is not None:
                eng.store_bytes = (eng.store_bytes or 0) + event.store_bytes
            if event.load_bytes is not None:
                eng.load_bytes = (eng.load_bytes or 0) + event.load_bytes
        elif isinstance(event, VllmPrefixV0):
            self._engine(event.engine).prefix = event.hit
        elif isinstance(event, EngineFact) and not event.key.startswith(DRIFT_FACT):
            self.facts[event.key] = event.value  # (drifted shapes: the report's own list, exact)

    def _engine(self, name: str) -> EngineView:
        eng = self.engines.get(name)
        if eng is None:
            eng = self.engines[name] = EngineView()
        return eng


def section(view: SourceView) -> list[str] | None:
    """The facts and per-engine table of a source vLLM recognised lines of (None: it did not)."""
    if "vllm" not in view.engine.split(", "):
        return None
    figures: Figures = view.parts.get("vllm") or Figures()
    lines = []
    for key in sorted(figures.facts):
        lines.append(f"  {key}: {figures.facts[key]}")
    if figures.cpu_column:
        lines.append("  backend: CPU (V0 cache figures read from the CPU column; its GPU column is swap)")
    if figures.engines:
        lines.append("  engine  stats  prefix  external  kv-usage  kv-lines  stored      loaded")
    for name in sorted(figures.engines, key=lambda e: (e == "all", e.zfill(4))):
        eng = figures.engines[name]
        stored, loaded = _bytes(eng.store_bytes, eng.kv_lines), _bytes(eng.load_bytes, eng.kv_lines)
        lines.append(
            f"  {name:<6}  {eng.stats_lines:>5}  {pct(eng.prefix):>6}  {pct(eng.external):>8}  "
            f"{pct(eng.kv_usage):>8}  {eng.kv_lines:>8}  {stored:<10}  {loaded}"
        )
    return lines


def _bytes(count: int | None, kv_lines: int) -> str:
    """A KV tier's bytes: `-` without KV lines, `unknown` when its lines carry no byte keys (NIXL)."""
    if not kv_lines:
        return "-"
    return "unknown" if count is None else size(count)
