"""The report's HTML: one self-contained file (styles, the vendored uPlot, the charts' data and script all
inline), so that opening it makes no request, offline, attached to a ticket.

At the top, what kvwatch concluded: each alert with its summary, cause, evidence and fix (the landing
page's words), the period, the sources with their engines and versions, and what kvwatch could not see;
then each source's charts. Every text from a log is HTML-escaped; no prompt text is ever in one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from html import escape
from importlib import resources

from kvwatch.forensic.charts import SourceCharts
from kvwatch.model import Alert
from kvwatch.web.landing import alert_card

#: The vendored chart library's version (kvwatch/forensic/vendor/README.md records its origin).
UPLOT_VERSION = "1.6.32"

#: The kinds of chart that take a whole row (the others pair: a group's timeline beside its distribution).
WIDE = ("rate", "offload")

CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1240px;padding:12px 24px;color:#1d2330}
header{border-bottom:1px solid #d5dae3;margin-bottom:8px} h1{font-size:24px;margin:8px 0 2px}
h2{font-size:20px;margin:26px 0 6px;border-bottom:1px solid #e3e7ee} h3{font-size:16px;margin:4px 0}
.muted{color:#5d6675;font-size:13px} .ok{color:#17753a;font-weight:600}
table{border-collapse:collapse} th,td{text-align:left;padding:4px 10px;vertical-align:top}
th{background:#eef1f6;font-weight:600} tr+tr td{border-top:1px solid #e3e7ee} td.n{text-align:right}
.alert{border:1px solid #d5dae3;border-left:6px solid #5d6675;border-radius:4px;padding:6px 16px;
margin:10px 0}
.alert.critical{border-left-color:#b3261e} .alert.warning{border-left-color:#c77700}
.alert.info{border-left-color:#1f5fbf} .alert h3{margin:4px 0;font-size:17px}
.sev{font-size:12px;font-weight:700;text-transform:uppercase;padding:1px 6px;border-radius:3px;color:#fff;
background:#5d6675} .critical .sev{background:#b3261e} .warning .sev{background:#c77700}
.info .sev{background:#1f5fbf} .summary{font-weight:600;margin:6px 0}
dl{display:grid;grid-template-columns:max-content 1fr max-content 1fr;gap:2px 14px;margin:4px 0 8px}
dt{font-family:ui-monospace,monospace;font-size:13px;color:#394150} dd{margin:0}
.label{font-weight:600;margin:8px 0 2px} p{margin:2px 0} ul.blind li{margin:2px 0}
"""
#: The charts' own style (the landing page adds it to its own).
CHART_CSS = """
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:14px}
.chart{border:1px solid #d5dae3;border-radius:4px;padding:8px 10px;min-width:0}
.chart.wide{grid-column:1/-1}
.chart .plot{min-height:250px} .chart .note{color:#8a5a00;font-size:13px}
.chart ul{margin:4px 0;padding-left:20px;font-size:14px}
.u-legend{font-size:12px} .u-legend .u-series th{font-weight:500}
"""


@dataclass
class SourceInfo:
    """What the summary says of one source."""

    name: str
    engines: str  # the engines that recognised its lines ("": none)
    versions: str  # the versions its engines printed ("": none printed)
    lines: int
    recognized: int
    errors: int
    first: float | None
    last: float | None


@dataclass
class ReportPage:
    """Everything the page shows."""

    title: str
    period: tuple[float, float] | None
    sources: list[SourceInfo]
    alerts: list[Alert]  # the transitions
    blind: list[str]  # what kvwatch could not see, one sentence each
    sections: list[SourceCharts]
    made: str = ""  # how it was made, e.g. the command, for the footer
    narrowed: list[str] = field(default_factory=list)  # the narrowing asked for (--since, ...)
    #: the alerts firing at the end as the alert book holds them (their words as of the last tick)
    firing: list[Alert] = field(default_factory=list)


@cache
def _vendor(name: str) -> str:
    """A vendored file's text (package data)."""
    return (resources.files("kvwatch.forensic") / "vendor" / name).read_text("utf-8")


@cache
def script() -> str:
    """The page's own chart script (package data)."""
    return (resources.files("kvwatch.forensic") / "charts.js").read_text("utf-8")


def assets() -> str:
    """The chart library's style and script and kvwatch's chart script, inline (for any page)."""
    # ("</" never occurs in them; a script element ends only at "</script")
    return (
        f"<style>{_vendor('uPlot.min.css')}</style>"
        f"<script>{_vendor('uPlot.iife.min.js')}</script>"
        f"<script>{script()}</script>"
    )


