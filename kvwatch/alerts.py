"""Findings to alert transitions: identity, firing -> resolved with hysteresis, repeat decisions.

An alert's identity is its name plus its labels. A finding that appears fires at once (detectors hold
their own windows); a firing alert resolves only after its finding has been absent for `resolve_after`
seconds of event time, so a verdict that flickers at a threshold does not flap. `decide` is the
Alertmanager-style dedup: a pure function of the last notification, the alert and the clock.

One incident, one alert: a request alert of a source's only server carries no `server` label, and
once a second server names itself its findings do (kvwatch.windows.window). A finding of a server
whose alert fires under the other reading of its labels (with or without `server`) and that no other
finding of the tick names goes on as that alert, labels and all, until it resolves: no resolution and
new firing of the same problem when a second server shows up, or when the daemon restarts with empty
windows and finds it again before the second server speaks. An unlabelled alert gone on so names its
server in its evidence (`server`), so its repeats and its resolution say whose it is.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from kvwatch.model import Alert, Finding

Reason = Literal["first", "repeat", "resolved", "do-not-notify"]
#: The evidence `reason` of an alert resolved because its source left the config.
SOURCE_REMOVED = "source_removed"


@dataclass
class Tracked:
    """One alert identity's state."""

    alert: Alert
    last_seen: float
    server: str | None = None  # the server whose requests its findings judged (Finding.server)


def _alert(finding: Finding, now: float) -> Alert:
    return Alert(
        alert=finding.alert,
        labels=dict(finding.labels),
        severity=finding.severity,
        state="firing",
        at=now,
        summary=finding.summary,
        cause=finding.cause,
        fix=finding.fix,
        evidence=finding.evidence,
    )


