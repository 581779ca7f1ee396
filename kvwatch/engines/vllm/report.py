"""vLLM's part of `replay --format text`: a source's startup facts, then one row per engine."""

from __future__ import annotations

from kvwatch.report.cells import pct, size
from kvwatch.report.summary import SourceView


def section(view: SourceView) -> list[str] | None:
    """The facts and per-engine table of a source vLLM recognised lines of (None: it did not)."""
    if "vllm" not in view.engine.split(", "):
        return None
    lines = []
    for key in sorted(view.facts):
        lines.append(f"  {key}: {view.facts[key]}")
    if view.engines:
        lines.append("  engine  stats  prefix  external  kv-usage  kv-lines  stored      loaded")
    for name in sorted(view.engines, key=lambda e: (e == "all", e.zfill(4))):
        eng = view.engines[name]
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
