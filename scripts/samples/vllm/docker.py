"""Makes samples/vllm-docker.log (+ .golden): the read-back offload server in docker json-file."""

from __future__ import annotations

from scripts.samples.made import Made
from scripts.samples.vllm.offload import offload_sample


def make() -> list[Made]:
    """The sample and its README section."""
    name = "vllm-docker.log"
    data, section = offload_sample(name, "0.26.0", 6006, "2026-08-19T06:40:00", docker=True, maker=__name__)
    return [Made(name, data, section)]
