"""`replay --format text`: a summary per source, for a human at a terminal."""

from __future__ import annotations

from kvwatch.engines import ENGINES, layers_of
from kvwatch.engines.capabilities import Reports, SourceView
from kvwatch.model import Alert
from kvwatch.output.summary import Summary
from kvwatch.times import iso


def _unread(shapes: dict[str, int]) -> list[str]:
    """The sanitised shapes of the lines kvwatch could not (wholly) read, commonest first."""
    if not shapes:
        return []
    ordered = sorted(shapes.items(), key=lambda item: (-item[1], item[0]))
    return [
        "  lines not (wholly) read, by sanitised shape (numbers masked as N; see format_drift):",
        *(f"  {count:>8}  {shape}" for shape, count in ordered),
    ]


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
    layers = {layer for name in ENGINES for layer in layers_of(name)}
    for known in ENGINES.values():  # the first engine with something to say about the source
        section = known.section(view) if isinstance(known, Reports) and known.name not in layers else None
        if section is not None:
            lines.extend(section)
            break
    for known in ENGINES.values():  # then each cache layer's the source carries
        section = known.section(view) if isinstance(known, Reports) and known.name in layers else None
        if section is not None:
            lines.extend(section)
    return lines


def render(summary: Summary, alerts: list[Alert]) -> str:
    """The whole text report."""
    lines: list[str] = []
    for name in sorted(summary.sources):
        lines.extend(_source(name, summary.sources[name]))
        lines.extend(_unread(summary.unread.get(name, {})))
        lines.append("")
    lines.append(f"alerts: {len(alerts)} transitions")
    for alert in alerts:
        server = alert.labels.get("server")  # (one of several servers of its source: say which)
        name = f"{alert.alert} ({server})" if server else alert.alert
        lines.append(f"  {iso(alert.at)}  {alert.state:<8} {alert.severity:<8} {name}  {alert.summary}")
    return "\n".join(lines) + "\n"
