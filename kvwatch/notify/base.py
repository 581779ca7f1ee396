"""What a notifier is, what a send attempt yields, and the one place HTTP answers become outcomes.

An attempt is ok, held (`retry`), or dropped (`drop`). kvwatch holds an alert whenever the answer
says the receiver is unreachable, overloaded or misconfigured: connection errors, timeouts, 5xx, 429
(after its `Retry-After`), 408, and every 4xx or 3xx a fix of the receiver or of kvwatch's config
cures (404 a wrong path, 401/403 a wrong credential, 405, 410, a redirect, Slack's `channel_not_found`
...): a wrong URL delays alerts until it is fixed, it never loses them. Only answers that reject the
payload itself, which no retry or reload can change, drop it: 400, 413 and 422 (and Slack's
`invalid_payload`, `too_many_attachments`, ...), counted and logged per alert. Each outcome has a
short bounded reason (`http_404`, `connection`, a Slack error code) for the `result` label.
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

#: Slack incoming-webhook error bodies that say the payload itself is refused: no retry can fix them.
SLACK_REJECTED = frozenset(
    {
        "invalid_payload",
        "too_many_attachments",
        "no_text",
        "invalid_blocks",
        "invalid_blocks_format",
        "invalid_attachments",
        "msg_too_long",
    }
)

#: Slack incoming-webhook error bodies that say the hook is misconfigured: held until it is fixed.
SLACK_MISCONFIGURED = frozenset(
    {
        "channel_not_found",
        "channel_is_archived",
        "no_service",
        "no_service_id",
        "no_team",
        "team_disabled",
        "invalid_token",
        "action_prohibited",
        "posting_to_general_channel_denied",
        "user_not_found",
    }
)

#: HTTP statuses that reject the payload (malformed, too large, unprocessable): the alert is dropped.
REJECTING_STATUSES = frozenset({400, 413, 422})

#: Reasons that say the receiver refuses kvwatch's credentials.
_CREDENTIALS = frozenset({"http_401", "http_403", "invalid_token", "action_prohibited"})

Kind = Literal["ok", "retry", "drop"]


def hint(reason: str) -> str:
    """What a failing reason most likely means, for a person (a log line, the landing page)."""
    if reason in _CREDENTIALS:
        return "the receiver refuses kvwatch's credentials: check the notifier's auth or token"
    if reason in ("connection", "timeout", "http_408", "http_429") or reason.startswith("http_5"):
        return "the receiver is down, overloaded or unreachable"
    if reason == "internal_error":
        return "kvwatch could not build the message (a bug: please report it)"
    if reason in SLACK_REJECTED or reason in {f"http_{status}" for status in REJECTING_STATUSES}:
        return "the receiver rejected the payload itself"
    return "the receiver is misconfigured: check the notifier's URL, then reload kvwatch"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One send attempt's result; `reason` is short and bounded, `detail` is scrubbed log text."""

    kind: Kind
    reason: str = ""
    retry_after: float | None = None
    detail: str = ""

    @property
    def result(self) -> str:
        """The `kvwatch_notifications_total` result label: ok, retry_<reason> or dropped_<reason>."""
        if self.kind == "ok":
            return "ok"
        return f"{'retry' if self.kind == 'retry' else 'dropped'}_{self.reason}"

    def describe(self) -> str:
        """One line for people (test-alert, logs): failed or rejected, the reason, the detail and what
        the reason most likely means."""
        if self.kind == "ok":
            return "ok"
        text = f"{'failed' if self.kind == 'retry' else 'rejected'} ({self.reason})"
        text = f"{text}: {self.detail}" if self.detail else text
        return f"{text} ({hint(self.reason)})"


OK = Outcome("ok")


class Notifier(Protocol):
    """Sends a batch of alerts in one request; Delivery paces, retries and spools around it."""

    @property
    def name(self) -> str:
        """Config name: the `notifier` label and the spool file name."""
        ...

    @property
    def url(self) -> Secret:
        """Where it posts (a secret: only its scheme and host may be shown, `receiver`)."""
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
    if code in SLACK_REJECTED:
        return Outcome("drop", code, None, detail)
    if code in SLACK_MISCONFIGURED:
        return Outcome("retry", code, None, detail)
    if status in REJECTING_STATUSES:
        return Outcome("drop", f"http_{status}", None, detail)
    # Everything else waits for the receiver or its config to be fixed (a 404 is a wrong path, a 401 a
    # wrong password): held, never dropped. Retry-After is honoured where the receiver gives one.
    reason = f"http_{status}" if 100 <= status <= 599 else "http_other"
    return Outcome("retry", reason, parse_retry_after(retry_after, now), detail)


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
        outcome = Outcome("retry", "invalid_url", None, f"invalid URL: {exc}")  # (a reload can fix it)
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
