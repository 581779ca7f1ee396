"""Routes and silences: which notifier gets which alert, as a table of pure decisions."""

from __future__ import annotations

import pytest
from notify_helpers import make_alert

from kvwatch.model import Alert
from kvwatch.notify.routing import Decision, Matcher, Route, Silence, decide, parse_matcher

NOW = 1000.0
ALERT = make_alert("write_only_offload", labels={"source": "vllm-a", "engine": "0"})


def silence(*matchers: str, ends_at: float = 2000.0, starts_at: float | None = None) -> Silence:
    """A silence from matcher strings."""
    return Silence(tuple(parse_matcher(m) for m in matchers), ends_at, starts_at)


@pytest.mark.parametrize(
    ("route", "silences", "alert", "expected"),
    [
        (Route(), [], ALERT, "send"),  # the default route takes everything
        (Route(alerts=frozenset({"pinned_cache_length"})), [], ALERT, "not_routed"),
        (Route(alerts=frozenset({"write_only_offload"})), [], ALERT, "send"),
        (Route(min_severity="critical"), [], ALERT, "below_severity"),  # warning < critical
        (Route(min_severity="warning"), [], ALERT, "send"),  # the minimum itself passes
        (Route(min_severity="warning"), [], make_alert(severity="info"), "below_severity"),
        (Route(), [silence("alertname=write_only_offload")], ALERT, "silenced"),
        (Route(), [silence("alert=write_only_offload", "source=vllm-a")], ALERT, "silenced"),
        (Route(), [silence("alertname=write_only_offload", "source=vllm-b")], ALERT, "send"),
        (Route(), [silence("source=~vllm-.*")], ALERT, "silenced"),  # regex, whole value
        (Route(), [silence("source=~vllm")], ALERT, "send"),  # partial regex matches nothing
        (Route(), [silence("source!=vllm-a")], ALERT, "send"),
        (Route(), [silence("model=")], ALERT, "silenced"),  # a missing label reads as ""
        (Route(), [silence("source=vllm-a", ends_at=NOW)], ALERT, "send"),  # ended (end excluded)
        (Route(), [silence("source=vllm-a", starts_at=NOW + 1)], ALERT, "send"),  # not yet begun
        (Route(), [silence("source=vllm-a", starts_at=NOW)], ALERT, "silenced"),  # start included
        (Route(), [Silence((), ends_at=2000.0)], ALERT, "send"),  # no matchers mutes nothing
        # a [[silence]] table's label map: equality on every entry
        (
            Route(),
            [Silence.equal({"alertname": "write_only_offload", "engine": "0"}, 2000.0)],
            ALERT,
            "silenced",
        ),
        (Route(), [Silence.equal({"alertname": "write_only_offload", "engine": "1"}, 2000.0)], ALERT, "send"),
        # filtering comes before silencing: the reason names the route
        (Route(min_severity="critical"), [silence("source=vllm-a")], ALERT, "below_severity"),
    ],
)
def test_decide(route: Route, silences: list[Silence], alert: Alert, expected: Decision) -> None:
    """A route's names and minimum severity, then active silences, decide whether to send."""
    assert expected == decide(route, silences, alert, NOW)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("alertname=pinned_cache_length", Matcher("alertname", "=", "pinned_cache_length")),
        (' source = "vllm a" ', Matcher("source", "=", "vllm a")),
        ("source!=x", Matcher("source", "!=", "x")),
        ("entry=~gw-.*", Matcher("entry", "=~", "gw-.*")),
        ("model=", Matcher("model", "=", "")),
    ],
)
def test_parse_matcher(text: str, expected: Matcher) -> None:
    """Matchers read name, operator and value; double quotes around the value are dropped."""
    assert expected == parse_matcher(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("source", "matcher 'source': expected name=value, name!=value or name=~regex"),
        ("=x", "matcher '=x': expected name=value, name!=value or name=~regex"),
        (
            "source=~(",
            "matcher 'source=~(': bad regex: missing ), unterminated subpattern at position 0",
        ),
    ],
)
def test_parse_matcher_errors(text: str, message: str) -> None:
    """A malformed matcher is refused with a sentence naming it."""
    with pytest.raises(ValueError) as error:
        parse_matcher(text)
    assert message == str(error.value)
