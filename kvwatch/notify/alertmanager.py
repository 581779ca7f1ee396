"""Alertmanager: `POST {url}/api/v2/alerts` with labels, annotations, `startsAt` and `endsAt`.

Labels are `alertname`, `severity` and the alert's own labels; annotations carry the summary, the
description (cause and fix), the runbook_url (the alert's section of docs/alerts.md), the cause, the
fix and the evidence as a JSON string. A firing alert has no `endsAt` unless `firing_ttl` is set, so
Alertmanager resolves it after its `resolve_timeout` unless kvwatch repeats it sooner; a resolved
alert has `endsAt` = its time (Alertmanager then takes `startsAt` = `endsAt`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import requests

from kvwatch.model import Alert
from kvwatch.notify.base import Outcome, post_json
from kvwatch.notify.payload import iso_utc, jsonable
from kvwatch.notify.runbook import RUNBOOK_BASE_URL, description, runbook_url
from kvwatch.notify.secrets import Secret
from kvwatch.notify.transport import Transport


def am_alert(
    alert: Alert,
    firing_ttl: float | None = None,
    generator_url: str = "",
    runbook_base_url: str = RUNBOOK_BASE_URL,
) -> dict[str, Any]:
    """One postable Alertmanager alert for an alert transition."""
    body: dict[str, Any] = {
        "labels": {**alert.labels, "alertname": alert.alert, "severity": alert.severity},
        "annotations": {
            "summary": alert.summary,
            "description": description(alert),
            "runbook_url": runbook_url(alert.alert, runbook_base_url),
            "cause": alert.cause,
            "fix": alert.fix,
            "evidence": json.dumps(jsonable(alert.evidence), sort_keys=True, ensure_ascii=False),
        },
    }
    if alert.state == "firing":
        body["startsAt"] = iso_utc(alert.at)
        if firing_ttl is not None:
            body["endsAt"] = iso_utc(alert.at + firing_ttl)
    else:
        body["endsAt"] = iso_utc(alert.at)
    if generator_url:
        body["generatorURL"] = generator_url
    return body


@dataclass(frozen=True)
class AlertmanagerNotifier:
    """Posts batches of alerts to one Alertmanager's v2 API."""

    name: str
    url: Secret = field(repr=False)
    timeout: float = 10.0
    min_interval: float = 0.0
    max_batch: int = 64
    firing_ttl: float | None = None
    generator_url: str = ""
    runbook_base_url: str = RUNBOOK_BASE_URL
    clock: Callable[[], float] = field(default=time.time, repr=False)
    transport: Transport = field(default_factory=Transport, repr=False)

    def endpoint(self) -> Secret:
        """The alerts endpoint under the configured base URL (a URL that already names it is taken as
        it is: `http://am:9093/api/v2/alerts` is what Alertmanager's own docs show, and a doubled path
        would be a 404 for every alert)."""
        base = self.url.reveal().rstrip("/")
        return Secret(base if base.endswith("/api/v2/alerts") else base + "/api/v2/alerts")

    def send(self, alerts: Sequence[Alert], session: requests.Session) -> Outcome:
        """Post `alerts` as one JSON list."""
        body = [am_alert(a, self.firing_ttl, self.generator_url, self.runbook_base_url) for a in alerts]
        return post_json(session, self.endpoint(), body, self.timeout, self.clock, transport=self.transport)
