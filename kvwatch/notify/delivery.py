"""Delivery: a queue, a thread and a spool per notifier; no alert lost, repeated or reordered.

`enqueue` appends to the spool (written atomically) and returns; the notifier's thread sends the
head of the queue, paced by the notifier's `min_interval`. A retryable outcome keeps the alert at
the head and waits (its `Retry-After`, else exponential backoff); ok and permanent outcomes remove
it and rewrite the spool, so a restart resends exactly what was pending. A failing attempt is logged
only when its text changes (Alertmanager's habit). Waits use a Condition, so `close` is prompt.
Crash window: an alert the receiver accepted just before a crash, before the spool was rewritten, is
sent again after the restart.
"""

from __future__ import annotations

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
from kvwatch.notify.routing import Decision, Route, Silence, decide
from kvwatch.notify.spool import Spool

log = logging.getLogger(__name__)


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
        "Notification attempts by notifier and result (ok, retry, permanent_<reason>, dropped_overflow).",
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
        max_pending: int = 1000,
    ) -> None:
        """Load the spool; `sleep` replaces the interruptible wait (tests); `start()` sends."""
        self.notifier = notifier
        self.route = route or Route()
        self.backoff = backoff or Backoff()
        self._counter, self._clock, self._sleep, self._rand = counter, clock, sleep, rand
        self._session = session or new_session()
        self._max_pending = max(1, max_pending)
        self._spool = Spool(state_dir, notifier.name)
        self._pending: list[Alert] = self._spool.load()
        self._inflight = 0
        self._cv = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._last_error = ""
        self._spool_error = ""
        self._last_send: float | None = None

    @property
    def name(self) -> str:
        """The notifier's name."""
        return self.notifier.name

    def pending(self) -> list[Alert]:
        """A copy of the alerts not yet delivered, oldest first."""
        with self._cv:
            return list(self._pending)

    def start(self) -> None:
        """Start the sending thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"kvwatch-notify-{self.name}", daemon=True)
            self._thread.start()

    def enqueue(self, alert: Alert) -> None:
        """Queue and spool `alert`; beyond `max_pending` the oldest unsent alert is dropped."""
        with self._cv:
            self._pending.append(alert)
            if len(self._pending) > self._max_pending:
                dropped = self._pending.pop(self._inflight)
                self._counter.labels(self.name, "dropped_overflow").inc()
                log.warning("notifier %s: queue full, dropped %s", self.name, dropped.fingerprint())
            self._save()
            self._cv.notify_all()

    def drain(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the queue to empty; True if it did."""
        with self._cv:
            self._cv.wait_for(lambda: not self._pending or self._stopping, timeout)
            return not self._pending

    def close(self, timeout: float = 5.0) -> bool:
        """Stop the thread (pending alerts stay spooled); True if it ended within `timeout`."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

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
                self._note_failure(outcome, "will retry")
                if self._pause(self.backoff.wait(outcome, attempt, self._rand)):
                    return
                attempt += 1
                continue
            attempt = 0
            self._remove(len(batch))
            if outcome.kind == "permanent":
                self._note_failure(outcome, f"dropped {len(batch)} alert(s)")
            elif self._last_error:
                log.info("notifier %s: delivering again", self.name)
                self._last_error = ""

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
        """One send; a notifier bug becomes a permanent `internal_error`, not a dead thread."""
        try:
            return self.notifier.send(batch, self._session)
        except Exception as exc:
            return Outcome("permanent", "internal_error", None, type(exc).__name__)

    def _remove(self, count: int) -> None:
        """Drop the delivered head batch and rewrite the spool."""
        with self._cv:
            del self._pending[:count]
            self._inflight = 0
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

    def _note_failure(self, outcome: Outcome, then: str) -> None:
        """Log a failure only when its text differs from the previous one."""
        text = outcome.describe()
        if text != self._last_error:
            log.warning("notifier %s: %s; %s", self.name, text, then)
            self._last_error = text


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
