"""SGLang sample makers, built from the released packages' format strings (see samples/README.sglang.md)."""

from __future__ import annotations

from types import ModuleType

from scripts.samples.made import Made
from scripts.samples.sglang import families, problems, reshaped

MAKERS: tuple[ModuleType, ...] = (families, problems, reshaped)


def make() -> list[Made]:
    """Every SGLang sample."""
    return [m for maker in MAKERS for m in maker.make()]
