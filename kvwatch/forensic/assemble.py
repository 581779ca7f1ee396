"""A report's page from what was gathered: a replay's (`kvwatch report`) or the daemon's windows (`/report`).

Besides the charts, it says what kvwatch could not see: files no engine recognised, damaged files,
lines that did not parse or were cut, counts derived from timings, engines that log no per-request
counts, offload lines without byte counts, and the alerts that say a signal is missing (`no_signal`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kvwatch.forensic.charts import build
from kvwatch.forensic.collect import Collected
from kvwatch.forensic.page import ReportPage, SourceInfo, stamp
from kvwatch.model import Alert, SourceCounts


@dataclass
class SourceFacts:
    """What the summary needs of one source besides the gathered charts."""

    name: str
    engines: str
    counts: SourceCounts
    first: float | None
    last: float | None


def versions(facts: Mapping[str, str]) -> str:
    """The versions an engine printed at start-up (`version`, `ollama_version`, ...), joined."""
    return ", ".join(
        value for key, value in sorted(facts.items()) if key == "version" or key.endswith("_version")
    )


def blind_spots(
    data: Collected, sources: Sequence[SourceFacts], alerts: Sequence[Alert], files: Iterable[str] = ()
) -> list[str]:
    """What kvwatch could not see, one sentence each."""
    found = list(files)
    for source in sources:
        name, counts = source.name, source.counts
        if counts.errors:
            found.append(
                f"{name}: {counts.errors:,} recognised lines could not be parsed (counted, not charted)."
            )
        if counts.truncated:
            found.append(f"{name}: {counts.truncated:,} lines were longer than kvwatch's line cap and cut.")
        groups = [g for (s, _), g in data.groups.items() if s == name]
        rates = [r for (s, _), r in data.rates.items() if s == name]
        derived = sum(g.derived for g in groups)
        if derived:
            found.append(
                f"{name}: {derived:,} requests' counts were derived from timing lines (the engine's default "
                "verbosity): less exact than its reuse lines."
            )
        if not groups and rates:
            found.append(
                f"{name}: the engine logs no per-request token counts here, only periodic cache rates: no "
                "per-request timeline or distribution of cached lengths."
            )
        if not groups and not rates and counts.recognized:
            found.append(f"{name}: no request counts and no cache-rate lines: nothing to chart of its cache.")
        for (s, tier), series in sorted(data.offloads.items()):
            if s == name and series.unknown:
                found.append(
                    f"{name}: {series.unknown:,} offload lines of {tier} reported no byte counts "
                    "(unknown, not zero)."
                )
    for alert in alerts:
        if alert.alert == "no_signal" and alert.state == "firing":
            found.append(f"{alert.labels.get('source', '')}: {alert.summary}")
    return found


def page(
    data: Collected,
    alerts: Sequence[Alert],
    sources: Sequence[SourceFacts],
    *,
    title: str,
    made: str,
    files: Iterable[str] = (),
    narrowed: Sequence[str] = (),
    firing: Sequence[Alert] = (),
) -> ReportPage:
    """The report's page of `sources` (in that order)."""
    names = [source.name for source in sources]
    shown = [a for a in alerts if a.labels.get("source") in names]
    infos = [
        SourceInfo(
            s.name,
            s.engines,
            versions(data.facts.get(s.name, {})),
            s.counts.lines,
            s.counts.recognized,
            s.counts.errors,
            s.first,
            s.last,
        )
        for s in sources
    ]
    firsts = [s.first for s in sources if s.first is not None]
    lasts = [s.last for s in sources if s.last is not None]
    if data.first is not None and data.last is not None:
        period: tuple[float, float] | None = (data.first, data.last)
    elif firsts and lasts:
        period = (min(firsts), max(lasts))
    else:
        period = None
    return ReportPage(
        title,
        period,
        infos,
        shown,
        blind_spots(data, sources, shown, files),
        build(data, shown, names),
        made,
        list(narrowed),
        [a for a in firing if a.labels.get("source") in names],
    )


def narrowing(since: float | None, until: float | None, sources: Sequence[str]) -> list[str]:
    """The narrowing asked for, in words."""
    said = []
    if since is not None:
        said.append(f"since {stamp(since)}")
    if until is not None:
        said.append(f"until {stamp(until)}")
    if sources:
        said.append("source " + ", ".join(sources))
    return said
