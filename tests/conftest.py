"""Shared test options: `--update-golden` rewrites samples/*.golden from the current behaviour."""

from __future__ import annotations

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
