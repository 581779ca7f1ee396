"""The report's charts as specifications for the page's script: what each draws, already downsampled.

A chart is a dict the page's script (`charts.js`) hands to uPlot: `tables` (each `[x, y1, y2, ...]`,
joined on x by uPlot when several), `series` (label, colour, style), the alerts' firing and resolving
as `markers`, a `band` (the healthy hit rates) and a `note` saying what was downsampled. A series of more
than a chart's budget of points is drawn as the minimum and maximum of each time bucket, so a spike
survives; the note says so, with the counts: nothing is left out silently.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kvwatch.detectors.pinned_cache import blocks
from kvwatch.forensic.collect import Collected, OffloadSeries, RateSeries, RequestGroup
from kvwatch.model import Alert

#: The token hit rate a coding agent's traffic reaches when its prefixes are reused, as
#: docs/alerts.md states it ("Healthy hit rates"): drawn as a band on the hit-rate charts.
HEALTHY_BAND = (0.80, 0.95)
#: Time buckets per timeline chart (each gives at most two points: its minimum and maximum).
TIMELINE_BUCKETS = 1200
#: Time buckets of a hit-rate chart at most, and the bucket widths chosen from (seconds).
RATE_BUCKETS = 240
_WIDTHS = (1, 2, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800)
#: Lanes (slots, conversations) drawn apart at most; a group with more is drawn as one.
MAX_LANES = 6
#: Distinct cached lengths drawn one bar each at most; more are binned, in MAX_BARS bins at most.
EXACT_BARS = 6
MAX_BARS = 50
#: A cached length on at least this share of a group's requests is named with its block arithmetic.
DOMINANT = 0.2
#: Series colours: prompt and cached of each lane (light, dark), then the rest.
PAIRS = (
    ("#6f9fd8", "#c0392b"), ("#7fbf73", "#7b2d8e"), ("#e9a35a", "#1f3f8f"),
    ("#a98bc9", "#17753a"), ("#d98aa3", "#8a5a00"), ("#8cc3c3", "#333333"),
)  # fmt: skip
COLOURS = ("#1f5fbf", "#c0392b", "#17753a", "#c77700", "#7b2d8e", "#0f8b8d", "#5d6675", "#b3261e")


@dataclass(frozen=True)
class Marker:
    """A vertical line on a time chart: an alert firing or resolving, an engine restart."""

    time: float
    text: str
    kind: str  # "firing", "resolved" or "restart"
    labels: tuple[tuple[str, str], ...]

    def spec(self) -> dict[str, Any]:
        """As the page's script reads it."""
        return {"t": _num(self.time), "text": self.text, "kind": self.kind}


def markers_of(alerts: Sequence[Alert], restarts: dict[str, list[float]]) -> list[Marker]:
    """Every alert transition and restart as a marker."""
    found = [
        Marker(alert.at, f"{alert.alert} {alert.state}", alert.state, tuple(sorted(alert.labels.items())))
        for alert in alerts
    ]
    for source, times in restarts.items():
        found.extend(Marker(time, "engine (re)start", "restart", (("source", source),)) for time in times)
    return sorted(found, key=lambda marker: marker.time)


def applies(marker: Marker, labels: dict[str, str]) -> bool:
    """Whether a marker belongs on a chart of `labels`: same source, and the same entry, model, engine and
    server where both name one (an alert of one entry is marked on its source's charts too)."""
    own = dict(marker.labels)
    if own.get("source") != labels.get("source"):
        return False
    keys = ("entry", "model", "engine", "server")
    return all(own[key] == labels[key] for key in keys if key in own and key in labels)


def _num(value: float) -> float | int | None:
    """A number for the page's JSON: whole numbers without `.0`, others to 4 decimals; nan is null."""
    if math.isnan(value) or math.isinf(value):
        return None
    rounded = round(value)
    return int(rounded) if rounded == value else round(value, 4)


def _nums(values: Sequence[float]) -> list[float | int | None]:
    return [_num(value) for value in values]


