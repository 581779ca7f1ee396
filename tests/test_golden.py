"""Every sample log replays to its golden: `samples/NAME.log` -> `samples/NAME.golden`.

Goldens are `kvwatch replay --format golden --year 2026 FILE`: the sorted kvwatch_* samples, then one
line per alert transition. `pytest --update-golden` rewrites them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from corpora import sample_logs

from kvwatch.cli import main
from kvwatch.replay.files import source_name


def golden_of(log: Path) -> Path:
    """`samples/vllm-rotated.log.1.gz` -> `samples/vllm-rotated.golden`."""
    return log.with_name(source_name(log.name) + ".golden")


def test_samples_exist() -> None:
    """An empty samples/ fails instead of passing vacuously."""
    assert len(sample_logs()) >= 7


@pytest.mark.parametrize("log", sample_logs(), ids=lambda p: p.name)
def test_sample_matches_golden(log: Path, update_golden: bool, capsys: pytest.CaptureFixture[str]) -> None:
    """Replaying the sample gives exactly its golden."""
    assert 0 == main(["replay", "--format", "golden", "--year", "2026", str(log)])
    actual = capsys.readouterr().out
    golden = golden_of(log)
    if update_golden:
        golden.write_text(actual)
    assert golden.exists(), f"{golden.name} missing: run pytest --update-golden"
    assert golden.read_text() == actual
