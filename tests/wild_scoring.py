"""Score kvwatch on the real excerpts in tests/wild/: figures right, failures alerted (see its README)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WILD = Path(__file__).resolve().parent / "wild"
HELDOUT = WILD / "heldout"


@dataclass
class Score:
    """Figures right out of checked, and the excerpts whose own lines show a failure that got no alert."""

    right: int = 0
    checked: int = 0
    wrong: list[str] = field(default_factory=list)
    unalerted: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.right / self.checked if self.checked else 1.0

    def summary(self, name: str) -> str:
        lines = [f"{name}: {self.right} of {self.checked} figures right ({100 * self.share:.1f}%)"]
        lines += [f"  wrong: {w}" for w in self.wrong]
        lines += [f"  no alert on a failure its lines show: {u}" for u in self.unalerted]
        return "\n".join(lines)


def excerpts(folder: Path) -> list[Path]:
    """The excerpt logs of one folder, sorted."""
    return sorted(folder.glob("*.log"))


def truth_of(log: Path) -> dict[str, Any]:
    """The hand-computed truth beside an excerpt."""
    truth: dict[str, Any] = json.loads(log.with_suffix(".truth.json").read_text())
    return truth


def observed(report: dict[str, Any], metric: str, labels: dict[str, str]) -> float | None:
    """The sum of a family's samples whose labels hold `labels`; None when no sample is there."""
    samples = [s for s in report["metrics"].get(metric, []) if labels.items() <= s["labels"].items()]
    return sum(s["value"] for s in samples) if samples else None


def score_one(log: Path, report: dict[str, Any], score: Score) -> None:
    """Add one excerpt's figures and alert check to `score`."""
    truth = truth_of(log)
    for fig in truth["figures"]:
        got = observed(report, fig["metric"], fig["labels"])
        want = fig["value"]
        score.checked += 1
        ok = got is not None and (got >= want if fig.get("at_least") else abs(got - want) < 1e-6)
        if got is None and want == 0 and not fig.get("at_least"):
            ok = False  # a zero must be read, not assumed: the family must be there
        if ok:
            score.right += 1
        else:
            score.wrong.append(f"{log.name} {fig['metric']}: want {want}, got {got}")
    fired = {a["alert"] for a in report["alerts"] if a["state"] == "firing"}
    if truth["lines_show_failure"] and not fired & set(truth["expected_alerts"]):
        score.unalerted.append(f"{log.name} (want {truth['expected_alerts']}, fired {sorted(fired)})")


def score_folder(folder: Path, replay: Callable[[Path], dict[str, Any]]) -> Score:
    """Replay every excerpt of `folder` with `replay` (a log -> its `--format json` report) and score it."""
    score = Score()
    for log in excerpts(folder):
        score_one(log, replay(log), score)
    return score
