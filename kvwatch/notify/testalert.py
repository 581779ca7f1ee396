"""The core of `kvwatch test-alert`: one clearly marked sample alert through each notifier, now.

It bypasses routes, silences, pacing, retries and the spool: the point is to see each notifier's own
answer at once. The caller prints `name: outcome.describe()` and exits non-zero unless all are ok.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import requests

from kvwatch.model import Alert
from kvwatch.notify.base import Notifier, Outcome, new_session

TEST_ALERT = "kvwatch_test_alert"


def sample_alert(now: float) -> Alert:
    """A firing, info-severity alert that says it is a test."""
    return Alert(
        alert=TEST_ALERT,
        labels={"source": "kvwatch-test-alert"},
        severity="info",
        state="firing",
        at=now,
        summary="TEST ALERT from `kvwatch test-alert`: notification delivery works; ignore it.",
        cause="Someone ran `kvwatch test-alert` to check this notifier; nothing is wrong.",
        fix="Nothing to do.",
        evidence={"test": True, "sent_by": "kvwatch test-alert"},
    )


def send_test_alert(
    notifiers: Sequence[Notifier],
    session: requests.Session | None = None,
    now: float | None = None,
) -> list[tuple[str, Outcome]]:
    """Send the sample alert once through each notifier; each notifier's name and outcome."""
    alert = sample_alert(time.time() if now is None else now)
    http = session or new_session()
    results: list[tuple[str, Outcome]] = []
    for notifier in notifiers:
        try:
            outcome = notifier.send([alert], http)
        except Exception as exc:
            outcome = Outcome("drop", "internal_error", None, type(exc).__name__)
        results.append((notifier.name, outcome))
    return results
