"""Drive LMCache 0.5.6's own cache engine in-process, on the CPU, and let it log its real lines.

    python tests/real/lmcache_driver.py LOG          # with the LMCache venv's python

Every KV connector of LMCache needs CUDA (`torch.cuda.Stream requires CUDA support`), but its cache
engine runs with `MockGPUConnector` (no KV copies: the bookkeeping, chunking, hashing, the local_cpu
backend and the log lines are LMCache's own). The driver runs a scripted session: stores, full and
partial retrieves, a store of a prefix already held, misses; LMCache's logger writes to stderr, which
the caller sends to LOG. Stdout gets one JSON object per operation (the driver's own truth: what it
asked and what LMCache answered), for the test to compare with what kvwatch reads from the log.

Run it with `LMCACHE_TRACK_USAGE=false` (else LMCache tries to reach its usage-stats server) — set here.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("LMCACHE_TRACK_USAGE", "false")
os.environ.setdefault("LMCACHE_LOG_LEVEL", "INFO")

CHUNK = 64  # LMCache's chunk size here (256 by default): prompts of a few hundred tokens span chunks
LAYERS, HEADS, HEAD_DIM = 2, 4, 32  # the tiny model's shape (scripts/real/tiny_model.py)


def build():  # type: ignore[no-untyped-def]
    """An LMCacheEngine with MockGPUConnector and the local_cpu backend, post_init() done."""
    import torch
    from lmcache.v1.cache_engine import LMCacheEngineBuilder
    from lmcache.v1.config import LMCacheEngineConfig
    from lmcache.v1.gpu_connector.mock_gpu_connector import MockGPUConnector
    from lmcache.v1.metadata import LMCacheMetadata

    config = LMCacheEngineConfig.from_defaults(chunk_size=CHUNK, local_cpu=True, max_local_cpu_size=0.5)
    shape = (LAYERS, 2, CHUNK, HEADS, HEAD_DIM)
    metadata = LMCacheMetadata(
        model_name="tiny-llama",
        world_size=1,
        local_world_size=1,
        worker_id=0,
        local_worker_id=0,
        kv_dtype=torch.float16,
        kv_shape=shape,
        chunk_size=CHUNK,
    )
    engine = LMCacheEngineBuilder.get_or_create(
        "kvwatch-driver", config, metadata, MockGPUConnector(kv_shape=shape), lambda t, r: t, lambda o, r: o
    )
    engine.post_init()
    return engine


def main(argv: list[str]) -> int:
    """Run the scripted session; one JSON line per operation on stdout."""
    import torch

    engine = build()

    def tokens(seed: int, count: int) -> list[int]:
        gen = torch.Generator().manual_seed(seed)
        return torch.randint(0, 2048, (count,), generator=gen).tolist()

    def report(op: str, req: str, **values: object) -> None:
        print(json.dumps({"op": op, "req": req, **values}), flush=True)

    def store(req: str, toks: list[int], skip: int = 0) -> None:
        mask = None
        if skip:
            mask = torch.ones(len(toks), dtype=torch.bool)
            mask[:skip] = False
        engine.store(torch.tensor(toks), mask=mask, req_id=req)
        report("store", req, tokens=len(toks), offered=len(toks) - skip)

    def retrieve(req: str, toks: list[int]) -> None:
        hit = engine.lookup(torch.tensor(toks), lookup_id=req)
        got = engine.retrieve(torch.tensor(toks), req_id=req)
        report("retrieve", req, tokens=len(toks), lookup=int(hit), retrieved=int(got.sum().item()))

    system = tokens(1, 6 * CHUNK)  # a shared system prompt and tools: 384 tokens, 6 chunks
    turn1 = system + tokens(2, 100)
    turn2 = turn1 + tokens(3, 150)
    other = tokens(9, 300)
    # r1: cold; the first turn is stored whole (its last partial chunk too).
    retrieve("r1", turn1)
    store("r1", turn1)
    # r2: the next turn finds the first turn (a partial hit: the stored prefix of a longer prompt)...
    retrieve("r2", turn2)
    # ... and stores only what is new (vLLM passes the known prefix as a masked-out head).
    store("r2", turn2, skip=len(turn1) // CHUNK * CHUNK)
    # r3: the same turn again, fully held.
    retrieve("r3", turn2)
    # r4: a store of a prefix already held, offered whole: nothing new to write.
    store("r4", turn1)
    # r5: an unrelated prompt: a miss, then stored.
    retrieve("r5", other)
    store("r5", other)
    # r6: the shared system prompt with a new user turn: the system chunks hit, the rest does not.
    retrieve("r6", system + tokens(4, 200))
    engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
