"""The live alert side: alert state kept across restarts, what to notify, and the notifier queues.

`<state_dir>/alerts.json` (written atomically) holds the AlertBook and, per alert identity, the last
notification and when it was sent (wall clock), so a restart neither re-sends nor forgets. Rules:
  - `decide` (alerts.py) says first / repeat (every REPEAT_INTERVAL while firing) / resolved;
  - on a first start (no state file), a transition whose event time is more than
    SUPPRESS_OLDER_THAN seconds behind the wall clock is recorded as if sent, not notified: reading
    an old log from its beginning must not page anyone about last week;
  - a restored firing alert is not resolved for RESTORE_GRACE seconds: the windows start empty after
    a restart, and a detector needs minutes of new lines to see the problem again.
An alert is sent with its source's own labels besides its own (`labels_of`: a pod's container's
namespace, pod, container, role and model), so Alertmanager can route and group by them; a repeat or
a resolution carries the labels its firing notification carried, even if the source's changed since
(a model named later), or Alertmanager would take it for another alert and never resolve the first.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from kvwatch.alerts import AlertBook, decide
from kvwatch.atomic import write_atomic
from kvwatch.config.types import Config, SilenceConfig
from kvwatch.model import Alert
from kvwatch.notify.delivery import Delivery, dispatch
from kvwatch.notify.routing import Silence

log = logging.getLogger("kvwatch.alerts")

REPEAT_INTERVAL = 4 * 3600.0
SUPPRESS_OLDER_THAN = 15 * 60.0
RESTORE_GRACE = 600.0
STATE_FILE = "alerts.json"


def silences_of(config: Config) -> tuple[Silence, ...]:
    """The `[[silence]]` entries as routing silences."""
    return tuple(_silence(s) for s in config.silences)


def _silence(s: SilenceConfig) -> Silence:
    """One silence (equality matchers)."""
    return Silence.equal(dict(s.matchers), s.ends_at, s.starts_at, s.comment)


class LiveAlerts:
    """Turns the pipeline's alert transitions into notifications, once each; keeps the state."""

    def __init__(
        self,
        state_dir: Path,
        book: AlertBook,
        repeat: float = REPEAT_INTERVAL,
        suppress_older_than: float = SUPPRESS_OLDER_THAN,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Keep state for `book` under `state_dir`; call `load()` before the first tick."""
        self.path = Path(state_dir) / STATE_FILE
        self.book, self.repeat, self.suppress, self.clock = book, repeat, suppress_older_than, clock
        self.deliveries: list[Delivery] = []
        self.silences: tuple[Silence, ...] = ()
        self.sent: dict[str, tuple[Alert, float]] = {}  # identity -> (last notified, wall time)
        #: A source's own labels, added to its alerts' (the daemon's: a pod's container's).
        self.labels_of: Callable[[str], Mapping[str, str]] = lambda source: {}
        self.first_start = True

    def load(self) -> None:
        """Restore the book and the notifications sent; a missing file means a first start."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self.book.load(data["book"])
            self.sent = {k: (Alert(**v["alert"]), float(v["at"])) for k, v in data["sent"].items()}
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("ignoring unreadable alert state %s: %s", self.path, exc)
            return
        self.first_start = False
        hold = self.clock() + RESTORE_GRACE
        for tracked in self.book.tracked.values():
            if tracked.alert.state == "firing":
                tracked.last_seen = max(tracked.last_seen, hold)

    def handle(self, transitions: Sequence[Alert]) -> None:
        """Notify what the transitions and the repeat interval call for; save if anything changed."""
        now = self.clock()
        changed = False
        for alert in [*transitions, *self.book.firing()]:
            key = alert.fingerprint()
            last, last_sent = self.sent.get(key, (None, None))
            reason = decide(last, last_sent, alert, now, self.repeat)
            if reason == "do-not-notify":
                continue
            changed = True
            sent = self._labelled(alert, last)
            self.sent[key] = (sent, now)
            if self.first_start and reason != "repeat" and now - alert.at > self.suppress:
                log.info(
                    "alert %s %s at %.0f: older than %.0f s at first start, not notified",
                    alert.state,
                    key,
                    alert.at,
                    self.suppress,
                )
                continue
            log.warning("alert %s %s (%s): %s", alert.state, key, reason, alert.summary)
            dispatch(self.deliveries, self.silences, sent, now)
        if changed:
            self.save()

    def _labelled(self, alert: Alert, last: Alert | None) -> Alert:
        """The alert with its source's labels: those its firing notification carried when it is a
        repeat or a resolution of one, else the source's now (its own labels win a clash)."""
        if last is not None and last.state == "firing":
            extra: Mapping[str, str] = last.labels
        else:
            extra = self.labels_of(alert.labels.get("source", ""))
        if not extra or extra.keys() <= alert.labels.keys():
            return alert
        return replace(alert, labels={**extra, **alert.labels})

    def forget(self, source: str) -> None:
        """A source left the config: its firing alerts resolve now (notified, reason `source_removed`)
        and nothing of its alerts is kept, so they leave /metrics and the state file."""
        resolved = self.book.remove(source, self.clock())
        self.handle(resolved)
        for key in [k for k, (alert, _) in self.sent.items() if alert.labels.get("source") == source]:
            del self.sent[key]
        self.save()

    def save(self) -> None:
        """Write the state atomically (temporary file, fsync, rename); log and go on if the disk refuses."""
        data: dict[str, Any] = {
            "book": self.book.dump(),
            "sent": {k: {"alert": asdict(a), "at": at} for k, (a, at) in sorted(self.sent.items())},
        }
        try:
            write_atomic(self.path, json.dumps(data, sort_keys=True, default=str))
        except OSError as exc:
            log.error("cannot save alert state %s: %s", self.path, exc.strerror or exc)