def stamp(at: float) -> str:
    """An event time as the report prints it: `2026-12-01 21:03:10Z`."""
    return datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def data_script(sections: Sequence[SourceCharts]) -> str:
    """The charts' specifications as an inline JSON script element (`<` escaped: no text ends it)."""
    charts = [chart for section in sections for chart in section.charts]
    body = json.dumps({"charts": charts}, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    return f"<script type='application/json' id='kvwatch-charts'>{body}</script>"


def chart_cards(section: SourceCharts) -> str:
    """One source's charts as cards (each filled by the script)."""
    cards = []
    for chart in section.charts:
        words = "".join(f"<li>{escape(line)}</li>" for line in section.words.get(chart["id"], []))
        note = f"<p class='note'>{escape(chart['note'])}</p>" if chart.get("note") else ""
        subtitle = f"<p class='muted'>{escape(chart['subtitle'])}</p>" if chart.get("subtitle") else ""
        wide = " wide" if chart["kind"] in WIDE else ""
        cards.append(
            f"<div class='chart{wide}' data-kind='{escape(chart['kind'])}'>"
            f"<h3>{escape(chart['title'])}</h3>"
            f"{subtitle}<div class='plot' id='{escape(chart['id'])}'></div>{note}"
            f"{f'<ul>{words}</ul>' if words else ''}</div>"
        )
    return f"<div class='charts'>{''.join(cards)}</div>"


def _transitions(alerts: Sequence[Alert], firing: Sequence[Alert]) -> list[tuple[Alert, list[str]]]:
    """Each alert once with when it fired and resolved: as the book holds it at the end when it still
    fires then (its latest words), else as its last firing transition said it."""
    kept: dict[str, tuple[Alert, list[str]]] = {}
    for alert in alerts:
        key = alert.fingerprint()
        last, times = kept.get(key, (alert, []))
        times.append(f"{alert.state} {stamp(alert.at)}")
        kept[key] = (alert if alert.state == "firing" else last, times)
    for alert in firing:
        key = alert.fingerprint()
        if key in kept:
            still = "still firing at the end of the log: summary and evidence as of then"
            kept[key] = (alert, [*kept[key][1], still])
    return list(kept.values())


def _sources_table(sources: Sequence[SourceInfo]) -> str:
    head = "".join(f"<th>{name}</th>" for name in ("source", "engine", "version", "first line", "last line"))
    head += "".join(f"<th class='n'>{name}</th>" for name in ("lines read", "recognised", "parse errors"))
    rows = []
    for info in sources:
        cells = [
            info.name,
            info.engines or "none recognised",
            info.versions or "not printed",
            stamp(info.first) if info.first is not None else "",
            stamp(info.last) if info.last is not None else "",
        ]
        counts = "".join(f"<td class='n'>{n:,}</td>" for n in (info.lines, info.recognized, info.errors))
        rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + counts + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def render(report: ReportPage) -> str:
    """The whole HTML file."""
    alerts = _transitions(report.alerts, report.firing)
    if report.period is not None:
        first, last = report.period
        period = f"{stamp(first)} to {stamp(last)} ({_span(last - first)})"
    else:
        period = "no event with a time"
    cards = "".join(alert_card(alert, "; ".join(times)) for alert, times in alerts)
    firing = len(alerts)
    if firing:
        verdict = f"<span>{firing} alert{'' if firing == 1 else 's'}</span>"
    elif report.blind:
        verdict = "<span>no alert, but see what kvwatch could not see</span>"
    else:
        verdict = "<span class='ok'>no alert: kvwatch found no prefix-cache or offload problem</span>"
    blind = "".join(f"<li>{escape(line)}</li>" for line in report.blind) or "<li>nothing left out</li>"
    narrowed = f" · narrowed to {escape(', '.join(report.narrowed))}" if report.narrowed else ""
    sections = "".join(
        f"<h2 class='source'>{escape(section.source)}</h2>"
        + (chart_cards(section) if section.charts else "<p class='muted'>nothing to draw for this source</p>")
        for section in report.sections
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        "<link rel='icon' href='data:,'>"
        f"<title>{escape(report.title)}</title><style>{CSS}{CHART_CSS}</style></head><body>"
        f"<header><h1>{escape(report.title)}</h1>"
        f"<p class='muted'>Period {escape(period)}{narrowed}</p></header>"
        f"<h2>What kvwatch concluded: {verdict}</h2>{cards}"
        f"<h2>Sources</h2>{_sources_table(report.sources)}"
        f"<h2>What kvwatch could not see</h2><ul class='blind'>{blind}</ul>"
        f"{sections}"
        f"<p class='muted'>{escape(report.made)} · charts drawn by uPlot {UPLOT_VERSION} (MIT), inline: "
        "this file makes no request.</p>"
        f"{data_script(report.sections)}{assets()}"
        "</body></html>\n"
    )


def _span(seconds: float) -> str:
    """A duration for reading: `11 d 4 h`, `3 h 12 min`, `42 s`."""
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"
