"""Generic JSON webhook: the body is the alert object exactly as `replay --format json` lists it
(with the `id` and `fingerprint` a receiver de-duplicates by, see payload.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import requests

from kvwatch.model import Alert
from kvwatch.notify.base import Outcome, post_json
from kvwatch.notify.payload import alert_to_json
from kvwatch.notify.secrets import Secret
from kvwatch.notify.transport import Transport


@dataclass(frozen=True)
class WebhookNotifier:
    """POSTs one alert object per request (a batch, which Delivery never makes, as a list)."""

    name: str
    url: Secret = field(repr=False)
    timeout: float = 10.0
    min_interval: float = 0.0
    max_batch: int = 1
    clock: Callable[[], float] = field(default=time.time, repr=False)
    transport: Transport = field(default_factory=Transport, repr=False)

    def send(self, alerts: Sequence[Alert], session: requests.Session) -> Outcome:
        """Post the alert object (or a list of them)."""
        objects = [alert_to_json(alert) for alert in alerts]
        body = objects[0] if len(objects) == 1 else objects
        return post_json(session, self.url, body, self.timeout, self.clock, transport=self.transport)
