"""Delivery against a real HTTP receiver: held and retried, Retry-After, rejected payloads, pacing, spool,
a failing notifier's state and its log lines."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from notify_helpers import FakeTime, Receiver, Reply, make_alert, wait_until
from prometheus_client import CollectorRegistry

from kvwatch.notify.base import Outcome
from kvwatch.notify.delivery import Backoff, Delivery, dispatch, notifications_counter
from kvwatch.notify.payload import alert_to_json, alert_to_record
from kvwatch.notify.routing import Route, Silence, parse_matcher
from kvwatch.notify.secrets import Secret
from kvwatch.notify.slack import SlackNotifier
from kvwatch.notify.status import Status
from kvwatch.notify.webhook import WebhookNotifier

NO_JITTER = Backoff(base=1.0, factor=2.0, cap=300.0, jitter=0.0)


@pytest.fixture
def registry() -> CollectorRegistry:
    """A fresh registry per test."""
    return CollectorRegistry()


@pytest.fixture
def started() -> Iterator[list[Delivery]]:
    """Deliveries a test appends here are closed at its end."""
    deliveries: list[Delivery] = []
    yield deliveries
    for delivery in deliveries:
        delivery.close(timeout=5)


def count(registry: CollectorRegistry, name: str, result: str) -> float:
    """The notifications counter's value for one notifier and result (0 when absent)."""
    labels = {"notifier": name, "result": result}
    return registry.get_sample_value("kvwatch_notifications_total", labels) or 0.0


def webhook_delivery(
    receiver: Receiver, tmp_path: Path, registry: CollectorRegistry, fake: FakeTime, **kw: Any
) -> Delivery:
    """A webhook Delivery to `receiver` with a real 0.2 s client timeout and a fake clock/sleep."""
    notifier = WebhookNotifier("hook", Secret(receiver.url), timeout=0.2)
    counter = notifications_counter(registry)
    kw.setdefault("backoff", NO_JITTER)
    return Delivery(notifier, tmp_path, counter, clock=fake.time, sleep=fake.sleep, **kw)


def test_every_alert_arrives_once_in_order_through_429_500_and_a_hang(
    tmp_path: Path, registry: CollectorRegistry, started: list[Delivery]
) -> None:
    """429 with Retry-After, a 500 and a hang past the timeout are retried; each alert once."""
    fake = FakeTime()
    script = [Reply(429, "slow down", {"Retry-After": "1"}), Reply(500, "oops"), Reply(hang=10)]
    alerts = [make_alert(at=1767225600.0 + i, summary=f"alert {i}") for i in range(3)]
    with Receiver(script) as receiver:
        delivery = webhook_delivery(receiver, tmp_path, registry, fake)
        started.append(delivery)
        delivery.start()
        for alert in alerts:
            delivery.enqueue(alert)
        wait_until(lambda: len(receiver.accepted()) == 3)
        wait_until(lambda: delivery.pending() == [])
        assert [alert_to_json(a) for a in alerts] == receiver.accepted()
        assert 6 == receiver.count()
    assert [1.0, 2.0, 4.0] == fake.sleeps
    assert 3.0 == count(registry, "hook", "ok")
    held = [count(registry, "hook", f"retry_{reason}") for reason in ("http_429", "http_500", "timeout")]
    assert [1.0, 1.0, 1.0] == held
    assert [] == json.loads((tmp_path / "notify-hook.json").read_text())["pending"]


