"""The daemon's side of the report: the landing page's charts of each source's recent window, and the
report `/report` downloads, both from the daemon's own state (its windows and firing alerts), taken
under the pipeline's lock. Nothing is fetched: the chart library is inlined into the page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from kvwatch.forensic.assemble import SourceFacts, page
from kvwatch.forensic.charts import build
from kvwatch.forensic.collect import from_windows
from kvwatch.forensic.page import CHART_CSS, assets, chart_cards, data_script, render
from kvwatch.model import Alert, SourceCounts


def landing_charts(windows: Any, alerts: Sequence[Alert]) -> str:
    """The landing page's charts: one section per source of what its window holds ("" when none has
    anything to draw)."""
    sections = [section for section in build(from_windows(windows), alerts) if section.charts]
    if not sections:
        return ""
    body = "".join(
        f"<h2>Recent window: {escape(section.source)}</h2>{chart_cards(section)}" for section in sections
    )
    note = (
        "<p class='muted'>What each source's window holds (the last hour, up to 500 requests per group); "
        "<a href='report'>/report</a> downloads it as a report file.</p>"
    )
    return f"<style>{CHART_CSS}</style>{note}{body}{data_script(sections)}{assets()}"


def window_report(
    windows: Any,
    counts: Mapping[str, SourceCounts],
    engines: Mapping[str, str],
    alerts: Sequence[Alert],
    version: str,
) -> str:
    """The report of what the daemon's windows hold, as `kvwatch report` writes one of files."""
    data = from_windows(windows)
    names = sorted(set(counts) | set(data.sources()))
    sources = []
    for name in names:
        first, last = data.periods.get(name, (None, None))
        sources.append(
            SourceFacts(name, engines.get(name, ""), counts.get(name, SourceCounts()), first, last)
        )
    report = page(
        data,
        alerts,
        sources,
        title="kvwatch report: the daemon's recent windows",
        made=f"kvwatch {version} daemon: its windows (the last hour per source) and its firing alerts",
    )
    # (the book's alerts are the transitions and hold their latest words already)
    return render(report)
