"""The page at `/`: each source with its last line's time, the firing alerts with cause, evidence and fix
(notified before silenced, critical first, then newest), the sources a click away from the top, and
each notifier: delivering, or failing since when, why, and how many alerts wait (a failing one is
also named at the top: alerts are not reaching anyone there).

`landing_page` is a pure function of a snapshot the daemon takes under the pipeline's lock (`SourceRow`s
and the AlertBook's firing `Alert`s, the very objects the notifiers get, the notifiers' `Status`es) and
of the wall clock `now`. Every text from a log, a config or an alert is HTML-escaped; a notifier's
receiver shows as scheme and host only, and the page shows no prompt.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from html import escape
from typing import Any

from kvwatch.model import Alert
from kvwatch.notify.base import hint
from kvwatch.notify.payload import jsonable
from kvwatch.notify.routing import SEVERITY_RANK
from kvwatch.notify.status import Status

#: Seconds between the browser's reloads of the page.
REFRESH = 15

_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1180px;padding:12px 24px;color:#1d2330}
header{display:flex;align-items:baseline;gap:18px;flex-wrap:wrap;border-bottom:1px solid #d5dae3}
h1{font-size:22px;margin:8px 0} h2{font-size:18px;margin:22px 0 8px}
nav a{margin-right:14px} .muted{color:#5d6675;font-size:13px}
table{border-collapse:collapse;width:100%} th,td{text-align:left;padding:5px 10px;vertical-align:top}
th{background:#eef1f6;font-weight:600} tr+tr td{border-top:1px solid #e3e7ee} td.n{text-align:right}
.up{color:#17753a;font-weight:600} .down{color:#b3261e;font-weight:600}
.alert{border:1px solid #d5dae3;border-left:6px solid #5d6675;border-radius:4px;padding:8px 16px;
margin:10px 0}
.alert.critical{border-left-color:#b3261e} .alert.warning{border-left-color:#c77700}
.alert.info{border-left-color:#1f5fbf} .alert h3{margin:4px 0;font-size:17px}
.sev{font-size:12px;font-weight:700;text-transform:uppercase;padding:1px 6px;border-radius:3px;color:#fff;
background:#5d6675} .critical .sev{background:#b3261e} .warning .sev{background:#c77700}
.info .sev{background:#1f5fbf} .summary{font-weight:600;margin:6px 0}
dl{display:grid;grid-template-columns:max-content 1fr max-content 1fr;gap:2px 14px;margin:4px 0 8px;
align-items:baseline}
dt{font-family:ui-monospace,monospace;font-size:13px;color:#394150} dd{margin:0;white-space:pre-line}
.label{font-weight:600;margin:8px 0 2px} p{margin:2px 0} .ok{color:#17753a;font-weight:600}
.firing{color:#b3261e;font-weight:700}
"""


@dataclass(frozen=True, slots=True)
class SourceRow:
    """What the page shows of one source; `last_event` is the event time of its newest event."""

    name: str
    type: str
    engine: str
    up: bool
    problem: str | None
    last_event: float | None
    lines: int
    recognized: int
    errors: int


@dataclass(frozen=True, slots=True)
class ProbeRow:
    """What the page shows of one `[[probe]]`: where (no user, no query), its last run and verdict."""

    name: str
    endpoint: str
    last_at: float | None
    outcome: str
    verdict: str
    share: float | None
    firing: bool


def _probe_row(row: ProbeRow, now: float) -> str:
    """One `<tr>` of the probes table."""
    last = "not run yet" if row.last_at is None else when(row.last_at, now)
    outcome = "" if row.outcome in ("", "ok") else f"<span class='down'>{escape(row.outcome)}</span> "
    verdict = outcome + escape(row.verdict)
    if row.firing:
        verdict += " <a class='firing' href='#alerts'>probe_prefix_miss firing</a>"
    share = "" if row.share is None else f"{row.share:.1%}"
    cells = [escape(row.name), escape(row.endpoint), escape(last), verdict]
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + f"<td class='n'>{share}</td></tr>"


def ago(seconds: float) -> str:
    """A wall-clock distance, e.g. `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago` (`in 4 s` if ahead)."""
    if seconds < 0:
        return f"in {-seconds:.0f} s"
    for unit, size, upto in (("s", 1, 120), ("min", 60, 7200), ("h", 3600, 172800)):
        if seconds < upto:
            return f"{seconds // size:.0f} {unit} ago"
    return f"{seconds // 86400:.0f} d ago"


def when(at: float, now: float) -> str:
    """An event time and how long ago that is by the wall clock: `2026-12-01 21:03:10Z (12 s ago)`."""
    stamp = datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    return f"{stamp} ({ago(now - at)})"


def _size(count: float) -> str:
    """Bytes (at least 1000) in decimal units: `58.2 GB`."""
    value = float(count) / 1000
    for unit in ("KB", "MB", "GB"):
        if abs(value) < 1000:
            return f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:,.1f} TB"


