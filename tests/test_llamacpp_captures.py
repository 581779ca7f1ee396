"""Real llama-server captures (samples/llamacpp-*.log) against the client-side truth beside them.

Each `samples/llamacpp-NAME.truth.json` lists, in the order requests were sent, the `prompt_tokens`
and `cached_tokens` (usage.prompt_tokens_details.cached_tokens) of every response. The parser's
records, in time order, must carry the same numbers request by request.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpora import SAMPLES, truth_captures

from kvwatch.engines.llamacpp.events import LlamaRequest
from kvwatch.engines.llamacpp.parser import LlamacppParser, looks_like
from kvwatch.model import Event, LogLine, ServerRestart
from kvwatch.parsers.base import ParseError, ParserSettings

DERIVED = {"llamacpp-default-verbosity"}  # captured at the default -lv 3: counts are derived
CAPTURES = truth_captures()


def parse_capture(log: Path) -> tuple[list[Event], int]:
    """The events of a capture, and how many lines were parse errors."""
    parser = LlamacppParser(log.stem, ParserSettings())
    events: list[Event] = []
    errors = 0
    for text in log.read_text(encoding="utf-8", errors="replace").splitlines():
        result = parser.parse(LogLine(log.stem, text))
        if isinstance(result, ParseError):
            errors += 1
        elif result:
            events += result
    return events + parser.flush(), errors


def truth_of(log: Path) -> list[dict[str, object]]:
    """The client-side truth, one entry per request in the order sent."""
    truth = json.loads(log.with_suffix(".truth.json").read_text(encoding="utf-8"))
    assert isinstance(truth, list)
    return truth


def test_captures_exist() -> None:
    """The real captures are part of the project: none at all is a failure, not a pass."""
    assert [] != CAPTURES, f"no samples/llamacpp-*.log with a .truth.json in {SAMPLES}"


@pytest.mark.parametrize("log", CAPTURES or [SAMPLES / "missing"], ids=lambda p: p.stem)
def test_capture_matches_client_truth(log: Path) -> None:
    """Reused and prompt tokens equal the client's cached_tokens and prompt_tokens, per request."""
    assert log.exists(), "no capture"
    events, errors = parse_capture(log)
    records = [event for event in events if isinstance(event, LlamaRequest)]
    expected = [(t["prompt_tokens"], t["cached_tokens"]) for t in truth_of(log)]
    got = [(r.prompt_tokens, r.reused_tokens) for r in records]
    # a request the client cancelled got no usage back: its prompt is known (the retry's), its reuse
    # only from the log, which must still give one (the record made at its release, without timings)
    cancelled = [i for i, t in enumerate(truth_of(log)) if t.get("cancelled")]
    assert all(got[i][1] is not None for i in cancelled if i < len(got))
    got = [(p, None) if i in cancelled else (p, c) for i, (p, c) in enumerate(got)]
    derived = log.stem in DERIVED
    assert (0, [derived] * len(expected)) == (errors, [r.derived for r in records])
    if derived:
        # default verbosity: counts derived from the timings are exact for length stops, else +-1
        assert len(expected) == len(got)
        assert [] == [(e, g) for e, g in zip(expected, got, strict=True) if not _within_one(e, g)]
    else:
        assert expected == got


@pytest.mark.parametrize("log", CAPTURES or [SAMPLES / "missing"], ids=lambda p: p.stem)
def test_capture_is_one_run_in_time_order(log: Path) -> None:
    """Each capture is one server run: one ServerRestart first, then events in time order."""
    assert log.exists(), "no capture"
    events, _ = parse_capture(log)
    times = [event.time for event in events]
    assert ([ServerRestart], sorted(times)) == (
        [type(e) for e in events if isinstance(e, ServerRestart)],
        times,
    )
    assert isinstance(events[0], ServerRestart)


@pytest.mark.parametrize("log", CAPTURES or [SAMPLES / "missing"], ids=lambda p: p.stem)
def test_capture_is_detected(log: Path) -> None:
    """`--engine auto` recognises every capture from its first 64 KiB."""
    assert log.exists(), "no capture"
    with log.open("rb") as handle:
        sample = handle.read(65536).decode("utf-8", errors="replace")
    assert looks_like(sample)


def _within_one(expected: tuple[object, object], got: tuple[int | None, int | None]) -> bool:
    """Both counts known and each within 1 of the truth."""
    pairs = zip(expected, got, strict=True)
    return all(isinstance(e, int) and g is not None and abs(e - g) <= 1 for e, g in pairs)
