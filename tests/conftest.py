"""Shared test options and fixtures: `--update-golden` rewrites samples/*.golden from the current behaviour;
`registry` puts the engine registry back as shipped after a test that registers configured engines."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kvwatch.engines import ENGINES, register


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


@pytest.fixture
def registry() -> Iterator[None]:
    """The registry as shipped after the test (a config's engines are registered while it loads)."""
    saved = dict(ENGINES)
    yield
    for name in set(ENGINES) - set(saved):
        del ENGINES[name]
    for engine in saved.values():
        register(engine)
