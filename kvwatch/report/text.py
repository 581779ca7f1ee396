"""`replay --format text`: a summary per source, for a human at a terminal."""

from __future__ import annotations

from kvwatch.model import Alert
from kvwatch.parsers.clock import iso
from kvwatch.report.llamacpp import requests_table
from kvwatch.report.summary import SourceView, Summary


def _pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio * 100:.1f}%"


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{count} B"


def _bytes(count: int | None, kv_lines: int) -> str:
    if not kv_lines:
        return "-"
    return "unknown" if count is None else _size(count)


def _vllm(view: SourceView) -> list[str]:
    lines = []
    for key in sorted(view.facts):
        lines.append(f"  {key}: {view.facts[key]}")
    if view.engines:
        lines.append("  engine  stats  prefix  external  kv-usage  kv-lines  stored      loaded")
    for name in sorted(view.engines, key=lambda e: (e == "all", e.zfill(4))):
        eng = view.engines[name]
        stored, loaded = _bytes(eng.store_bytes, eng.kv_lines), _bytes(eng.load_bytes, eng.kv_lines)
        lines.append(
            f"  {name:<6}  {eng.stats_lines:>5}  {_pct(eng.prefix):>6}  {_pct(eng.external):>8}  "
            f"{_pct(eng.kv_usage):>8}  {eng.kv_lines:>8}  {stored:<10}  {loaded}"
        )
    return lines


def _usage(view: SourceView) -> list[str]:
    lines = [
        "  entry                     model                     requests  prompt tokens  cached     hit rate"
    ]
    for (entry, model), (count, prompt, cached) in sorted(view.usage.items()):
        rate = _pct(cached / prompt) if prompt else "-"
        lines.append(f"  {entry:<24}  {model[:24]:<24}  {count:>8}  {prompt:>13}  {cached:>9}  {rate:>8}")
    return lines


def _source(name: str, view: SourceView) -> list[str]:
    counts = view.counts
    span = (
        f"{iso(view.first)} .. {iso(view.last)}"
        if view.first is not None and view.last is not None
        else "no events"
    )
    engine = f"engine {view.engine}" if view.engine else "no engine recognised"  # (see replay._replay)
    lines = [
        f"source {name} ({engine}, {view.framing})",
        f"  lines {counts.lines}, recognised {counts.recognized}, parse errors {counts.errors}, "
        f"truncated {counts.truncated}",
        f"  events {span}",
    ]
    if "vllm" in view.engine.split(", "):
        lines.extend(_vllm(view))
    elif view.usage:
        lines.extend(_usage(view))
    elif view.request_count:
        shown = len(view.requests)
        note = "" if shown == view.request_count else f" (last {shown} shown)"
        lines.append(f"  requests {view.request_count}{note}")
        lines.extend("  " + row for row in requests_table(list(view.requests)).splitlines())
    return lines


def render(summary: Summary, alerts: list[Alert]) -> str:
    """The whole text report."""
    lines: list[str] = []
    for name in sorted(summary.sources):
        lines.extend(_source(name, summary.sources[name]))
        lines.append("")
    lines.append(f"alerts: {len(alerts)} transitions")
    for alert in alerts:
        lines.append(
            f"  {iso(alert.at)}  {alert.state:<8} {alert.severity:<8} {alert.alert}  {alert.summary}"
        )
    return "\n".join(lines) + "\n"
