"""llama-server sample makers: one module per era that cannot be built here; two captures in a journal."""

from __future__ import annotations

from types import ModuleType

from scripts.samples.llamacpp import b9113, b9934, incident4, journal, v2025_08, y2024
from scripts.samples.made import Made

MAKERS: tuple[ModuleType, ...] = (v2025_08, incident4, b9113, b9934, y2024, journal)


def make() -> list[Made]:
    """Every synthetic llama-server sample."""
    return [m for maker in MAKERS for m in maker.make()]
