"""Synthetic Ollama sample makers, one module per release era (lines from Ollama's format strings)."""

from __future__ import annotations

from types import ModuleType

from scripts.samples.made import Made
from scripts.samples.ollama import bundled030, debug029, embedded01, mlx

MAKERS: tuple[ModuleType, ...] = (debug029, bundled030, mlx, embedded01)


def make() -> list[Made]:
    """Every synthetic Ollama sample."""
    return [m for maker in MAKERS for m in maker.make()]
