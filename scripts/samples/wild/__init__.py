"""Samples of the line classes first read from public excerpts: tests/wild's real lines as samples."""

from __future__ import annotations

from types import ModuleType

from scripts.samples.made import Made
from scripts.samples.wild import excerpts

MAKERS: tuple[ModuleType, ...] = (excerpts,)


def make() -> list[Made]:
    """Every such sample, then samples/README.wild.md."""
    return excerpts.make()
