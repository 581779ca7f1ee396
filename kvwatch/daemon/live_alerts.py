"""The live alert side: alert state kept across restarts, what to notify, and the notifier queues.

`<state_dir>/alerts.json` (written atomically) holds the AlertBook and, per alert identity, the last
notification and when it was sent (wall clock), so a restart neither re-sends nor forgets. Rules:
  - `decide` (alerts.py) says first / repeat (every REPEAT_INTERVAL while firing) / resolved;
  - on a first start (no state file), a transition whose event time is more than
    SUPPRESS_OLDER_THAN seconds behind the wall clock is recorded as if sent, not notified: reading
    an old log from its beginning must not page anyone about last week;
  - a restored firing alert is not resolved for RESTORE_GRACE seconds: the windows start empty after
    a restart, and a detector needs minutes of new lines to see the problem again.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
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
            self.sent[key] = (alert, now)
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
            dispatch(self.deliveries, self.silences, alert, now)
        if changed:
            self.save()

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
