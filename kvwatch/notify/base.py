"""What a notifier is, what a send attempt yields, and the one place HTTP answers become outcomes.

Alertmanager's retrier model: an attempt is ok, worth retrying, or permanently failed. Unlike
Alertmanager, HTTP 429 is retried after its `Retry-After` (seconds or an HTTP-date). 5xx, timeouts
and network errors retry; other statuses and Slack's permanent error bodies are permanent, with a
short bounded reason that becomes the `result` label `permanent_<reason>`.
"""

from __future__ import annotations

import email.utils
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import requests
from requests.exceptions import InvalidSchema, InvalidURL, MissingSchema

from kvwatch.model import Alert
from kvwatch.notify.secrets import Secret, receiver, scrub
from kvwatch.notify.transport import Transport

#: Slack incoming-webhook error bodies that no retry can fix.
SLACK_PERMANENT = frozenset(
    {
        "invalid_payload",
        "channel_not_found",
        "channel_is_archived",
        "no_service",
        "no_service_id",
        "no_team",
        "team_disabled",
        "invalid_token",
        "action_prohibited",
        "posting_to_general_channel_denied",
        "too_many_attachments",
        "user_not_found",
    }
)

Kind = Literal["ok", "retry", "permanent"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One send attempt's result; `reason` is short and bounded, `detail` is scrubbed log text."""

    kind: Kind
    reason: str = ""
    retry_after: float | None = None
    detail: str = ""

    @property
    def result(self) -> str:
        """The `kvwatch_notifications_total` result label: ok, retry or permanent_<reason>."""
        return f"permanent_{self.reason}" if self.kind == "permanent" else self.kind

    def describe(self) -> str:
        """One line for people (test-alert, logs): the kind, the reason and the detail."""
        if self.kind == "ok":
            return "ok"
        text = f"{'retryable' if self.kind == 'retry' else 'permanent'} error ({self.reason})"
        return f"{text}: {self.detail}" if self.detail else text


OK = Outcome("ok")


class Notifier(Protocol):
    """Sends a batch of alerts in one request; Delivery paces, retries and spools around it."""

    @property
    def name(self) -> str:
        """Config name: the `notifier` label and the spool file name."""
        ...

    @property
    def min_interval(self) -> float:
        """Seconds to keep between two sends (Slack: 1)."""
        ...

    @property
    def max_batch(self) -> int:
        """How many alerts one send may carry."""
        ...

    def send(self, alerts: Sequence[Alert], session: requests.Session) -> Outcome:
        """Deliver `alerts` in one attempt; never raises for HTTP or network trouble."""
        ...


def parse_retry_after(value: str | None, now: float) -> float | None:
    """`Retry-After` as seconds from `now` (delta-seconds or HTTP-date); None if unusable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, moment.timestamp() - now)


def classify(status: int, body: str, retry_after: str | None, now: float) -> Outcome:
    """Map an HTTP answer to an Outcome (the retrier); `now` is wall time for an HTTP-date."""
    code = body.strip()[:64]
    detail = f"HTTP {status}: {body.strip()[:200]}"
    if 200 <= status < 300:
        return OK
    if status == 429:
        return Outcome("retry", "http_429", parse_retry_after(retry_after, now), detail)
    if code in SLACK_PERMANENT:
        return Outcome("permanent", code, None, detail)
    if status >= 500:
        return Outcome("retry", f"http_{status}", parse_retry_after(retry_after, now), detail)
    return Outcome("permanent", f"http_{status}", None, detail)


def post_json(
    session: requests.Session,
    url: Secret,
    payload: Any,
    timeout: float,
    clock: Callable[[], float] = time.time,
    *,
    transport: Transport | None = None,
) -> Outcome:
    """POST `payload` as JSON to `url` over `transport` (default: the host's trust store, no auth) and
    classify the answer; error text names the receiver by scheme and host (`receiver`) and is
    scrubbed of the rest of the URL and of the credentials."""
    transport = transport or Transport()
    data = json.dumps(payload, default=str, ensure_ascii=False).encode("utf-8")
    headers = {"Content-Type": "application/json; charset=utf-8", **transport.headers()}
    try:
        with session.post(
            url.reveal(),
            data=data,
            headers=headers,
            timeout=timeout,
            allow_redirects=False,
            verify=transport.verify,
        ) as resp:
            outcome = classify(resp.status_code, resp.text, resp.headers.get("Retry-After"), clock())
    except requests.Timeout as exc:
        outcome = Outcome("retry", "timeout", None, f"timeout: {exc}")
    except (InvalidURL, MissingSchema, InvalidSchema) as exc:
        outcome = Outcome("permanent", "invalid_url", None, f"invalid URL: {exc}")
    except requests.RequestException as exc:
        outcome = Outcome("retry", "connection", None, f"{type(exc).__name__}: {exc}")
    if outcome.kind == "ok":
        return outcome
    detail = f"{receiver(url)}: {scrub(outcome.detail, url, *transport.secrets())}"
    return Outcome(outcome.kind, outcome.reason, outcome.retry_after, detail)


def new_session() -> requests.Session:
    """A requests session; urllib3's lines below WARNING (they show URL paths) are muted."""
    pool_log = logging.getLogger("urllib3.connectionpool")
    if pool_log.level < logging.WARNING:
        pool_log.setLevel(logging.WARNING)
    return requests.Session()