def minmax(
    times: Sequence[float], columns: Sequence[Sequence[float]], buckets: int
) -> tuple[list[float], list[list[float]]]:
    """`times` and `columns` drawn with at most two points per time bucket (of `buckets` over the span):
    each column's minimum and maximum in it, in the order they came; unchanged when that is no fewer.
    Placed at the bucket's first and last time, so the points stay in time order."""
    size = len(times)
    if size <= 2 * buckets or size < 3:
        return list(times), [list(column) for column in columns]
    start, end = times[0], times[-1]
    width = (end - start) / buckets or 1.0
    out_x: list[float] = []
    out: list[list[float]] = [[] for _ in columns]
    last = buckets - 1  # (the end's time falls in the last bucket, not one past it)
    index = 0
    while index < size:
        bucket = min(int((times[index] - start) / width), last)
        stop = index + 1
        while stop < size and min(int((times[stop] - start) / width), last) == bucket:
            stop += 1
        if stop - index == 1:
            out_x.append(times[index])
            for column, values in zip(columns, out, strict=True):
                values.append(column[index])
        else:
            out_x.extend((times[index], times[stop - 1]))
            for column, values in zip(columns, out, strict=True):
                part = column[index:stop]
                low, high = min(part), max(part)
                first_low = part.index(low) <= part.index(high)
                values.extend((low, high) if first_low else (high, low))
        index = stop
    return out_x, out


def _cumulative(values: Sequence[float]) -> list[float]:
    total, out = 0.0, []
    for value in values:
        total += value
        out.append(total)
    return out


def _drawn_note(count: int, drawn: int, what: str) -> str:
    """What downsampling did, said on the chart ("" when nothing was)."""
    if drawn >= count:
        return ""
    return (
        f"{count:,} {what} drawn as {drawn:,} points: the minimum and maximum of each time bucket "
        "(every spike kept)"
    )


