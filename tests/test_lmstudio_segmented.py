"""A big LM Studio log parsed in segments by several workers gives exactly what parsing it in one go
gives: the model labels handed out, the Verbose Logging facts and the record times carry across."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest
import segment_helpers
from segment_helpers import Outcome

from kvwatch import segmented
from kvwatch.engines.lmstudio.events import LmstudioCompletion
from kvwatch.engines.lmstudio.parser import MAX_MODELS, LmstudioParser
from kvwatch.model import Event
from kvwatch.parsers.base import ParserSettings
from kvwatch.sources import forked

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from gen_lmstudio import generate  # the bench's generator

_MODEL = re.compile(r"\[(?:qwen/qwen3-coder-30b|openai/gpt-oss-20b)\] Running chat completion")


def log(tmp_path: Path, name: str, mb: float = 0.6, models: int = 0) -> Path:
    """A generated LM Studio log; with `models`, each conversation on the next of that many models."""
    out = io.StringIO()
    generate(out, mb, seed=7)
    text = out.getvalue()
    if models:
        turn = iter(range(10**9))
        text = _MODEL.sub(lambda _: f"[m{next(turn) // 40 % models}] Running chat completion", text)
    path = tmp_path / name
    path.write_text(text)
    return path


def one_go(path: Path) -> Outcome:
    return segment_helpers.one_go("lmstudio", path, ParserSettings())


def in_segments(path: Path, workers: int = 2) -> Outcome:
    return segment_helpers.in_segments("lmstudio", path, ParserSettings(), workers)


def labels(events: list[Event]) -> set[str]:
    return {event.model for event in events if isinstance(event, LmstudioCompletion)}


def test_segments_agree_with_one_go_and_every_guess_holds(
    small: list[int], rounds: list[int], tmp_path: Path
) -> None:
    """The bench's line mix: every segment's guessed start state is the true one."""
    path = log(tmp_path, "lmstudio.log")
    expected = one_go(path)
    assert len(segmented.boundaries(str(path), 0, 2)) > 6 and len(expected[0]) > 1000
    assert expected == in_segments(path)
    assert [] == small and 1 == len(rounds)


def test_models_switched_within_the_label_bound_keep_the_guesses(
    small: list[int], rounds: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Conversations on six models in turn: a worker's guess misses labels handed out in segments it
    did not parse, which changes nothing while the labels stay within MAX_MODELS."""
    path = log(tmp_path, "six.log", models=6)
    expected = one_go(path)
    assert len(labels(expected[0])) == 6
    reconciled: list[bool] = []
    real = LmstudioParser.reconcile

    def spy(*args: object) -> object:
        reconciled.append(args[0] != args[1])
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(LmstudioParser, "reconcile", staticmethod(spy))
    assert expected == in_segments(path)
    assert [] == small and 1 == len(rounds)
    assert any(reconciled)  # (some guess lacked labels the truth had, and held)


def test_more_models_than_labels_fall_back_and_agree(
    small: list[int], rounds: list[int], tmp_path: Path
) -> None:
    """Twelve models: from the ninth on they are labelled "other", which a guess cannot know; the
    segments from a wrong guess on are parsed again from the true state, and the results are those
    of one go."""
    path = log(tmp_path, "twelve.log", models=12)
    expected = one_go(path)
    assert labels(expected[0]) == {f"m{n}" for n in range(MAX_MODELS)} | {"other"}
    assert expected == in_segments(path)
    assert len(rounds) > 1 or small  # (a new round of workers, or one child, after a wrong guess)


def test_verbose_logging_turned_on_midway_agrees(small: list[int], tmp_path: Path) -> None:
    """The first half without DEBUG records (no cache lines: `blind`), then Verbose Logging on: the
    fact and its clearing come once each, as in one go."""
    text = log(tmp_path, "all.log").read_text()
    half = text.index("  [INFO]\n [qwen", len(text) // 2) - 19
    quiet = re.sub(r"[^\n]* \[DEBUG\]\n [^\n]*\n", "", text[:half])
    path = tmp_path / "midway.log"
    path.write_text(quiet + text[half:])
    expected = one_go(path)
    facts = [(event.value, event.time) for event in expected[0] if type(event).__name__ == "EngineFact"]
    assert [value for value, _ in facts] == ["verbose_off", ""]
    assert expected == in_segments(path)


def test_reconcile_holds_only_within_the_label_bound() -> None:
    """`reconcile` keeps the true labels plus those the lines asked, and refuses past MAX_MODELS or
    when anything but the labels differs."""
    rest = (True, 5.0, False, "m1", True, "", 2, True)
    few = frozenset({"m0", "m1"})
    reconcile = LmstudioParser.reconcile
    assert reconcile((rest, few), (rest, frozenset({"m7"})), frozenset({"m1"}), (rest, few)) == (
        rest,
        frozenset({"m1", "m7"}),
    )
    many = frozenset(f"m{n}" for n in range(MAX_MODELS))
    assert reconcile((rest, few), (rest, many), frozenset({"x"}), (rest, few)) is None
    other = (*rest[:3], "m2", *rest[4:])
    assert reconcile((rest, few), (other, few), frozenset(), (rest, few)) is None


def test_a_dense_log_of_a_few_mb_is_parsed_in_a_child(
    small: list[int], children: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dense log (every line parsed) needs less size than others to be worked on in children: the
    replay's results are those of an inline one."""
    from kvwatch.detectors import DetectorSettings
    from kvwatch.output.exposition import golden_lines
    from kvwatch.replay import plan, replay

    path = str(log(tmp_path, "lmstudio.log"))
    vllm = str(Path(__file__).resolve().parents[1] / "samples" / "vllm-docker.log")

    def outcome() -> tuple[list[str], dict[str, tuple[int, int, int, int]]]:
        result = replay(plan([path, vllm], "auto", None), ParserSettings(now_year=2026), DetectorSettings())
        counts = {k: (c.lines, c.recognized, c.errors, c.truncated) for k, c in result.summary.counts.items()}
        return golden_lines(result.registry, result.alerts), counts

    monkeypatch.setattr(forked, "FORK_MIN_BYTES", 1 << 30)
    monkeypatch.setattr(forked, "DENSE_FORK_MIN_BYTES", 64 << 10)
    in_children = outcome()
    assert ["kvwatch-parser-0", "kvwatch-parser-1"] == children  # (the vLLM log, not dense: inline)
    children.clear()
    monkeypatch.setattr(forked, "DENSE_FORK_MIN_BYTES", 1 << 30)
    assert outcome() == in_children
    assert [] == children
