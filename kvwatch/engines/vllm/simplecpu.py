"""SimpleCPUOffloadConnector's keys on vLLM's `KV Transfer metrics:` line: KV blocks, not bytes.

Read from vLLM 0.32.0, 0.33.0 and 0.34.0 (`vllm/v1/simple_kv_offload/metrics.py`, `manager.py`'s
`get_stats`, the same in all three): `reduce()` prints each counter's interval delta and each gauge's
last value as `name=V`, a labelled one as `name:('label',)=V`, and only what it has:

- `vllm:simple_kv_offload_save_outcomes_total:('stored',)`: blocks stored, one per boundary hand-off
  (the other outcomes, `dropped_cpu_full`, `skipped_already_cached`, ..., stored nothing);
- `vllm:simple_kv_offload_load_blocks_total`: blocks loaded back whose load completed (left out when
  none did); PR #57251's form labels it `:('completed',)` beside `:('issued',)`, read the same;
- `vllm:simple_kv_offload_pending_store_blocks`: blocks of stores queued or in flight at the drain, the
  only trace of the positional (full-block) stores, which 0.32-0.34 do not count as an outcome;
- `vllm:simple_kv_offload_used_blocks`: CPU blocks pinned by transfers (not the cached ones): not read.

A line's stores are the interval's `stored` hand-offs plus the blocks being stored when it was logged;
its loads are the completed load blocks, 0 when the key is left out.
"""

from __future__ import annotations

PREFIX = "vllm:simple_kv_offload_"
STORED = ("vllm:simple_kv_offload_save_outcomes_total:('stored',)",)
LOADED = (
    "vllm:simple_kv_offload_load_blocks_total",
    "vllm:simple_kv_offload_load_blocks_total:('completed',)",
)
PENDING = "vllm:simple_kv_offload_pending_store_blocks"


def read_blocks(values: dict[str, float]) -> tuple[int, int] | None:
    """(store_blocks, load_blocks) of a flattened KV Transfer payload (`Connector/key` under
    MultiConnector), or None when it holds no SimpleCPU key."""
    store = load = 0.0
    seen = False
    for key, value in values.items():
        tail = key.rpartition("/")[2] if "/" in key else key
        if not tail.startswith(PREFIX):
            continue
        seen = True
        if tail in STORED or tail == PENDING:
            store += value
        elif tail in LOADED:
            load += value
    return (int(store), int(load)) if seen else None
