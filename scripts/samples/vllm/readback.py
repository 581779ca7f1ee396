"""Makes samples/vllm-offload-readback.log (+ .golden): vLLM 0.26.0, a healthy CPU offload that reads back."""

from __future__ import annotations

from scripts.samples.made import Made
from scripts.samples.vllm.offload import offload_sample


def make() -> list[Made]:
    """The sample and its README section."""
    name = "vllm-offload-readback.log"
    data, section = offload_sample(name, "0.26.0", 1001, "2026-08-18T01:15:00", docker=False, maker=__name__)
    return [Made(name, data, section)]