def test_rejected_payloads_are_dropped_counted_and_said(
    tmp_path: Path,
    registry: CollectorRegistry,
    started: list[Delivery],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """400, 413, 422 and Slack's invalid_payload drop their alert at once, each counted by reason and
    logged naming the alert; the alerts after them are delivered."""
    caplog.set_level(logging.WARNING, logger="kvwatch.notify.delivery")
    fake = FakeTime()
    script = [
        Reply(400, "bad request"),
        Reply(413, "too big"),
        Reply(422, "no"),
        Reply(400, "invalid_payload"),
    ]
    alerts = [make_alert(summary=f"alert {i}", labels={"source": f"s{i}"}) for i in range(5)]
    with Receiver(script) as receiver:
        delivery = webhook_delivery(receiver, tmp_path, registry, fake)
        started.append(delivery)
        delivery.start()
        for alert in alerts:
            delivery.enqueue(alert)
        wait_until(lambda: delivery.pending() == [])
        assert [alert_to_json(alerts[4])] == receiver.accepted()
        assert 5 == receiver.count()
    assert [] == fake.sleeps
    reasons = ("http_400", "http_413", "http_422", "invalid_payload")
    assert [1.0] * 4 == [count(registry, "hook", f"dropped_{reason}") for reason in reasons]
    status = delivery.status()
    assert (4, 1, "invalid_payload", False) == (
        status.dropped,
        status.delivered,
        status.last_drop,
        status.failing,
    )
    dropped = [r.getMessage() for r in caplog.records if "dropped pinned_cache_length" in r.getMessage()]
    assert [f"(source=s{i})" in line and ": rejected (" in line for i, line in enumerate(dropped)] == [
        True
    ] * 4


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(404, "404 page not found"), "http_404"),
        (Reply(401, "Unauthorized"), "http_401"),
        (Reply(403, "Forbidden"), "http_403"),
        (Reply(405, "Method Not Allowed"), "http_405"),
        (Reply(408, "Request Timeout"), "http_408"),
        (Reply(429, "slow down"), "http_429"),
        (Reply(502, "Bad Gateway"), "http_502"),
        (Reply(404, "channel_not_found"), "channel_not_found"),
        (Reply(hang=10), "timeout"),
    ],
)
def test_a_misconfigured_or_unreachable_receiver_delays_alerts_never_drops_them(
    reply: Reply, reason: str, tmp_path: Path, registry: CollectorRegistry, started: list[Delivery]
) -> None:
    """Five answers of a wrong path, a wrong credential, a busy or hanging receiver hold every alert;
    once it answers 200 all arrive, in order, none lost, and the status is no longer failing."""
    fake = FakeTime()
    alerts = [make_alert(summary=f"alert {i}") for i in range(3)]
    with Receiver([reply] * 5) as receiver:
        delivery = webhook_delivery(receiver, tmp_path, registry, fake)
        started.append(delivery)
        for alert in alerts:
            delivery.enqueue(alert)
        delivery.start()
        wait_until(lambda: len(receiver.accepted()) == 3)
        wait_until(lambda: delivery.pending() == [])
        assert [alert_to_json(a) for a in alerts] == receiver.accepted()
        assert 8 == receiver.count()
    assert 5 == len(fake.sleeps)
    assert (5.0, 3.0) == (count(registry, "hook", f"retry_{reason}"), count(registry, "hook", "ok"))
    status = delivery.status()
    assert (False, 3, 0, 0) == (status.failing, status.delivered, status.dropped, status.pending)


