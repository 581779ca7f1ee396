"""Every sample maker, engine by engine, and what they make together."""

from __future__ import annotations

from types import ModuleType

from scripts.samples import llamacpp, lmcache, lmstudio, ollama, sglang, usage, vllm, wild
from scripts.samples.made import Made

ENGINES: tuple[ModuleType, ...] = (vllm, llamacpp, usage, sglang, ollama, lmstudio, lmcache, wild)


def makers() -> list[ModuleType]:
    """The maker modules, each with a `make()` and a docstring naming the samples it makes."""
    return [maker for engine in ENGINES for maker in engine.MAKERS]


def make_all() -> list[Made]:
    """Every file the makers write into samples/ (engine READMEs written from their sections included)."""
    return [made for engine in ENGINES for made in engine.make()]