class AlertBook:
    """Every alert identity seen, and whether it fires."""

    def __init__(self, resolve_after: float = 120.0) -> None:
        self.resolve_after = resolve_after
        self.tracked: dict[str, Tracked] = {}
        # The last update's findings and their identities, in order (None: unknown since a load or a
        # removal), and the oldest last_seen of the firing alerts they left out (None: there are none).
        self._findings: list[Finding] = []
        self._present: list[str] | None = []
        self._oldest: float | None = None

    def update(self, findings: list[Finding], now: float) -> list[Alert]:
        """Take the findings of one tick; return the transitions they cause, in a stable order."""
        transitions: list[Alert] = []
        present: list[str] = []
        fresh_alerts = [_alert(finding, now) for finding in findings]
        named = {alert.fingerprint() for alert in fresh_alerts}
        for finding, fresh in zip(findings, fresh_alerts, strict=True):
            key = fresh.fingerprint()
            known = self.tracked.get(key)
            if (known is None or known.alert.state == "resolved") and (
                finding.server or "server" in fresh.labels
            ):
                key, known = self._same_incident(finding, fresh, key, known, named)
            present.append(key)
            if known is None or known.alert.state == "resolved":
                self.tracked[key] = Tracked(fresh, now, finding.server or fresh.labels.get("server"))
                transitions.append(fresh)
            else:
                # Keep the firing time and the labels it fired with; refresh what the alert says (and
                # whose requests it is about, where its labels do not say: it went on from before a
                # second server spoke).
                labels, evidence = known.alert.labels, fresh.evidence
                if "server" in fresh.labels and "server" not in labels:
                    evidence = {**evidence, "server": fresh.labels["server"]}
                known.alert = replace(fresh, at=known.alert.at, labels=labels, evidence=evidence)
                known.last_seen = now
        self._findings, self._present = list(findings), present
        self._resolve(now, transitions)
        return transitions

    def _same_incident(
        self, finding: Finding, fresh: Alert, key: str, known: Tracked | None, named: set[str]
    ) -> tuple[str, Tracked | None]:
        """The identity a finding of a server goes on under: that of the alert firing for the same
        server under its labels with `server` added or taken away, unless a finding of this tick names
        it (one incident, one alert: see the module docstring); else its own."""
        labels = dict(fresh.labels)
        server = labels.pop("server", None) or finding.server
        if server is None:
            return key, known
        if "server" not in fresh.labels:
            labels["server"] = server
        other = replace(fresh, labels=labels).fingerprint()
        tracked = self.tracked.get(other)
        if tracked is None or tracked.alert.state != "firing" or other in named:
            return key, known
        if (tracked.server or tracked.alert.labels.get("server")) != server:
            return key, known
        named.add(other)  # (one finding goes on as it: another of the tick fires on its own)
        return other, tracked

    def again(self, now: float) -> list[Alert]:
        """`update` with the findings of the last update again (their alerts, already refreshed from
        them, stay as they are: only when they were seen moves)."""
        present = self._present
        if present is None:
            return self.update(self._findings, now)
        tracked = self.tracked
        for key in present:
            tracked[key].last_seen = now
        transitions: list[Alert] = []
        if self._oldest is not None and now - self._oldest >= self.resolve_after:
            self._resolve(now, transitions)
        return transitions

    def settled(self) -> bool:
        """Whether `again` resolves nothing, however late: no alert the last findings left out fires."""
        return self._present is not None and self._oldest is None

    def idle(self) -> bool:
        """Whether `again` changes nothing at all: settled, and the last findings were none."""
        return self._present is not None and not self._present and self._oldest is None

    def _resolve(self, now: float, transitions: list[Alert]) -> None:
        """Resolve the firing alerts absent from the last findings for `resolve_after`, into `transitions`."""
        present = set(self._present or ())
        oldest: float | None = None
        for key, known in sorted(self.tracked.items()):
            if key in present or known.alert.state != "firing":
                continue
            if now - known.last_seen >= self.resolve_after:
                known.alert = replace(known.alert, state="resolved", at=now)
                transitions.append(known.alert)
            elif oldest is None or known.last_seen < oldest:
                oldest = known.last_seen
        self._oldest = oldest

    def remove(self, source: str, now: float) -> list[Alert]:
        """Forget the alerts of a source removed from the config: the firing ones resolve at `now`, with
        `reason: source_removed` first in their evidence (what notifiers are told)."""
        transitions: list[Alert] = []
        for key, known in sorted(self.tracked.items()):
            if known.alert.labels.get("source") != source:
                continue
            del self.tracked[key]
            self._present = None
            if known.alert.state == "firing":
                evidence = {"reason": SOURCE_REMOVED, **known.alert.evidence}
                transitions.append(replace(known.alert, state="resolved", at=now, evidence=evidence))
        return transitions

    def sources(self) -> set[str]:
        """The sources named by the alerts tracked."""
        return {t.alert.labels["source"] for t in self.tracked.values() if "source" in t.alert.labels}

    def firing(self) -> list[Alert]:
        """The alerts firing now."""
        return [t.alert for _, t in sorted(self.tracked.items()) if t.alert.state == "firing"]

    def dump(self) -> dict[str, Any]:
        """A JSON-able snapshot (for the state directory)."""
        return {
            key: {"alert": asdict(t.alert), "last_seen": t.last_seen, "server": t.server}
            for key, t in sorted(self.tracked.items())
        }

    def load(self, data: dict[str, Any]) -> None:
        """Restore a snapshot written by `dump`."""
        self._present = None
        # (a state written before alerts kept their server has none: its labels say it where they can)
        self.tracked = {
            key: Tracked(Alert(**item["alert"]), float(item["last_seen"]), item.get("server"))
            for key, item in data.items()
        }


def decide(last: Alert | None, last_sent: float | None, current: Alert, now: float, repeat: float) -> Reason:
    """Whether to notify about `current`, given the last notification sent for its identity."""
    if current.state == "resolved":
        return "resolved" if last is not None and last.state == "firing" else "do-not-notify"
    if last is None or last.state == "resolved" or last_sent is None:
        return "first"
    return "repeat" if now - last_sent >= repeat else "do-not-notify"