def test_a_failing_notifier_says_so_once_per_change_of_state(
    tmp_path: Path,
    registry: CollectorRegistry,
    started: list[Delivery],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Many failed attempts make one line when the failure starts, one when its reason changes, one when
    it recovers; meanwhile the status shows since when, why and what waits."""
    caplog.set_level(logging.INFO, logger="kvwatch.notify.delivery")
    script = [Reply(404, "404 page not found")] * 4 + [Reply(503, "busy")] * 3
    seen: list[Status] = []
    holder: list[Delivery] = []
    fake = FakeTime()

    def sleep(seconds: float) -> None:
        """The backoff's wait: a look at the status first."""
        seen.append(holder[0].status())
        fake.sleep(seconds)

    with Receiver(script) as receiver:
        notifier = WebhookNotifier("hook", Secret(receiver.url), timeout=0.2)
        delivery = Delivery(
            notifier, tmp_path, notifications_counter(registry), backoff=NO_JITTER,
            clock=fake.time, sleep=sleep, wall=lambda: 1767225600.0,
        )  # fmt: skip
        holder.append(delivery)
        started.append(delivery)
        for i in range(2):
            delivery.enqueue(make_alert(summary=f"alert {i}"))
        delivery.start()
        wait_until(lambda: delivery.pending() == [])
        where = receiver.base
    first = seen[0]
    assert (True, 1767225600.0, "http_404", 2) == (
        first.failing,
        first.failing_since,
        first.reason,
        first.pending,
    )
    assert (f"{where}: HTTP 404: 404 page not found", where) == (first.detail, first.receiver)
    assert ["http_404"] * 4 + ["http_503"] * 3 == [status.reason for status in seen if status.failing]
    messages = [r.getMessage() for r in caplog.records if r.name == "kvwatch.notify.delivery"]
    assert [
        f"notifier hook: failed (http_404): {where}: HTTP 404: 404 page not found (the receiver is "
        "misconfigured: check the notifier's URL, then reload kvwatch); holding 2 alert(s), retrying with "
        "backoff",
        f"notifier hook: failing for another reason: failed (http_503): {where}: HTTP 503: busy (the "
        "receiver is down, overloaded or unreachable); holding 2 alert(s)",
        "notifier hook: recovered after 0 s failing (http_503); 1 held alert(s) left to send",
    ] == messages
    assert (False, 2) == (delivery.status().failing, delivery.status().delivered)


def test_restart_resends_what_was_pending_and_nothing_twice(
    tmp_path: Path, registry: CollectorRegistry
) -> None:
    """Alerts still pending at close are spooled; a new Delivery sends them, none of them twice."""
    alerts = [make_alert(summary=f"alert {i}") for i in range(3)]
    slow = Backoff(base=3600.0, jitter=0.0)
    counter = notifications_counter(registry)
    with Receiver([Reply(), Reply(503, "down")]) as receiver:
        notifier = WebhookNotifier("hook", Secret(receiver.url), timeout=2)
        first = Delivery(notifier, tmp_path, counter, backoff=slow)
        first.start()
        for alert in alerts:
            first.enqueue(alert)
        wait_until(lambda: receiver.count() == 2)
        assert first.close(timeout=5)
        spooled = json.loads((tmp_path / "notify-hook.json").read_text())["pending"]
        assert ["alert 1", "alert 2"] == [record["summary"] for record in spooled]
        second = Delivery(notifier, tmp_path, counter, backoff=slow)
        assert alerts[1:] == second.pending()
        second.start()
        wait_until(lambda: second.pending() == [])
        assert second.close(timeout=5)
        assert [alert_to_json(a) for a in alerts] == receiver.accepted()
        assert 4 == receiver.count()


def test_a_queue_closed_for_a_reload_leaves_the_spool_to_its_successor(
    tmp_path: Path, registry: CollectorRegistry
) -> None:
    """A send still in flight when a reload replaces the queue does not rewrite the spool the new queue
    owns: an alert queued on the new one meanwhile stays spooled (the old one's may be sent again)."""
    counter = notifications_counter(registry)
    with Receiver([Reply(delay=30)]) as receiver:
        notifier = WebhookNotifier("hook", Secret(receiver.url), timeout=30)
        first = Delivery(notifier, tmp_path, counter)
        first.start()
        first.enqueue(make_alert(summary="a"))
        wait_until(lambda: receiver.count() == 1)
        assert not first.close(0.05, handing_over=True)  # (its send still waits for the answer)
        second = Delivery(notifier, tmp_path, counter)
        second.enqueue(make_alert(summary="b"))
        receiver.release.set()
        wait_until(lambda: count(registry, "hook", "ok") == 1.0)
        assert first.close(5)
    spooled = json.loads((tmp_path / "notify-hook.json").read_text())["pending"]
    assert ["a", "b"] == [record["summary"] for record in spooled]


def test_a_receiver_can_drop_a_transition_sent_again(tmp_path: Path, registry: CollectorRegistry) -> None:
    """A transition whose answer was lost in an outage is sent again by the restarted delivery with
    the same id and fingerprint; another transition of the same alert has its own id."""
    firing = make_alert(at=1767225600.0)
    resolved = make_alert(state="resolved", at=1767229200.5)
    slow = Backoff(base=3600.0, jitter=0.0)
    counter = notifications_counter(registry)
    with Receiver([Reply(hang=10)]) as receiver:
        notifier = WebhookNotifier("hook", Secret(receiver.url), timeout=0.3)
        first = Delivery(notifier, tmp_path, counter, backoff=slow)
        first.start()
        first.enqueue(firing)
        first.enqueue(resolved)
        wait_until(lambda: count(registry, "hook", "retry_timeout") == 1.0)  # the answer never came
        assert first.close(timeout=5)
        second = Delivery(notifier, tmp_path, counter, backoff=slow)
        second.start()
        wait_until(lambda: second.pending() == [])
        assert second.close(timeout=5)
        bodies = [seen.body for seen in receiver.seen]
    ids = [body["id"] for body in bodies]
    assert [ids[0], ids[0], ids[2]] == ids and ids[0] != ids[2]
    assert 1 == len({body["fingerprint"] for body in bodies})
    kept = list({body["id"]: body for body in bodies}.values())  # what a de-duplicating receiver keeps
    assert [alert_to_json(firing), alert_to_json(resolved)] == kept


def test_slack_sends_are_paced_one_per_second(
    tmp_path: Path, registry: CollectorRegistry, started: list[Delivery]
) -> None:
    """Consecutive Slack messages keep the one-second interval, on the injected clock."""
    fake = FakeTime()
    with Receiver() as receiver:
        notifier = SlackNotifier("slack", Secret(receiver.url), timeout=2)
        counter = notifications_counter(registry)
        delivery = Delivery(notifier, tmp_path, counter, clock=fake.time, sleep=fake.sleep)
        started.append(delivery)
        delivery.start()
        for i in range(3):
            delivery.enqueue(make_alert(summary=f"alert {i}"))
        wait_until(lambda: len(receiver.accepted()) == 3)
    assert [1.0, 1.0] == fake.sleeps


def test_enqueue_returns_while_the_receiver_hangs(
    tmp_path: Path, registry: CollectorRegistry, started: list[Delivery]
) -> None:
    """A receiver holding a request does not block enqueue: the caller goes on at once."""
    with Receiver([Reply(hang=30)]) as receiver:
        notifier = WebhookNotifier("hook", Secret(receiver.url), timeout=30)
        delivery = Delivery(notifier, tmp_path, notifications_counter(registry))
        started.append(delivery)
        delivery.start()
        delivery.enqueue(make_alert(summary="first"))
        wait_until(lambda: receiver.count() == 1)
        delivery.enqueue(make_alert(summary="second"))
        assert ["first", "second"] == [a.summary for a in delivery.pending()]


def test_the_queue_is_bounded_by_bytes_and_drops_the_oldest_when_full(
    tmp_path: Path, registry: CollectorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    """Beyond max_bytes of spooled alerts the oldest waiting alert is dropped, counted as dropped_overflow
    and logged by name; a large alert pushes out as many small ones as it needs, never itself."""
    notifier = WebhookNotifier("hook", Secret("http://127.0.0.1:9/x"))
    small = [make_alert(summary=f"alert {i}") for i in range(3)]
    size = len(json.dumps(alert_to_record(small[0]), ensure_ascii=False).encode())
    delivery = Delivery(notifier, tmp_path, notifications_counter(registry), max_bytes=2 * size + size // 2)
    for alert in small:
        delivery.enqueue(alert)
    assert ["alert 1", "alert 2"] == [a.summary for a in delivery.pending()]
    big = make_alert(summary="big", evidence={"text": "x" * 3 * size})
    delivery.enqueue(big)
    assert [big] == delivery.pending()
    assert 3.0 == count(registry, "hook", "dropped_overflow")
    status = delivery.status()
    assert (1, 3, "overflow") == (status.pending, status.dropped, status.last_drop)
    assert status.pending_bytes == len(json.dumps(alert_to_record(big), ensure_ascii=False).encode())
    logged = [r.getMessage() for r in caplog.records if "queue full" in r.getMessage()]
    assert 3 == sum("dropped the oldest waiting, pinned_cache_length firing" in line for line in logged)


def test_a_corrupt_spool_is_moved_aside(tmp_path: Path, registry: CollectorRegistry) -> None:
    """An unreadable spool file is renamed .corrupt and the notifier starts empty."""
    (tmp_path / "notify-hook.json").write_text("{not json")
    notifier = WebhookNotifier("hook", Secret("http://127.0.0.1:9/x"))
    delivery = Delivery(notifier, tmp_path, notifications_counter(registry))
    assert [] == delivery.pending()
    assert "{not json" == (tmp_path / "notify-hook.json.corrupt").read_text()


def test_dispatch_follows_routes_and_silences(tmp_path: Path, registry: CollectorRegistry) -> None:
    """dispatch enqueues where the route takes the alert and no silence mutes it."""
    counter = notifications_counter(registry)
    pager = Delivery(
        WebhookNotifier("pager", Secret("http://127.0.0.1:9/p")),
        tmp_path,
        counter,
        route=Route(min_severity="critical"),
    )
    chat = Delivery(WebhookNotifier("chat", Secret("http://127.0.0.1:9/c")), tmp_path, counter)
    quiet = Silence((parse_matcher("source=llama-b"),), ends_at=2000.0)
    alert = make_alert(labels={"source": "llama-a"})
    muted = make_alert(labels={"source": "llama-b"})
    assert {"pager": "below_severity", "chat": "send"} == dispatch([pager, chat], [quiet], alert, 1000.0)
    assert {"pager": "below_severity", "chat": "silenced"} == dispatch([pager, chat], [quiet], muted, 1000.0)
    assert ([], [alert]) == (pager.pending(), chat.pending())


@pytest.mark.parametrize(
    ("outcome", "attempt", "expected"),
    [
        (Outcome("retry", "timeout"), 0, 1.0),  # base
        (Outcome("retry", "timeout"), 3, 8.0),  # base * factor**3
        (Outcome("retry", "timeout"), 20, 300.0),  # capped
        (Outcome("retry", "timeout"), 5000, 300.0),  # no overflow on a very long outage
        (Outcome("retry", "http_429", 7.5), 9, 7.5),  # Retry-After wins over the backoff
        (Outcome("retry", "http_429", 99999.0), 0, 900.0),  # but is capped
    ],
)
def test_backoff_waits(outcome: Outcome, attempt: int, expected: float) -> None:
    """The wait after a retryable outcome: Retry-After if given, else capped exponential backoff."""
    assert expected == NO_JITTER.wait(outcome, attempt, lambda: 0.5)


def test_backoff_jitter_is_deterministic_with_an_injected_random() -> None:
    """Jitter removes up to its fraction of the delay, drawn from the injected random source."""
    assert 3.6 == pytest.approx(Backoff(base=4.0, jitter=0.1).delay(0, lambda: 1.0))


def test_an_unwritable_spool_keeps_alerts_in_memory_and_logs_once(
    tmp_path: Path, registry: CollectorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    """When the spool cannot be written, enqueue still queues the alert and the error is logged once."""
    notifier = WebhookNotifier("hook", Secret("http://127.0.0.1:9/x"))
    delivery = Delivery(notifier, tmp_path, notifications_counter(registry))
    (tmp_path / "notify-hook.json").mkdir()  # the written file cannot be renamed over it
    for i in range(2):
        delivery.enqueue(make_alert(summary=f"alert {i}"))
    assert ["alert 0", "alert 1"] == [a.summary for a in delivery.pending()]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert [
        f"notifier hook: cannot write {tmp_path / 'notify-hook.json'}: Is a directory; "
        "alerts are kept in memory only"
    ] == errors
