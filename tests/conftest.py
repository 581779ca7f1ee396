"""Shared test options: `--update-golden` rewrites samples/*.golden from the current behaviour."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


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
