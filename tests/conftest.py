"""Shared test options: `--update-golden` rewrites samples/*.golden from the current behaviour."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kvwatch.replay import segmented


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add `--update-golden`."""
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite samples/*.golden from the current replay output (a behaviour change: say why)",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """Whether goldens are being rewritten."""
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    """Kill any `kvwatch run` a test started and did not stop (say, because an assert failed)."""
    yield
    import daemon_helpers

    while daemon_helpers.STARTED:
        daemon_helpers.STARTED.pop().kill()


# kvwatch.replay.segmented's fixtures (tests/test_segmented.py, tests/test_lmstudio_segmented.py)


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Segments of 64 KiB (the first ones too: no ramp), a 16 KiB stretch to rebuild the state, a 1 KiB
    head; records the segment at which each parse fell back to one go."""
    fallbacks: list[int] = []
    real = segmented._Job._rest

    def spy(job: segmented._Job, index: int, parser: object) -> object:
        fallbacks.append(index)
        return real(job, index, parser)

    monkeypatch.setattr(segmented, "MIN_SEGMENT", 64 << 10)
    monkeypatch.setattr(segmented, "MAX_SEGMENT", 64 << 10)
    monkeypatch.setattr(segmented, "WARM_UP", 16 << 10)
    monkeypatch.setattr(segmented, "HEAD", 1 << 10)
    monkeypatch.setattr(segmented, "RAMP", 0)
    monkeypatch.setattr(segmented._Job, "_rest", spy)
    monkeypatch.setattr(segmented, "cores", lambda: 2)
    return fallbacks


@pytest.fixture
def rounds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The rounds of workers started, each as the number of segments it has before it (a wrong guess
    starts a new round from the true state)."""
    started: list[int] = []
    real = segmented._Job.start

    def spy(job: segmented._Job) -> None:
        started.append(len(job.segments))
        real(job)

    monkeypatch.setattr(segmented._Job, "start", spy)
    return started


@pytest.fixture
def children(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Files of 64 KiB or more worked on in children (framed, parsed, or parsed in segments); the
    names of the children started, in order."""
    from kvwatch.replay import driver as replay
    from kvwatch.replay import forked

    names: list[str] = []
    real = forked.in_child

    def spy(work: object, name: str) -> object:
        names.append(name)
        return real(work, name)  # type: ignore[arg-type]

    monkeypatch.setattr(forked, "FORK_MIN_BYTES", 64 << 10)
    for module in (forked, replay, segmented):
        monkeypatch.setattr(module, "in_child", spy)
    return names