def timeline(
    group: RequestGroup, markers: Sequence[Marker], chart_id: str, block_size: int = 0
) -> dict[str, Any]:
    """Prompt and cached length per request, by lane where there are a few, alerts marked; a cached
    length on a DOMINANT share of the requests drawn as a labelled line."""
    lanes = group.lanes if 1 < len(group.lanes) <= MAX_LANES else [""]
    budget = max(100, TIMELINE_BUCKETS // len(lanes))
    tables, series, drawn = [], [], 0
    for index, lane in enumerate(lanes):
        if len(lanes) > 1:
            rows = [i for i, one in enumerate(group.lane) if one == index]
            times = [group.time[i] for i in rows]
            prompt, cached = [group.prompt[i] for i in rows], [group.cached[i] for i in rows]
        else:
            times, prompt, cached = list(group.time), list(group.prompt), list(group.cached)
        order = sorted(range(len(times)), key=times.__getitem__)  # (merged files: by time)
        times = [times[i] for i in order]
        xs, (ps, cs) = minmax(times, ([prompt[i] for i in order], [cached[i] for i in order]), budget)
        drawn += len(xs)
        tables.append([_nums(xs), _nums(ps), _nums(cs)])
        light, dark = PAIRS[index % len(PAIRS)]
        suffix = f" ({lane})" if lane else ""
        series.append({"label": f"prompt tokens{suffix}", "colour": light, "style": "points"})
        series.append({"label": f"cached tokens{suffix}", "colour": dark, "style": "points"})
    title = "Prompt vs cached length per request" + (f": {group.name}" if group.name else "")
    return {
        "id": chart_id,
        "kind": "timeline",
        "title": title,
        "x": "time",
        "unit": "tokens",
        "tables": tables,
        "series": series,
        "markers": [m.spec() for m in markers if applies(m, group.labels)],
        "note": _drawn_note(len(group.time), drawn, "requests"),
        "subtitle": _request_subtitle(group),
        "lines": _pinned_line(group, block_size),
    }


def _pinned_line(group: RequestGroup, block_size: int) -> list[dict[str, Any]]:
    """The cached length a DOMINANT share of the group's requests have, as a line to draw ([]: none)."""
    common = Counter(c for c in group.cached if c > 0).most_common(1)
    if not common or common[0][1] / len(group.time) < DOMINANT:
        return []
    length, count = int(common[0][0]), common[0][1]
    arithmetic = blocks(length, block_size).replace(" x ", " \u00d7 ")
    return [{"v": length, "text": f"cached {arithmetic} on {count / len(group.time):.0%} of requests"}]


def _request_subtitle(group: RequestGroup) -> str:
    """Requests, prompt range, the token hit rate, and the commonest cached length where it dominates."""
    count = len(group.time)
    if not count:
        return ""
    prompt = sum(group.prompt)
    text = f"{count:,} requests · prompts {min(group.prompt):,.0f}-{max(group.prompt):,.0f} tokens"
    if prompt:
        text += f" · token hit rate {sum(group.cached) / prompt:.1%}"
    common = Counter(c for c in group.cached if c > 0).most_common(1)
    if common and common[0][1] / count >= DOMINANT:
        length, times = common[0]
        text += f" · cached length {length:,.0f} on {times / count:.0%} of requests"
    if group.derived:
        text += f" · {group.derived:,} derived from timings (less exact)"
    return text


def bucket_width(first: float, last: float, points: int) -> float:
    """A readable time bucket giving at most RATE_BUCKETS buckets over [first, last], and about three of
    the `points` in each on average (so that sparse requests do not leave most buckets empty)."""
    span = max(last - first, 1.0)
    least = 3 * span / points if points else 0.0
    for width in _WIDTHS:
        if span / width <= RATE_BUCKETS and width >= least:
            return float(width)
    return float(math.ceil(max(span / RATE_BUCKETS, least)))


def hit_rates(
    source: str,
    groups: Sequence[RequestGroup],
    rates: Sequence[RateSeries],
    markers: Sequence[Marker],
    *,
    period: tuple[float, float],
    chart_id: str,
) -> dict[str, Any] | None:
    """The token-weighted hit rate per time bucket: one line per request group (a gateway's entries),
    and per engine's cache-rate lines (weighed by their prompt throughput); None: nothing to draw."""
    first, last = period
    points = sum(len(g.time) for g in groups) + sum(len(r.time) for r in rates)
    width = bucket_width(first, last, points)
    count = int((last - first) // width) + 1
    xs = [first - first % width + i * width for i in range(count + 1)]
    origin = xs[0]
    columns: list[list[float]] = []
    series: list[dict[str, Any]] = []

    def add(label: str, times: Sequence[float], hits: Sequence[float], weights: Sequence[float]) -> None:
        num, den = [0.0] * len(xs), [0.0] * len(xs)
        for time, hit, weight in zip(times, hits, weights, strict=True):
            if weight > 0 and not math.isnan(hit):
                slot = min(int((time - origin) // width), len(xs) - 1)
                num[slot] += hit * weight
                den[slot] += weight
        if any(den):
            columns.append([n / d if d else math.nan for n, d in zip(num, den, strict=True)])
            series.append({"label": label, "colour": COLOURS[len(series) % len(COLOURS)], "style": "line"})

    for group in sorted(groups, key=lambda g: -sum(g.prompt))[: len(COLOURS)]:
        hits = [c / p if p > 0 else math.nan for p, c in zip(group.prompt, group.cached, strict=True)]
        add(group.name or "all requests", group.time, hits, group.prompt)
    for rate in rates:
        add(f"prefix cache hit rate, engine {rate.engine}", rate.time, rate.hit, rate.weight)
        add(f"external (offload) hit rate, engine {rate.engine}", rate.time, rate.external, rate.weight)
    if not columns:
        return None
    return {
        "id": chart_id,
        "kind": "rate",
        "title": "Hit rate over time (token-weighted)",
        "subtitle": f"cached / prompt tokens per {_duration(width)} bucket; the band is the healthy "
        f"{HEALTHY_BAND[0]:.0%}-{HEALTHY_BAND[1]:.0%} of a coding agent's traffic",
        "x": "time",
        "unit": "ratio",
        "tables": [[_nums(xs), *(_nums(column) for column in columns)]],
        "series": series,
        "band": list(HEALTHY_BAND),
        "markers": [m.spec() for m in markers if applies(m, {"source": source})],
        "note": "",
    }


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def offload(series: OffloadSeries, markers: Sequence[Marker], chart_id: str) -> dict[str, Any] | None:
    """One tier's stored and loaded totals over time (None: no counts were logged)."""
    if not series.time:
        return None
    order = sorted(range(len(series.time)), key=series.time.__getitem__)
    times = [series.time[i] for i in order]
    stored = _cumulative([series.stored[i] for i in order])
    loaded = _cumulative([series.loaded[i] for i in order])
    xs, (ss, ls) = minmax(times, (stored, loaded), TIMELINE_BUCKETS)
    unit = series.unit
    tier = f"engine {series.tier}" if unit == "bytes" else series.tier
    subtitle = f"{_amount(stored[-1], unit)} stored, {_amount(loaded[-1], unit)} loaded back"
    if series.unknown:
        subtitle += f" · {series.unknown:,} lines reported no byte counts (unknown, not zero)"
    return {
        "id": chart_id,
        "kind": "offload",
        "title": f"Offload stored vs loaded ({tier})",
        "subtitle": subtitle,
        "x": "time",
        "unit": unit,
        "tables": [[_nums(xs), _nums(ss), _nums(ls)]],
        "series": [
            {"label": f"stored {unit} (total)", "colour": "#1f5fbf", "style": "line"},
            {"label": f"loaded {unit} (total)", "colour": "#c0392b", "style": "line"},
        ],
        "markers": [m.spec() for m in markers if applies(m, series.labels)],
        "note": _drawn_note(len(times), len(xs), "transfer lines"),
    }


def _amount(value: float, unit: str) -> str:
    if unit != "bytes":
        return f"{value:,.0f} {unit}"
    for name, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:,.1f} {name}"
    return f"{value:,.0f} bytes"


def distribution(group: RequestGroup, block_size: int, chart_id: str) -> tuple[dict[str, Any], list[str]]:
    """The distribution of cached lengths (a bar per length, or per bin when there are many) and the
    commonest lengths in words, with their block arithmetic."""
    counts = Counter(int(c) for c in group.cached)
    total = len(group.cached)
    if len(counts) <= EXACT_BARS:
        xs = sorted(counts)
        ys = [counts[x] for x in xs]
        binned = ""
    else:
        step = max(1, math.ceil(max(counts) / MAX_BARS))
        if block_size:
            step = math.ceil(step / block_size) * block_size
        bins: Counter[int] = Counter()
        for length, count in counts.items():
            bins[length // step * step + step // 2] += count
        xs = sorted(bins)
        ys = [bins[x] for x in xs]
        binned = f"binned by {step:,} tokens"
    words = []
    common = [(length, count) for length, count in counts.most_common(3) if length > 0]
    if common and common[0][1] / total >= DOMINANT:
        for length, count in common:
            if count / total >= 0.05:
                arithmetic = blocks(length, block_size).replace(" x ", " \u00d7 ")
                words.append(f"{arithmetic} tokens: {count:,} of {total:,} requests ({count / total:.0%})")
        if not block_size:
            words.append(
                "The log does not give its block size: lengths are shown in 64-, 32- or 16-token blocks."
            )
    elif common:
        length, count = common[0]
        words.append(
            f"No cached length dominates: the commonest, {length:,} tokens, is on {count:,} of {total:,} "
            f"requests ({count / total:.0%})."
        )
    if counts.get(0):
        words.append(f"Nothing cached: {counts[0]:,} of {total:,} requests ({counts[0] / total:.0%}).")
    title = "Distribution of cached lengths" + (f": {group.name}" if group.name else "")
    chart = {
        "id": chart_id,
        "kind": "histogram",
        "title": title,
        "subtitle": binned,
        "x": "tokens",
        "unit": "requests",
        "tables": [[xs, ys]],
        "series": [{"label": "requests", "colour": "#7b2d8e", "style": "bars"}],
        "markers": [],
        "note": "",
    }
    return chart, words


@dataclass
class SourceCharts:
    """One source's charts in the order the page shows them, and the words beside its distributions."""

    source: str
    charts: list[dict[str, Any]]
    words: dict[str, list[str]]  # chart id -> lines under it


def build(
    data: Collected, alerts: Sequence[Alert], sources: Sequence[str] | None = None
) -> list[SourceCharts]:
    """Every source's charts (or only `sources`'), in source order."""
    markers = markers_of(alerts, data.restarts)
    out = []
    number = 0

    def next_id() -> str:
        nonlocal number
        number += 1
        return f"chart-{number}"

    for source in sources if sources is not None else data.sources():
        groups = [g for (s, _), g in sorted(data.groups.items()) if s == source and len(g.time)]
        rates = [r for (s, _), r in sorted(data.rates.items()) if s == source and len(r.time)]
        tiers = [o for (s, _), o in sorted(data.offloads.items()) if s == source]
        spans = [series.time for series in groups] + [series.time for series in rates]
        times = [t for stamps in spans for t in (min(stamps), max(stamps))]
        charts: list[dict[str, Any]] = []
        words: dict[str, list[str]] = {}
        if times:
            rate = hit_rates(
                source, groups, rates, markers, period=(min(times), max(times)), chart_id=next_id()
            )
            if rate is not None:
                charts.append(rate)
        block = _block_size(data.facts.get(source, {}))
        # (the groups an alert names first, then the busiest)
        groups.sort(
            key=lambda g: (
                not any(m.kind == "firing" and applies(m, g.labels) for m in markers),
                -len(g.time),
            )
        )
        for group in groups:
            charts.append(timeline(group, markers, next_id(), block))
            chart, lines = distribution(group, block, next_id())
            charts.append(chart)
            words[chart["id"]] = lines
        for tier in tiers:
            drawn = offload(tier, markers, next_id())
            if drawn is not None:
                charts.append(drawn)
        out.append(SourceCharts(source, charts, words))
    return out


def _block_size(facts: dict[str, str]) -> int:
    """The block size a source's engine printed (0: not printed)."""
    try:
        return max(0, int(facts.get("block_size", "0")))
    except ValueError:
        return 0