def number(value: float) -> str:
    """A number for reading: thousands separated, at most four significant digits below 1000."""
    if isinstance(value, int) or value.is_integer():
        return f"{value:,.0f}"
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    return f"{value:.4g}"


def evidence_value(key: str, value: Any, depth: int = 0) -> str:
    """One evidence value as text: numbers formatted (bytes also in GB, seconds with `s`, a time `at` as
    UTC), lists joined; a list of records (e.g. a probe's runs) one record per line, records inside a
    record in parentheses."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if value == "":
        return "none"  # (an empty cell reads as a value the page failed to show)
    if isinstance(value, int | float):
        if "bytes" in key:
            text = number(value) + " B"
            return text if abs(value) < 1000 else f"{text} ({_size(value)})"
        if key == "at" or key.endswith("_at"):  # (Unix seconds: a time, not a quantity)
            return datetime.fromtimestamp(value, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
        return number(value) + (" s" if key.endswith("seconds") else "")
    if isinstance(value, list):
        if depth == 0 and value and all(isinstance(item, dict) for item in value):
            return "\n".join(evidence_value(key, item, 1) for item in value)
        return ", ".join(evidence_value(key, item, depth + 1) for item in value)
    if isinstance(value, dict):
        text = "; ".join(f"{k}: {evidence_value(str(k), v, depth + 1)}" for k, v in value.items())
        return f"({text})" if depth > 1 else text
    return str(value)


def _source_row(row: SourceRow, now: float, engine_down: bool = False) -> str:
    """One `<tr>` of the sources table; `engine_down`: its engine_start_failed fires (the log is read,
    the engine it tells of is down: both are said, so that `up` is not read as the engine's)."""
    state = "<span class='up'>up</span>" if row.up else "<span class='down'>down</span>"
    if row.problem:
        state += f"<br><span class='muted'>{escape(row.problem)}</span>"
    if engine_down:
        state += "<br><a class='down' href='#alerts'>engine down</a>"
    last = when(row.last_event, now) if row.last_event is not None else "no line yet"
    cells = [escape(row.name), escape(row.type), escape(row.engine), state, escape(last)]
    counts = [f"<td class='n'>{count:,}</td>" for count in (row.lines, row.recognized, row.errors)]
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "".join(counts) + "</tr>"


def _alert(alert: Alert, silenced: bool, now: float) -> str:
    """One firing alert as a card: what, where, since when, summary, cause, evidence, fix."""
    note = " · silenced: not notified" if silenced else ""
    return alert_card(alert, f"firing since {when(alert.at, now)}{note}")


def alert_card(alert: Alert, status: str) -> str:
    """An alert as a card: its name, labels and `status` (e.g. since when it fires), summary, cause,
    evidence, fix (also the forensic report's, kvwatch.forensic.page)."""
    labels = ", ".join(f"{k}={v}" for k, v in sorted(alert.labels.items()))
    evidence = "".join(
        f"<dt>{escape(str(key))}</dt><dd>{escape(evidence_value(str(key), value))}</dd>"
        for key, value in jsonable(alert.evidence).items()
    )
    severity = escape(alert.severity)
    return (
        f"<section class='alert {severity}'>"
        f"<h3><span class='sev'>{severity}</span> {escape(alert.alert)}</h3>"
        f"<p class='muted'>{escape(labels)} · {escape(status)}</p>"
        f"<p class='summary'>{escape(alert.summary)}</p>"
        f"<p class='label'>Cause</p><p>{escape(alert.cause)}</p>"
        f"<p class='label'>Evidence</p><dl>{evidence}</dl>"
        f"<p class='label'>Fix</p><p>{escape(alert.fix)}</p></section>"
    )


def _probes(probes: Sequence[ProbeRow], now: float) -> str:
    """The probes table ("" without probes)."""
    if not probes:
        return ""
    head = "".join(f"<th>{name}</th>" for name in ("probe", "endpoint", "last run", "last verdict"))
    rows = "".join(_probe_row(row, now) for row in probes)
    return (
        f"<h2 id='probes'>Probes</h2><table><tr>{head}<th class='n'>cached share</th></tr>{rows}</table>"
        "<p class='muted'>Each probe sends a synthetic conversation twice and reads whether its prefix "
        "came back cached (docs/probe.md); the share is of its last deciding follow-up.</p>"
    )


def _notifier_row(status: Status, now: float) -> str:
    """One `<tr>` of the notifiers table."""
    if status.failing_since is not None:
        state = (
            f"<span class='down'>failing since {escape(when(status.failing_since, now))}</span><br>"
            f"last: {escape(status.reason)}: {escape(status.detail)}<br>"
            f"<span class='muted'>{escape(hint(status.reason))}</span>"
        )
    else:
        state = "<span class='up'>delivering</span>"
    if status.dropped:
        state += f"<br><span class='muted'>last dropped: {escape(status.last_drop)}</span>"
    waiting = f"{status.pending:,}" + (
        f" ({_size(status.pending_bytes)})" if status.pending_bytes >= 1000 else ""
    )
    cells = [f"<td>{escape(status.name)}</td>", f"<td>{escape(status.receiver)}</td>", f"<td>{state}</td>"]
    counts = [
        f"<td class='n'>{text}</td>" for text in (waiting, f"{status.delivered:,}", f"{status.dropped:,}")
    ]
    return "<tr>" + "".join(cells + counts) + "</tr>"


def _notifiers(notifiers: Sequence[Status], now: float) -> str:
    """The notifiers table ("" without notifiers)."""
    if not notifiers:
        return ""
    head = "".join(f"<th>{name}</th>" for name in ("notifier", "receiver", "state")) + "".join(
        f"<th class='n'>{name}</th>" for name in ("waiting", "delivered", "dropped")
    )
    rows = "".join(_notifier_row(status, now) for status in notifiers)
    return (
        f"<h2 id='notifiers'>Notifiers</h2><table><tr>{head}</tr>{rows}</table>"
        "<p class='muted'>A failing notifier holds its alerts and retries with backoff; they are sent once "
        "its receiver answers again (after a fix and a reload too). Delivered and dropped count since "
        "kvwatch started; dropped are payloads the receiver rejected and the oldest of a full queue.</p>"
    )


def ordered(alerts: Sequence[tuple[Alert, bool]]) -> list[tuple[Alert, bool]]:
    """The (alert, silenced) pairs as a person reads them: the notified ones first, then the silenced;
    each by severity (critical first), then newest first (what just started is what a person comes
    to see; one firing for days is known already), then by name and labels."""
    return sorted(
        alerts,
        key=lambda pair: (
            pair[1],
            -SEVERITY_RANK.get(pair[0].severity, -1),
            -pair[0].at,
            pair[0].alert,
            sorted(pair[0].labels.items()),
        ),
    )


def _failing(notifiers: Sequence[Status]) -> str:
    """The header's word on failing notifiers ("" when none fails)."""
    failing = [s for s in notifiers if s.failing]
    if not failing:
        return ""
    held = sum(s.pending for s in failing)
    names = ", ".join(s.name for s in failing)
    return (
        f" · <a class='firing' href='#notifiers'>notifier{'' if len(failing) == 1 else 's'} failing: "
        f"{escape(names)} ({held:,} alert{'' if held == 1 else 's'} waiting)</a>"
    )


def landing_page(
    version: str,
    sources: Sequence[SourceRow],
    alerts: Sequence[tuple[Alert, bool]],
    now: float,
    refresh: int = REFRESH,
    *,
    charts: str = "",
    probes: Sequence[ProbeRow] = (),
    notifiers: Sequence[Status] = (),
) -> str:
    """The HTML of `/`: sources, the firing (alert, silenced) pairs, links, the `[[probe]]`s' last runs
    (when any is configured), the notifiers (when any is), then `charts` (the sources' recent windows,
    kvwatch.forensic.live); reloads every `refresh` s."""
    up = sum(row.up for row in sources)
    cards = "".join(_alert(alert, silenced, now) for alert, silenced in ordered(alerts))
    down = {a.labels.get("source") for a, _ in alerts if a.alert == "engine_start_failed"}
    rows = "".join(_source_row(row, now, row.name in down) for row in sources)
    head = "".join(
        f"<th>{name}</th>" for name in ("source", "type", "engine", "state", "last line (event time)")
    ) + "".join(f"<th class='n'>{name}</th>" for name in ("lines read", "recognised", "parse errors"))
    stamp = datetime.fromtimestamp(now, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='refresh' content='{refresh:d}'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        "<link rel='icon' href='data:,'>"  # (no /favicon.ico request, no 404)
        f"<title>kvwatch: {len(alerts)} firing</title><style>{_CSS}</style></head><body>"
        f"<header><h1>kvwatch {escape(version)}</h1>"
        f"<span><span class='{'firing' if alerts else 'ok'}'>{len(alerts)} alert"
        f"{'' if len(alerts) == 1 else 's'} firing</span> · "
        f"<a href='#sources'>{up}/{len(sources)} sources up</a>{_failing(notifiers)}</span>"
        "<nav><a href='#sources'>sources</a><a href='metrics'>/metrics</a><a href='healthz'>/healthz</a>"
        "<a href='report'>/report</a></nav></header>"
        "<p class='muted'>Prefix-cache and KV-offload health from inference-engine logs. "
        f"Rendered {stamp}; reloads every {refresh:d} s.</p>"
        f"<h2 id='alerts'>Firing alerts</h2>{cards or '<p class=ok>no alert firing</p>'}"
        f"<h2 id='sources'>Sources</h2><table><tr>{head}</tr>{rows}</table>"
        f"{_notifiers(notifiers, now)}{_probes(probes, now)}{charts}</body></html>\n"
    )
