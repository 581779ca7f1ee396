"""`kvwatch test-alert`'s core: a marked sample alert through each notifier, each result."""

from __future__ import annotations

from notify_helpers import Receiver, Reply

from kvwatch.notify.base import Notifier
from kvwatch.notify.secrets import Secret
from kvwatch.notify.slack import SlackNotifier
from kvwatch.notify.testalert import TEST_ALERT, send_test_alert
from kvwatch.notify.webhook import WebhookNotifier


def test_send_test_alert_reports_each_notifier() -> None:
    """Every notifier gets the test alert once, synchronously; failures are reported, not raised."""
    with Receiver() as good, Receiver([Reply(404, "channel_not_found")]) as bad:
        notifiers: list[Notifier] = [
            WebhookNotifier("hook", Secret(good.url), timeout=2),
            SlackNotifier("slack", Secret(bad.url), timeout=2),
        ]
        results = send_test_alert(notifiers, now=1767225600.0)
        body = good.seen[0].body
        slack_text = bad.seen[0].body["text"]
        where = bad.base
    assert [
        ("hook", "ok"),
        (
            "slack",
            f"failed (channel_not_found): {where}: HTTP 404: channel_not_found (the receiver is "
            "misconfigured: check the notifier's URL, then reload kvwatch)",
        ),
    ] == [(name, outcome.describe()) for name, outcome in results]
    assert (TEST_ALERT, "info", "firing") == (body["alert"], body["severity"], body["state"])
    assert body["summary"].startswith("TEST ALERT")
    assert "TEST ALERT" in slack_text
