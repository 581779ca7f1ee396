"""Gateway usage-log sample makers (#6), one module per gateway or response shape."""

from __future__ import annotations

from types import ModuleType

from scripts.samples.made import Made
from scripts.samples.usage import anthropic, newapi, openai

MAKERS: tuple[ModuleType, ...] = (openai, anthropic, newapi)


def make() -> list[Made]:
    """Every usage sample."""
    return [m for maker in MAKERS for m in maker.make()]
