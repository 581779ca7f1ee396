"""Synthetic LM Studio sample makers (framing from public pastes, cache lines from mlx-engine's source)."""

from __future__ import annotations

from types import ModuleType

from scripts.samples.lmstudio import full_width, llamacpp_runtime, mlx_text, mlx_vision, trimming, verbose_off
from scripts.samples.made import Made

MAKERS: tuple[ModuleType, ...] = (mlx_text, trimming, full_width, llamacpp_runtime, mlx_vision, verbose_off)


def make() -> list[Made]:
    """Every synthetic LM Studio sample."""
    return [m for maker in MAKERS for m in maker.make()]
