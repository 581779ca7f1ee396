"""`kvwatch check-config` refuses detector settings outside their range (a count below 1, a share outside
0..1, a duration of 0 s), naming the field and the reason, and takes the values at the range's edges."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kvwatch.cli import main
from kvwatch.config.bounds import BOUNDS, WINDOW, Range
from kvwatch.detectors import DetectorSettings
from kvwatch.windows.window import HORIZON


def numeric_settings() -> dict[str, dict[str, float]]:
    """Every detector's numeric settings with their defaults."""
    out = {}
    for detector in dataclasses.fields(DetectorSettings):
        defaults = dataclasses.asdict(detector.default_factory())  # type: ignore[misc]
        out[detector.name] = {
            key: value
            for key, value in defaults.items()
            if isinstance(value, int | float) and not isinstance(value, bool)
        }
    return out


def ranged() -> list[tuple[str, str, Range]]:
    """(detector, setting, range) of every setting the table bounds."""
    return [(d, k, r) for d, keys in BOUNDS.items() for k, r in keys.items() if r is not None]


def check(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, list[str]]:
    """Run `kvwatch check-config` on a file holding `text`: its exit status and its problem lines."""
    path = tmp_path / "kv.toml"
    path.write_text(text)
    status = main(["check-config", str(path)])
    err = capsys.readouterr().err
    return status, [line.strip() for line in err.splitlines()[1:]]


def test_every_numeric_detector_setting_has_a_range_and_its_default_lies_in_it() -> None:
    """The table names exactly the detectors' numeric settings (a new one cannot slip past unchecked),
    and every default passes its range."""
    settings = numeric_settings()
    assert {d: sorted(keys) for d, keys in settings.items()} == {
        d: sorted(keys) for d, keys in BOUNDS.items()
    }
    for detector, key, bound in ranged():
        assert bound.problem(settings[detector][key]) is None, (detector, key)


def test_write_only_offload_min_intervals_0_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hole that was found: 0 busy intervals would judge an engine on no traffic at all."""
    status, problems = check(tmp_path, capsys, "[detectors.write_only_offload]\nmin_intervals = 0\n")
    assert (1, ["detectors.write_only_offload.min_intervals: must be at least 1 (a count; got 0)"]) == (
        status,
        problems,
    )


def outside(bound: Range) -> list[float]:
    """Values just outside `bound`: at or below its low end, above its high end."""
    values: list[float] = []
    if bound.low is not None:
        values.append(bound.low if bound.low_open else bound.low - 1)
        values.append(-5)
    if bound.high is not None:
        values.append(bound.high + 0.5)
    return sorted(set(values))


def edges(bound: Range) -> list[float]:
    """Values at the edges `bound` takes."""
    low = 0.0 if bound.low is None else bound.low
    values = [low + 0.01 if bound.low_open else low]
    if bound.high is not None:
        values.append(bound.high)
    return values


#: Settings a rule ties to a bounded one, set so that its edge passes alone.
TIED = {("prefix_reuse_broken", "requests"): "waste_requests = 1\n"}


def toml(value: float, default: object) -> str:
    """`value` as TOML, an integer where the setting is one."""
    return str(int(value)) if isinstance(default, int) and float(value).is_integer() else repr(float(value))


@pytest.mark.parametrize(("detector", "key", "bound"), ranged(), ids=[f"{d}.{k}" for d, k, _ in ranged()])
def test_a_setting_outside_its_range_is_refused_and_its_edges_are_taken(
    detector: str, key: str, bound: Range, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each bounded setting: values outside its range fail with the field, the rule and what it is;
    values at its edges pass (an integer setting only with integers)."""
    default = numeric_settings()[detector][key]
    for value in outside(bound):
        if isinstance(default, int) and not float(value).is_integer():
            continue
        status, problems = check(
            tmp_path, capsys, f"[detectors.{detector}]\n{key} = {toml(value, default)}\n"
        )
        got = int(value) if isinstance(default, int) else float(value)
        expected = f"detectors.{detector}.{key}: must be {bound.rule()} ({bound.what}; got {got:g})"
        assert (1, expected) == (status, problems[0])  # (a rule tied to it may follow: waste_requests)
    for edge in edges(bound):
        value = float(int(edge) + 1) if isinstance(default, int) and not float(edge).is_integer() else edge
        tied = TIED.get((detector, key), "")
        status, problems = check(
            tmp_path, capsys, f"[detectors.{detector}]\n{key} = {toml(value, default)}\n{tied}"
        )
        assert (0, []) == (status, problems), value


def test_an_alias_is_named_as_written_and_every_problem_is_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Problems name the detector as the file spells it (an alias too), all of them at once, beside the
    detector's own rules."""
    text = (
        "[detectors.pinned_cache]\nmin_share = 0\nmax_requests = 0\nconversation_requests = 1\n"
        "[detectors.hit_rate_low]\nthreshold = 1.2\nwindow = -60\n"
        "[detectors.usage_double_counting]\nmin_tracking = -0.5\ntolerance = 2\n"
    )
    status, problems = check(tmp_path, capsys, text)
    assert 1 == status
    assert [
        "detectors.pinned_cache.max_requests: must be at least 1 (a count; got 0)",
        "detectors.pinned_cache.min_share: must be more than 0 and at most 1 (a share; got 0)",
        "detectors.pinned_cache.conversation_requests: must be at least 2 (got 1)",
        "detectors.hit_rate_low.threshold: must be more than 0 and at most 1 (a share; got 1.2)",
        "detectors.hit_rate_low.window: must be more than 0 and at most 3600 "
        "(a look-back in seconds; windows keep an hour; got -60)",
        "detectors.usage_double_counting.min_tracking: must be more than 0 and at most 1 "
        "(a rank correlation; got -0.5)",
        "detectors.usage_double_counting.tolerance: must be from 0 to 1 (a share; got 2)",
    ] == problems


def test_a_window_longer_than_the_windows_keep_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A detector's look-back beyond the hour the windows keep would judge less than it says: refused."""
    assert WINDOW.high == HORIZON
    status, problems = check(tmp_path, capsys, "[detectors.hit_rate_gap]\nwindow = 7200\n")
    assert (
        1,
        [
            "detectors.hit_rate_gap.window: must be more than 0 and at most 3600"
            " (a look-back in seconds; windows keep an hour; got 7200)"
        ],
    ) == (status, problems)
