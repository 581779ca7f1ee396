"""The synchronous core shared by the daemon and replay: events to metrics and observers.

No threads, no clock, no I/O: `Pipeline.apply(event)` feeds metrics and observers (detectors, the
replay summary) in event-time order; `Pipeline.tick(now)` is where detectors run on event time. The
stage before it, framed lines to events, is `kvwatch.parsers.run.SourceRun`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from kvwatch.alerts import AlertBook
from kvwatch.detectors import DetectorSettings, Memo, detect_all
from kvwatch.metrics import Metrics
from kvwatch.metrics.derived import AlertCollector, PinnedCollector
from kvwatch.model import Alert, Event, Finding
from kvwatch.windows.window import Windows

Observer = Callable[[Event], None]

#: Seconds of event time between detector runs (the daemon's scheduler ticks as often on the clock).
TICK = 10.0


class Pipeline:
    """Events to metrics, windows and observers; detectors and alerts tick on event time."""

    def __init__(
        self,
        metrics: Metrics,
        settings: DetectorSettings | None = None,
        observers: Iterable[Observer] = (),
        resolve_after: float = 120.0,
        tick_every: float = TICK,
    ) -> None:
        self.metrics = metrics
        self.settings = settings or DetectorSettings()
        self.observers = list(observers)
        self.windows = Windows()
        self.book = AlertBook(resolve_after)
        self.last_time: float | None = None
        self.tick_every = tick_every
        self.next_tick: float | None = None
        #: Findings decided outside the detectors (a probe's, by its name), part of every tick until replaced.
        self.held: dict[str, list[Finding]] = {}
        self.memo = Memo()
        # The last tick's findings: detect_all's (the memo returns that very list while they hold) and held.
        self._detected: list[Finding] | None = None
        self._held: list[Finding] = []
        metrics.registry.register(AlertCollector(self.book))
        metrics.registry.register(PinnedCollector(self.windows, lambda: self.settings.pinned_cache_length))

    def apply(self, event: Event) -> None:
        """Apply one event."""
        self.metrics.apply(event)
        self.windows.observe(event)
        for observe in self.observers:
            observe(event)
        time, last = event.time, self.last_time
        if last is None or time > last:
            self.last_time = time

    def feed(self, events: Iterable[Event]) -> list[Alert]:
        """advance() to each event's time, then apply() it, in turn; return the alert transitions."""
        alerts: list[Alert] = []
        due = self.next_tick  # (only advance moves it: nearly every event is due no tick)
        for event in events:
            if due is None or not event.time < due:
                alerts.extend(self.advance(event.time))
                due = self.next_tick
            self.apply(event)
        return alerts

    def forget(self, source: str) -> None:
        """Drop the series and windows of a source removed from the config (its alerts: LiveAlerts)."""
        self.metrics.forget(source)
        self.windows.forget(source)

    def advance(self, time: float) -> list[Alert]:
        """Run the detectors on every grid point up to `time`; call it before applying an event at `time`.

        The grid is every `tick_every` seconds of event time, as the daemon's scheduler ticks on the clock.
        Across a gap with no events, only time-dependent verdicts can change (resolve hysteresis,
        no_signal's silence), so after enough idle ticks to cover the longest of those the grid jumps to
        the event: a replay across months of silence costs a few ticks, not millions. A grid point whose
        tick would change nothing is left out (see `_quiet`).
        """
        if self.next_tick is None:
            # The grid sits on whole multiples of tick_every, so alert times read :00, :10, ...
            self.next_tick = (time // self.tick_every + 1) * self.tick_every
            return []
        if time < self.next_tick:  # nearly every event (replay calls this per event): no tick is due
            return []
        resolve, silence = self.book.resolve_after, self.settings.no_signal.silence
        limit = (silence if silence > resolve else resolve) / self.tick_every + 2  # (max(), without the call)
        alerts: list[Alert] = []
        idle = 0
        anywhere, inner = self._quiet()
        while time >= self.next_tick:
            if idle > limit:
                self.next_tick += (time - self.next_tick) // self.tick_every * self.tick_every
            following = self.next_tick + self.tick_every
            if following <= self.next_tick:  # (a time so large that floats hold no later grid point)
                alerts.extend(self.tick(self.next_tick))
                self.next_tick = math.inf
                break
            if not self.next_tick < (inner if idle and following <= time else anywhere):
                alerts.extend(self.tick(self.next_tick))
                if following <= time:  # (another grid point is due in this call)
                    anywhere, inner = self._quiet()
            self.next_tick = following
            idle += 1
        return alerts

    def _quiet(self) -> tuple[float, float]:
        """Until when a tick can be left out, anywhere and between others of one advance call: before
        then it would find what the last tick found (the memo says so) and fire or resolve nothing.
        When those findings hold an alert up, a tick would still note when it was last seen: then only
        one between others of a call (no event, no held finding comes between them) is left out, as
        the next one notes a later time anyway (-inf: none is)."""
        until = self.memo.holds_until(self.windows, self.settings)
        anywhere = until if self.book.idle() and not self.held and not self._held else -math.inf
        return anywhere, until if self.book.settled() else -math.inf

    def tick(self, now: float) -> list[Alert]:
        """Run the detectors at event time `now`; return the alert transitions."""
        detected = detect_all(self.windows, now, self.settings, self.memo)
        held = [finding for _, found in sorted(self.held.items()) for finding in found] if self.held else []
        if detected is self._detected and held == self._held:  # (the memo's: nothing changed since)
            return self.book.again(now)
        self._detected, self._held = detected, held
        return self.book.update(detected + held, now)
