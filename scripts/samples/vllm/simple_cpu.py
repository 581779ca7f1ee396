"""Makes samples/vllm-simplecpu-write-only.log and samples/vllm-simplecpu-healthy.log (+ .golden)."""

from __future__ import annotations

import random
from pathlib import Path

from scripts.samples.made import Made

SAMPLES = Path(__file__).resolve().parents[3] / "samples"
#: The real 0.32.0 capture with SimpleCPU (samples/README.vllm-real.md): its lines up to the connector's
#: WORKER line are kept as they are; what follows it there is the CPU build's crash.
REAL = "vllm-real-offload-simple.log"
WORKER_LINE = "SimpleCPUOffloadConnector: role=WORKER"
API, CORE = "(APIServer pid=25584)", "(EngineCore pid=26429)"
# vllm 0.32.0: simple_cpu_offload_connector.py:153 (the connector's start line, once per role),
# v1/metrics/loggers.py:335 (stats), distributed/kv_transfer/kv_connector/v1/metrics.py:103 (`KV Transfer
# metrics: %s`, the items of SimpleCPUOffloadStats.reduce() as `k=v`, labelled keys `name:('label',)`).
SCHEDULER = (
    f"{CORE} INFO 12-05 12:34:27 [simple_cpu_offload_connector.py:153] SimpleCPUOffloadConnector: "
    "role=SCHEDULER, per_rank=1.00 GB, world_size=1, mode=eager, backend=cpu, disk=none"
)
UVICORN = ("INFO:     Started server process [25584]", "INFO:     Waiting for application startup.",
           "INFO:     Application startup complete.")  # fmt: skip
INTERVALS = 30
FIRST = 12 * 3600 + 35 * 60  # 12:35:00, the first stats line


def clock(seconds: int) -> str:
    """vLLM's `%m-%d %H:%M:%S` on the capture's day."""
    return f"12-05 {seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def traffic(healthy: bool) -> tuple[list[str], dict[str, int]]:
    """INTERVALS busy intervals of agent traffic: a stats line and a KV Transfer line each, in 0.32's
    words. Write-only: blocks go out, none come back, External 0.0%. Healthy: every third interval
    loads blocks back, and the External rate rises from the first load on."""
    rng = random.Random(3202 if healthy else 3201)
    lines: list[str] = []
    stored = loaded = external_hits = 0
    prefix, queries = 88.0, 0
    for k in range(INTERVALS):
        at = clock(FIRST + 10 * k)
        prompt, gen = rng.uniform(380.0, 920.0), rng.uniform(6.0, 14.0)
        prefix = min(92.0, max(84.0, prefix + rng.uniform(-0.8, 0.8)))
        load = 0
        if healthy and k % 3 == 2:
            load = rng.randint(18, 54)
            external_hits += load
        queries += 40
        external = 100.0 * min(1.0, external_hits * 128 / (queries * 4500)) if healthy else 0.0
        usage = rng.uniform(0.4, 3.5)
        lines.append(
            f"{API} INFO {at} [loggers.py:335] Engine 000: Avg prompt throughput: {prompt:.1f} tokens/s, "
            f"Avg generation throughput: {gen:.1f} tokens/s, Running: {rng.randint(1, 3)} reqs, Waiting: "
            f"0 reqs, CPU KV cache usage: {usage:.1f}%, Prefix cache hit rate: {prefix:.1f}%, External "
            f"prefix cache hit rate: {external:.1f}%"
        )
        pending = rng.randint(2, 9)
        used = pending + (load if load else 0)
        items = [
            f"vllm:simple_kv_offload_used_blocks={used}",
            f"vllm:simple_kv_offload_pending_store_blocks={pending}",
        ]
        skipped = rng.randint(20, 40)
        items.append(f"vllm:simple_kv_offload_save_outcomes_total:('skipped_already_cached',)={skipped}")
        if load:
            items.append(f"vllm:simple_kv_offload_load_blocks_total={load}")
        lines.append(f"{API} INFO {at} [metrics.py:103] KV Transfer metrics: " + ", ".join(items))
        stored += pending
        loaded += load
    return lines, {"store_blocks": stored, "load_blocks": loaded}


def sample(healthy: bool) -> tuple[str, dict[str, int]]:
    """The real startup, the scheduler's connector line, the API server's start, then the traffic."""
    real = (SAMPLES / REAL).read_text(encoding="utf-8").splitlines()
    cut = next(i for i, line in enumerate(real) if WORKER_LINE in line) + 1
    body, sums = traffic(healthy)
    return "".join(line + "\n" for line in [*real[:cut], SCHEDULER, *UVICORN, *body]), sums


SECTION = """## `vllm-simplecpu-write-only.log`, `vllm-simplecpu-healthy.log`

**Built from real lines and vLLM 0.32.0's source.** SimpleCPUOffloadConnector (`--kv-offloading-size 1`
with `VLLM_USE_SIMPLE_KV_OFFLOAD=1`) cannot run past its start on this CPU-only machine: the real
capture `vllm-real-offload-simple.log` (README.vllm-real.md) crashes right after its
`SimpleCPUOffloadConnector: role=WORKER, ...` line. Each sample keeps that capture's lines up to and
including that one, byte for byte, then goes on in 0.32.0's words: the scheduler role's line
(`simple_cpu_offload_connector.py:153`), uvicorn's start, and {n} intervals of 10 s, each with a stats
line (`loggers.py:335`, the CPU device label, `External prefix cache hit rate` as the connector's
lookups give it) and a `KV Transfer metrics:` line (`kv_connector/v1/metrics.py:103`) carrying
`SimpleCPUOffloadStats.reduce()`'s items (`vllm/v1/simple_kv_offload/metrics.py`, the same in 0.32.0,
0.33.0 and 0.34.0): the gauges `vllm:simple_kv_offload_used_blocks` and `..._pending_store_blocks`, the
counter `..._save_outcomes_total:('skipped_already_cached',)` and, when blocks were loaded back,
`..._load_blocks_total`. The tiny Llama stores only full blocks, which 0.32-0.34 count only while in
flight (`pending_store_blocks`); a hybrid model would add `save_outcomes_total:('stored',)`.

- write-only: no load key anywhere, External 0.0% on every line; blocks stored or being stored
  {ws}, loaded 0: fires `write_only_offload` (in blocks) once 24 busy intervals have passed;
- healthy: `load_blocks_total` every third interval ({hl} blocks in all), External above 0% from the
  first load on; stored or being stored {hs}: fires nothing.

Made by `scripts/samples/vllm/simple_cpu.py` (`python -m scripts.samples`).
"""


def make() -> list[Made]:
    """Both samples and their README section."""
    bad, bad_sums = sample(healthy=False)
    good, good_sums = sample(healthy=True)
    section = SECTION.format(
        n=INTERVALS, ws=bad_sums["store_blocks"], hs=good_sums["store_blocks"], hl=good_sums["load_blocks"]
    )
    return [
        Made("vllm-simplecpu-write-only.log", bad.encode("utf-8"), section),
        Made("vllm-simplecpu-healthy.log", good.encode("utf-8"), ""),
    ]
