"""vLLM sample makers, one module per scenario; samples/README.vllm.md is written from their sections."""

from __future__ import annotations

from types import ModuleType

from scripts.samples.made import Made
from scripts.samples.vllm import (
    aggregated,
    cpu_backend,
    docker,
    dp_ansi,
    multiconnector,
    offload_failures,
    readback,
    rotated,
    simple_cpu,
    v0,
    write_only,
)
from scripts.samples.vllm.readme import readme

#: In README.vllm.md's order.
MAKERS: tuple[ModuleType, ...] = (
    readback,
    write_only,
    dp_ansi,
    aggregated,
    v0,
    cpu_backend,
    docker,
    rotated,
    multiconnector,
    simple_cpu,
    offload_failures,
)


def make() -> list[Made]:
    """Every vLLM sample, then README.vllm.md."""
    made = [m for maker in MAKERS for m in maker.make()]
    return [*made, Made("README.vllm.md", readme([m.note for m in made]))]
