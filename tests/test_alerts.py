"""Alert lifecycle: identity, hysteresis, repeat decisions, persistence."""

from __future__ import annotations

import pytest

from kvwatch.alerts import AlertBook, decide
from kvwatch.model import Alert, Finding


def finding(source: str = "v", summary: str = "s") -> Finding:
    """A write_only_offload finding for a source."""
    return Finding(
        "write_only_offload", (("source", source), ("engine", "0")), "warning", summary, "c", "f", {"n": 1}
    )


def test_fires_once_and_keeps_its_firing_time() -> None:
    """A finding fires at once; seeing it again is no new transition but refreshes the text."""
    book = AlertBook(resolve_after=60)
    first = book.update([finding()], 100.0)
    again = book.update([finding(summary="newer")], 110.0)
    assert (["firing"], [], 100.0, "newer") == (
        [a.state for a in first],
        again,
        book.firing()[0].at,
        book.firing()[0].summary,
    )


def test_resolves_only_after_the_hysteresis() -> None:
    """A missing finding resolves only once absent for resolve_after seconds."""
    book = AlertBook(resolve_after=60)
    book.update([finding()], 100.0)
    assert [] == book.update([], 130.0)
    assert [] == book.update([finding()], 140.0)
    assert [] == book.update([], 190.0)
    (resolved,) = book.update([], 200.0)
    assert ("resolved", 200.0) == (resolved.state, resolved.at)
    assert ["firing"] == [a.state for a in book.update([finding()], 300.0)]


def test_identity_is_name_plus_labels() -> None:
    """Two sources give two alerts."""
    book = AlertBook()
    assert 2 == len(book.update([finding("a"), finding("b")], 1.0))


def test_dump_and_load_round_trip() -> None:
    """State persisted and restored gives the same firing alerts (a restart forgets nothing)."""
    book = AlertBook()
    book.update([finding()], 5.0)
    other = AlertBook()
    other.load(book.dump())
    assert book.firing() == other.firing()
    assert [] == other.update([finding()], 6.0)


def alert(state: str) -> Alert:
    """An alert in a state."""
    return Alert("a", {"source": "v"}, "warning", state, 0.0, "s", "c", "f", {})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("last", "last_sent", "current", "now", "expected"),
    [
        (None, None, "firing", 0.0, "first"),  # never notified
        ("firing", 0.0, "firing", 100.0, "do-not-notify"),  # within the repeat interval
        ("firing", 0.0, "firing", 4000.0, "repeat"),  # repeat interval passed
        ("firing", 0.0, "resolved", 10.0, "resolved"),  # resolution is always told
        (None, None, "resolved", 10.0, "do-not-notify"),  # resolved before it was ever sent
        ("resolved", 0.0, "firing", 10.0, "first"),  # fires again after resolving
    ],
)
def test_decide(last: str | None, last_sent: float | None, current: str, now: float, expected: str) -> None:
    """The dedup decision table."""
    assert expected == decide(alert(last) if last else None, last_sent, alert(current), now, repeat=3600.0)
