"""Which notifier hears which alert: per-notifier routes and maintenance silences, pure.

A `Route` limits a notifier to some alert names and a minimum severity. A `Silence` mutes the alerts
all of whose matchers match (`alertname` names the alert; other names are labels) between its start
and end. `decide` returns a named reason so the daemon can log or count why an alert was not sent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from kvwatch.model import Alert, Severity

SEVERITY_RANK: dict[str, int] = {"info": 0, "warning": 1, "critical": 2}
Decision = Literal["send", "not_routed", "below_severity", "silenced"]
Op = Literal["=", "!=", "=~"]
_OPS: dict[str, Op] = {"=": "=", "!=": "!=", "=~": "=~"}
_MATCHER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!=|=)\s*(.*?)\s*$")


@dataclass(frozen=True, slots=True)
class Matcher:
    """`name op value` with op `=`, `!=` or `=~` (a regex that must match the whole value)."""

    name: str
    op: Op
    value: str

    def matches(self, alert: Alert) -> bool:
        """Whether this matcher holds for `alert` (a missing label reads as the empty string)."""
        actual = alert.alert if self.name in ("alertname", "alert") else alert.labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        return re.fullmatch(self.value, actual) is not None


def parse_matcher(text: str) -> Matcher:
    """Parse `name=value`, `name!=value` or `name=~regex`; ValueError with the text if malformed."""
    found = _MATCHER.match(text)
    if found is None:
        raise ValueError(f"matcher {text!r}: expected name=value, name!=value or name=~regex")
    name, op, value = found.groups()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    if op == "=~":
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"matcher {text!r}: bad regex: {exc}") from None
    return Matcher(name, _OPS[op], value)


@dataclass(frozen=True, slots=True)
class Route:
    """A notifier's filter: alert names it takes (None: all) and the lowest severity it takes."""

    alerts: frozenset[str] | None = None
    min_severity: Severity = "info"


@dataclass(frozen=True, slots=True)
class Silence:
    """Mutes matching alerts from `starts_at` (None: always) until `ends_at`, epoch seconds."""

    matchers: tuple[Matcher, ...]
    ends_at: float
    starts_at: float | None = None
    comment: str = ""

    @classmethod
    def equal(
        cls, labels: Mapping[str, str], ends_at: float, starts_at: float | None = None, comment: str = ""
    ) -> Silence:
        """A silence of equality matchers, as `[[silence]]` tables give them (`alertname` = the alert)."""
        matchers = tuple(Matcher(name, "=", value) for name, value in sorted(labels.items()))
        return cls(matchers, ends_at, starts_at, comment)

    def active(self, now: float) -> bool:
        """Whether the silence is in force at `now`."""
        return (self.starts_at is None or self.starts_at <= now) and now < self.ends_at

    def mutes(self, alert: Alert, now: float) -> bool:
        """Whether the silence is in force and every matcher matches (no matchers mutes nothing)."""
        return bool(self.matchers) and self.active(now) and all(m.matches(alert) for m in self.matchers)


def routed(route: Route, alert: Alert) -> Decision:
    """`send` if the route takes the alert, else why not."""
    if route.alerts is not None and alert.alert not in route.alerts:
        return "not_routed"
    if SEVERITY_RANK[alert.severity] < SEVERITY_RANK[route.min_severity]:
        return "below_severity"
    return "send"


def decide(route: Route, silences: Iterable[Silence], alert: Alert, now: float) -> Decision:
    """Whether a notifier with `route` gets `alert` at `now`, given the silences; a named reason."""
    verdict = routed(route, alert)
    if verdict != "send":
        return verdict
    return "silenced" if any(s.mutes(alert, now) for s in silences) else "send"
