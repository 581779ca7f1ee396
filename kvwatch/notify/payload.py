"""The alert as JSON: the object `replay --format json` lists and the generic webhook posts.

`alert_to_json` is the public shape (time as UTC ISO 8601 with `Z`); `alert_to_record` /
`alert_from_record` are the lossless form the spool keeps (time as epoch seconds).

For receivers that de-duplicate, the public shape carries `fingerprint`, the alert's identity (the
first 16 hex digits of the SHA-256 of the canonical JSON `{"alert":NAME,"labels":{...}}`: keys
sorted, no spaces, UTF-8), and `id`, the transition's (`<fingerprint>:<state>:<at>`). Both follow
from the alert alone, so they are the same after a restart, in another version, and when the spool
sends a transition again.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kvwatch.model import Alert
from kvwatch.times import iso


def iso_utc(at: float) -> str:
    """Epoch seconds as UTC ISO 8601 with `Z` (the one format of every time kvwatch prints)."""
    return iso(at)


def jsonable(value: Any) -> Any:
    """`value` made JSON-safe: anything json cannot encode becomes its str()."""
    return json.loads(json.dumps(value, default=str))


def fingerprint(alert: Alert) -> str:
    """The alert's stable identity: 16 hex digits of the SHA-256 of its name and sorted labels."""
    canonical = {"alert": alert.alert, "labels": alert.labels}
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def transition_id(alert: Alert) -> str:
    """The transition's stable id: fingerprint, state and the event time it fired or resolved at."""
    return f"{fingerprint(alert)}:{alert.state}:{iso_utc(alert.at)}"


def alert_to_json(alert: Alert) -> dict[str, Any]:
    """The public JSON object of one alert transition (the replay schema's `alerts[]` item)."""
    return {
        "id": transition_id(alert),
        "fingerprint": fingerprint(alert),
        "alert": alert.alert,
        "labels": dict(alert.labels),
        "severity": alert.severity,
        "state": alert.state,
        "at": iso_utc(alert.at),
        "summary": alert.summary,
        "cause": alert.cause,
        "fix": alert.fix,
        "evidence": jsonable(alert.evidence),
    }


def alert_to_record(alert: Alert) -> dict[str, Any]:
    """The spool's lossless record of an alert (`at` stays epoch seconds)."""
    record = alert_to_json(alert)
    del record["id"], record["fingerprint"]  # (derived: the spool keeps what they are made of)
    record["at"] = alert.at
    return record


def alert_from_record(record: dict[str, Any]) -> Alert:
    """Rebuild an alert from `alert_to_record`'s output; KeyError/TypeError/ValueError if bad."""
    if record["severity"] not in ("critical", "warning", "info"):
        raise ValueError(f"severity {record['severity']!r}")
    if record["state"] not in ("firing", "resolved"):
        raise ValueError(f"state {record['state']!r}")
    return Alert(
        alert=str(record["alert"]),
        labels={str(k): str(v) for k, v in dict(record["labels"]).items()},
        severity=record["severity"],
        state=record["state"],
        at=float(record["at"]),
        summary=str(record["summary"]),
        cause=str(record["cause"]),
        fix=str(record["fix"]),
        evidence=dict(record["evidence"]),
    )
