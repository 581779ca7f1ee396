"""Delivery: a queue, a thread and a spool per notifier; no alert lost, repeated or reordered.

`enqueue` appends to the spool (written atomically) and returns; the notifier's thread sends the
head of the queue, paced by the notifier's `min_interval`. A held outcome (the receiver is down,
overloaded or misconfigured: base.classify) keeps the alert at the head and waits (its `Retry-After`,
else exponential backoff), however long the failure lasts: a reload that fixes the URL rebuilds the
queue from the spool and sends it. Ok removes the head; a rejected payload is dropped, counted
(`dropped_<reason>`) and logged with the alert it was. The queue is bounded by the bytes of its
spooled alerts (`max_bytes`): beyond it the oldest waiting alert is dropped and said
(`dropped_overflow`). Each change of state is one log line: failing (with the reason and what it
means), failing for another reason, recovered (how long it failed, how many alerts it held).
Waits use a Condition, so `close` is prompt.
Crash window: an alert the receiver accepted just before a crash, before the spool was rewritten, is
sent again after the restart.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import requests
from prometheus_client import CollectorRegistry, Counter

from kvwatch.model import Alert
from kvwatch.notify.base import Notifier, Outcome, new_session
from kvwatch.notify.payload import alert_to_record
from kvwatch.notify.routing import Decision, Route, Silence, decide
from kvwatch.notify.secrets import receiver
from kvwatch.notify.spool import Spool
from kvwatch.notify.status import Status

log = logging.getLogger(__name__)

#: The default bound of a notifier's queue: its spooled alerts' bytes (a few thousand alerts).
MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Backoff:
    """Retry waits: base * factor**attempt capped at `cap`, less up to `jitter` of it at random."""

    base: float = 1.0
    factor: float = 2.0
    cap: float = 300.0
    jitter: float = 0.1
    retry_after_cap: float = 900.0

    def delay(self, attempt: int, rand: Callable[[], float]) -> float:
        """Seconds to wait before retry number `attempt` + 1 (attempt counts from 0)."""
        raw = min(self.cap, self.base * self.factor ** min(attempt, 64))
        return raw * (1.0 - self.jitter * rand())

    def wait(self, outcome: Outcome, attempt: int, rand: Callable[[], float]) -> float:
        """The wait after a retryable outcome: its Retry-After (capped) if any, else the backoff."""
        if outcome.retry_after is not None:
            return min(outcome.retry_after, self.retry_after_cap)
        return self.delay(attempt, rand)


def notifications_counter(registry: CollectorRegistry) -> Counter:
    """`kvwatch_notifications_total{notifier,result}`: create once per registry, share it."""
    return Counter(
        "kvwatch_notifications",
        "Notification attempts by notifier and result (ok, retry_<reason>: held; dropped_<reason>: lost).",
        ["notifier", "result"],
        registry=registry,
    )


class Delivery:
    """Sends one notifier's alerts from its own thread, in order, once, across restarts."""

    def __init__(
        self,
        notifier: Notifier,
        state_dir: str | os.PathLike[str],
        counter: Counter,
        *,
        route: Route | None = None,
        backoff: Backoff | None = None,
        session: requests.Session | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] | None = None,
        rand: Callable[[], float] = random.random,
        wall: Callable[[], float] = time.time,
        max_bytes: int = MAX_BYTES,
        carried: Status | None = None,
    ) -> None:
        """Load the spool; `sleep` replaces the interruptible wait (tests); `carried`: the status of the
        queue this one replaces (a reload), whose failure and counts it continues; `start()` sends."""
        self.notifier = notifier
        self.route = route or Route()
        self.backoff = backoff or Backoff()
        self._counter, self._clock, self._sleep, self._rand, self._wall = counter, clock, sleep, rand, wall
        self._session = session or new_session()
        self._max_bytes = max(1, max_bytes)
        self._spool = Spool(state_dir, notifier.name)
        self._pending: list[Alert] = self._spool.load()
        self._sizes = [_size(alert) for alert in self._pending]
        self._inflight = 0
        self._cv = threading.Condition()
        self._stopping = self._handed_over = False
        self._thread: threading.Thread | None = None
        self._spool_error = ""
        self._last_send: float | None = None
        self._receiver = receiver(notifier.url)
        was = carried if carried is not None and carried.name == notifier.name else None
        self._failing_since = was.failing_since if was else None
        self._reason, self._detail = (was.reason, was.detail) if was else ("", "")
        self._delivered, self._dropped = (was.delivered, was.dropped) if was else (0, 0)
        self._last_drop = was.last_drop if was else ""

    @property
    def name(self) -> str:
        """The notifier's name."""
        return self.notifier.name

    def pending(self) -> list[Alert]:
        """A copy of the alerts not yet delivered, oldest first."""
        with self._cv:
            return list(self._pending)

    def status(self) -> Status:
        """Failing or not, why, and what waits."""
        with self._cv:
            return Status(
                self.name,
                self._receiver,
                len(self._pending),
                sum(self._sizes),
                self._failing_since,
                self._reason,
                self._detail,
                self._delivered,
                self._dropped,
                self._last_drop,
            )

    def start(self) -> None:
        """Start the sending thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"kvwatch-notify-{self.name}", daemon=True)
            self._thread.start()

    def enqueue(self, alert: Alert) -> None:
        """Queue and spool `alert`; beyond `max_bytes` the oldest waiting alert (not the one being sent,
        never the one just queued) is dropped, counted and logged."""
        with self._cv:
            self._pending.append(alert)
            self._sizes.append(_size(alert))
            while sum(self._sizes) > self._max_bytes and len(self._pending) > self._inflight + 1:
                dropped = self._pending.pop(self._inflight)
                self._sizes.pop(self._inflight)
                self._counter.labels(self.name, "dropped_overflow").inc()
                self._dropped, self._last_drop = self._dropped + 1, "overflow"
                log.warning(
                    "notifier %s: queue full (%d alerts, at most %d bytes): dropped the oldest waiting, %s",
                    self.name,
                    len(self._pending),
                    self._max_bytes,
                    _named(dropped),
                )
            self._save()
            self._cv.notify_all()

    def drain(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the queue to empty; True if it did."""
        with self._cv:
            self._cv.wait_for(lambda: not self._pending or self._stopping, timeout)
            return not self._pending

    def close(self, timeout: float = 5.0, *, handing_over: bool = False) -> bool:
        """Stop the thread (pending alerts stay spooled); True if it ended within `timeout`.
        `handing_over`: a successor (a reload's) loads the spool once this returns and owns it: a send
        still in flight then no longer rewrites it (its alert may be sent again, never lost)."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        with self._cv:
            self._handed_over = handing_over and self._thread.is_alive()
            return not self._thread.is_alive()

    def _run(self) -> None:
        """The sending loop: take the head, pace, send, then remove it or wait and retry."""
        attempt = 0
        while True:
            batch = self._next_batch()
            if batch is None or self._pause(self._pace_gap()):
                return
            self._last_send = self._clock()
            outcome = self._attempt(batch)
            self._counter.labels(self.name, outcome.result).inc()
            if outcome.kind == "retry":
                self._failed(outcome)
                if self._pause(self.backoff.wait(outcome, attempt, self._rand)):
                    return
                attempt += 1
                continue
            attempt = 0
            self._remove(batch, outcome)

    def _next_batch(self) -> list[Alert] | None:
        """Wait for pending alerts; the head batch, or None once stopping."""
        with self._cv:
            self._cv.wait_for(lambda: self._pending or self._stopping)
            if self._stopping:
                return None
            batch = self._pending[: max(1, self.notifier.max_batch)]
            self._inflight = len(batch)
            return batch

    def _pace_gap(self) -> float:
        """Seconds still to wait so sends stay `min_interval` apart."""
        if self._last_send is None:
            return 0.0
        return self.notifier.min_interval - (self._clock() - self._last_send)

    def _pause(self, seconds: float) -> bool:
        """Wait `seconds` (injected sleep, else interruptibly); True if stopping."""
        if seconds > 0:
            if self._sleep is not None:
                self._sleep(seconds)
            else:
                with self._cv:
                    self._cv.wait_for(lambda: self._stopping, seconds)
        with self._cv:
            return self._stopping

    def _attempt(self, batch: Sequence[Alert]) -> Outcome:
        """One send; a notifier bug drops the batch as `internal_error` (said), not a dead thread."""
        try:
            return self.notifier.send(batch, self._session)
        except Exception as exc:
            return Outcome("drop", "internal_error", None, type(exc).__name__)

    def _failed(self, outcome: Outcome) -> None:
        """A held attempt: one log line when the notifier starts failing or fails for another reason."""
        with self._cv:
            held = len(self._pending)
            if self._failing_since is None:
                self._failing_since = self._wall()
                log.warning(
                    "notifier %s: %s; holding %d alert(s), retrying with backoff",
                    self.name,
                    outcome.describe(),
                    held,
                )
            elif outcome.reason != self._reason:
                log.warning(
                    "notifier %s: failing for another reason: %s; holding %d alert(s)",
                    self.name,
                    outcome.describe(),
                    held,
                )
            self._reason, self._detail = outcome.reason, outcome.detail

    def _remove(self, batch: Sequence[Alert], outcome: Outcome) -> None:
        """Take the head batch off (delivered, or rejected: dropped and said) and rewrite the spool (unless
        a successor owns it: `close`); the receiver answered, so a failure ends here (one line)."""
        with self._cv:
            del self._pending[: len(batch)]
            del self._sizes[: len(batch)]
            self._inflight = 0
            if self._failing_since is not None:
                log.info(
                    "notifier %s: recovered after %s failing (%s); %d held alert(s) left to send",
                    self.name,
                    _duration(self._wall() - self._failing_since),
                    self._reason,
                    len(self._pending),
                )
                self._failing_since, self._reason, self._detail = None, "", ""
            if outcome.kind == "ok":
                self._delivered += len(batch)
            else:
                self._dropped, self._last_drop = self._dropped + len(batch), outcome.reason
                for alert in batch:
                    log.warning("notifier %s: %s; dropped %s", self.name, outcome.describe(), _named(alert))
            if not self._handed_over:
                self._save()
            self._cv.notify_all()

    def _save(self) -> None:
        """Rewrite the spool (lock held); if the disk refuses, log once and keep the queue in memory."""
        try:
            self._spool.save(self._pending)
        except OSError as exc:
            text = f"cannot write {self._spool.path}: {exc.strerror or type(exc).__name__}"
            if text != self._spool_error:
                log.error("notifier %s: %s; alerts are kept in memory only", self.name, text)
            self._spool_error = text
        else:
            self._spool_error = ""


def _size(alert: Alert) -> int:
    """An alert's bytes as the spool keeps it (what the queue's bound counts)."""
    return len(json.dumps(alert_to_record(alert), ensure_ascii=False).encode("utf-8"))


def _named(alert: Alert) -> str:
    """An alert as a log line names it: `pinned_cache_length firing (source=llama-a) 1a2b3c4d`."""
    labels = ", ".join(f"{k}={v}" for k, v in sorted(alert.labels.items()))
    return f"{alert.alert} {alert.state} ({labels}) {alert.fingerprint()}"


def _duration(seconds: float) -> str:
    """`42 s`, `12 min`, `3.5 h`."""
    if seconds < 120:
        return f"{max(0.0, seconds):.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def dispatch(
    deliveries: Iterable[Delivery], silences: Iterable[Silence], alert: Alert, now: float
) -> dict[str, Decision]:
    """Enqueue `alert` where the route takes it and no silence mutes it; the decisions."""
    silences = tuple(silences)
    decisions: dict[str, Decision] = {}
    for delivery in deliveries:
        decisions[delivery.name] = decide(delivery.route, silences, alert, now)
        if decisions[delivery.name] == "send":
            delivery.enqueue(alert)
    return decisions
