"""HTTP answers to outcomes (the retrier), and URLs kept out of errors and logs on the real wire."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest
import requests
from notify_helpers import SECRET_PATH, Receiver, Reply, make_alert, wait_until
from prometheus_client import CollectorRegistry, generate_latest

from kvwatch.cli import main
from kvwatch.notify.base import Outcome, classify, new_session, parse_retry_after, post_json
from kvwatch.notify.delivery import Backoff, Delivery, notifications_counter
from kvwatch.notify.secrets import Secret
from kvwatch.notify.slack import SlackNotifier
from kvwatch.notify.webhook import WebhookNotifier

NOW = 1767225600.0  # 2026-01-01T00:00:00Z, a Thursday


@pytest.mark.parametrize(
    ("status", "body", "retry_after", "expected"),
    [
        (200, "ok", None, ("ok", "", None)),
        (202, "", None, ("ok", "", None)),  # Alertmanager and webhooks may answer 2xx with no body
        (429, "rate_limited", "1", ("retry", "http_429", 1.0)),
        (429, "", "Thu, 01 Jan 2026 00:00:30 GMT", ("retry", "http_429", 30.0)),  # HTTP-date
        (429, "", None, ("retry", "http_429", None)),  # no header: the backoff decides
        (500, "rollup_error", None, ("retry", "http_500", None)),
        (503, "", "7", ("retry", "http_503", 7.0)),
        (408, "", None, ("retry", "http_408", None)),
        # A misconfigured receiver (a wrong path, a wrong password, a moved hook): held until fixed.
        (404, "<html>not here</html>", None, ("retry", "http_404", None)),
        (401, "Unauthorized", None, ("retry", "http_401", None)),
        (403, "forbidden", None, ("retry", "http_403", None)),
        (405, "", None, ("retry", "http_405", None)),
        (410, "", None, ("retry", "http_410", None)),
        (415, "", None, ("retry", "http_415", None)),  # not a JSON receiver: the wrong URL
        (302, "", None, ("retry", "http_302", None)),  # redirects are not followed
        (404, "channel_not_found", None, ("retry", "channel_not_found", None)),
        (410, "channel_is_archived", None, ("retry", "channel_is_archived", None)),
        (404, "no_service", None, ("retry", "no_service", None)),
        (403, "invalid_token", None, ("retry", "invalid_token", None)),
        (403, "action_prohibited", None, ("retry", "action_prohibited", None)),
        (400, "user_not_found", None, ("retry", "user_not_found", None)),  # the body decides
        # The payload itself refused: no retry or reload can change it, dropped.
        (400, "bad request", None, ("drop", "http_400", None)),
        (413, "too large", None, ("drop", "http_413", None)),
        (422, "unprocessable", None, ("drop", "http_422", None)),
        (400, "invalid_payload", None, ("drop", "invalid_payload", None)),
        (400, "too_many_attachments", None, ("drop", "too_many_attachments", None)),
    ],
)
def test_classify(
    status: int, body: str, retry_after: str | None, expected: tuple[str, str, float | None]
) -> None:
    """Status and body map to ok, held (retry, with Retry-After seconds) or dropped, with a reason."""
    outcome = classify(status, body, retry_after, NOW)
    assert expected == (outcome.kind, outcome.reason, outcome.retry_after)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("120", 120.0),
        (" 2.5 ", 2.5),
        ("-3", 0.0),  # never negative
        ("Thu, 01 Jan 2026 00:01:00 GMT", 60.0),
        ("Wed, 31 Dec 2025 23:59:00 GMT", 0.0),  # a date in the past: retry now
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(header: str | None, expected: float | None) -> None:
    """Retry-After is read as delta-seconds or as an HTTP-date relative to now."""
    assert expected == parse_retry_after(header, NOW)


def test_outcome_result_labels_are_bounded() -> None:
    """The counter's result label is ok, retry_<reason> or dropped_<reason>, never the detail text."""
    outcomes = [
        Outcome("ok"),
        Outcome("retry", "timeout", None, "x"),
        Outcome("drop", "http_400"),
    ]
    assert ["ok", "retry_timeout", "dropped_http_400"] == [o.result for o in outcomes]


