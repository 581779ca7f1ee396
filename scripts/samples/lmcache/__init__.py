"""LMCache sample makers (inside vLLM's log, and an MP-mode server's own); samples/README.lmcache.md is
written from their sections."""

from __future__ import annotations

from types import ModuleType

from scripts.samples.lmcache import failed, healthy, mp, remote, sglang, tp2, write_only
from scripts.samples.made import Made

MAKERS: tuple[ModuleType, ...] = (healthy, write_only, failed, tp2, mp, remote, sglang)
HEAD = """# LMCache samples

Synthetic: every record is built from the format strings, `file:lineno` and colours of the LMCache
release it names (`pip download lmcache==X --no-deps`: lmcache/logging.py,
lmcache/integration/vllm/vllm_v1_adapter.py, lmcache/v1/cache_engine.py, MP mode's
lmcache/v1/multiprocess/modules/engine_driven_transfer.py and lmcache/v1/distributed/storage_manager.py,
the remote tier's lmcache/v1/storage_backend/connector/instrumented_connector.py and remote_backend.py,
SGLang's adapter lmcache/integration/sglang/sglang_adapter.py,
MP mode's lmcache/v1/mp_observability/subscribers/logging/extra_stats.py),
inside vLLM's log as the vLLM release it names prints it (see README.vllm.md), or SGLang's. Regenerate with
`python -m scripts.samples`.
"""


def make() -> list[Made]:
    """Every LMCache sample, then README.lmcache.md."""
    made = [m for maker in MAKERS for m in maker.make()]
    text = HEAD + "\n" + "\n\n".join(m.note for m in made) + "\n"
    return [*made, Made("README.lmcache.md", text.encode())]