def closed_port_url() -> str:
    """A URL with a secret path on a 127.0.0.1 port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{SECRET_PATH}"


def test_connection_errors_are_scrubbed_of_the_url() -> None:
    """requests names the host and path in ConnectionError text; the outcome keeps the host only."""
    url = closed_port_url()
    with pytest.raises(requests.ConnectionError) as raw:
        requests.post(url, json={}, timeout=2)
    assert "SECRETTOKEN42" in str(raw.value)  # the hazard this guards against
    outcome = post_json(new_session(), Secret(url), {}, timeout=2)
    assert ("retry", "connection") == (outcome.kind, outcome.reason)
    assert "SECRETTOKEN42" not in outcome.detail
    assert outcome.detail.startswith(url.removesuffix(SECRET_PATH) + ": ConnectionError: ")
    assert "<secret>" in outcome.detail


def test_timeouts_are_scrubbed_of_the_url() -> None:
    """A read timeout is retryable and its text does not show the URL."""
    with Receiver([Reply(hang=10)]) as receiver:
        outcome = post_json(new_session(), Secret(receiver.url), {}, timeout=0.2)
    assert ("retry", "timeout") == (outcome.kind, outcome.reason)
    assert "SECRETTOKEN42" not in outcome.detail


def test_the_url_never_reaches_the_logs(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """With DEBUG logging on, a failing and then succeeding delivery never logs the webhook URL."""
    caplog.set_level(logging.DEBUG)
    url = closed_port_url()
    notifier = SlackNotifier("slack", Secret(url), timeout=2)
    counter = notifications_counter(CollectorRegistry())
    delivery = Delivery(notifier, tmp_path, counter, backoff=Backoff(base=3600))
    delivery.start()
    delivery.enqueue(make_alert())
    wait_until(lambda: any("retrying with backoff" in r.getMessage() for r in caplog.records))
    assert delivery.close(timeout=5)
    with Receiver() as receiver:
        assert "ok" == post_json(new_session(), Secret(receiver.url), {"text": "hi"}, timeout=2).kind
    assert "SECRETTOKEN42" not in caplog.text
    assert "/services/" not in caplog.text
    assert "SECRETTOKEN42" not in repr(notifier)
    assert "SECRETTOKEN42" not in repr(delivery.notifier)


def test_delivery_errors_name_the_receiver_by_scheme_and_host_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """A URL whose path holds a token: the logs, `test-alert` output and metrics of failing deliveries
    (an answer echoing the path, a closed port) name scheme and host, never the path or the token."""
    caplog.set_level(logging.DEBUG)
    registry = CollectorRegistry()
    counter = notifications_counter(registry)
    closed = closed_port_url()
    with Receiver([Reply(404, f"no hook at {SECRET_PATH}")] * 2) as receiver:
        for name, url in [("echo", receiver.url), ("closed", closed)]:
            notifier = WebhookNotifier(name, Secret(url), timeout=2)
            delivery = Delivery(notifier, tmp_path, counter, backoff=Backoff(base=3600))
            delivery.start()
            delivery.enqueue(make_alert())
            wait_until(lambda n=name: any(f"notifier {n}:" in r.getMessage() for r in caplog.records))
            assert delivery.close(timeout=5)
        config = tmp_path / "kv.toml"
        config.write_text(f'[[notifier]]\nname = "echo"\ntype = "webhook"\nurl = "{receiver.url}"\n')
        assert 1 == main(["test-alert", "--config", str(config)])
        hosts = receiver.base, closed.removesuffix(SECRET_PATH)
    out = capsys.readouterr()
    logged = [record.getMessage() for record in caplog.records if record.name.startswith("kvwatch")]
    printed = (out.out + out.err).splitlines()
    exposition = generate_latest(registry).decode().splitlines()
    misconfigured = "(the receiver is misconfigured: check the notifier's URL, then reload kvwatch)"
    assert [f"echo: failed (http_404): {hosts[0]}: HTTP 404: no hook at <secret> {misconfigured}"] == printed
    starts = [
        f"notifier echo: failed (http_404): {hosts[0]}: HTTP 404: no hook at <secret> {misconfigured}; "
        "holding 1 alert(s), retrying with backoff",
        f"notifier closed: failed (connection): {hosts[1]}: ConnectionError: ",
    ]
    assert (2, [True, True]) == (len(logged), [m.startswith(s) for m, s in zip(logged, starts, strict=True)])
    for line in [*logged, *printed, *exposition, caplog.text]:
        assert "SECRETTOKEN42" not in line and "/services/" not in line, line
