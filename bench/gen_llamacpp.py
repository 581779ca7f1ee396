"""Generate a llama-server b11434 `-lv 4` log (stderr, `--log-prefix`) with the line mix of a real one.

The reference is bench/llamacpp-agent-mix.log, captured from the real b11434 llama-server
(scripts/llamacpp/capture_mix.py: two agents at once, six conversations growing turn by turn on two
slots, a long tool output every third turn, cleared two turns later); bench/llamacpp-mix.json holds
its line kinds and counts (bench/mix_llamacpp.py), and tests/test_bench_mix.py holds this generator
to those shares. Per request, as that server prints it: `conv_id`, `chat format`, one
`get_availabl` line per slot (checking sim / skipping), the pick (LRU, or LCP similarity), the host
prompt cache (save the slot's prompt or `already in the cache`, one `load` line per cached prompt,
`found better prompt` when one of the conversation's is cached, `cache state` and one line per cached
prompt), the sampler chain and its four tab-indented params, `processing task`, the other slot's idle
save, `new prompt`, one `memory_seq_rm` per 2048-token batch (the first gives the reused prefix),
`init sampler`, the four timing lines, `stop processing` and `all slots are idle` when none is busy.
Deterministic for a seed; every request started is finished.

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

SLOTS = 2
N_CTX = 4096
N_BATCH = 2048
AGENTS = 2  # clients sending at once, each going round its conversations
CONVERSATIONS = 3  # per agent
TURNS = 7  # a conversation's requests, then the agent starts a new one
LONG_EVERY = 3  # every third turn carries a long tool output, cleared two turns later
CACHE_PROMPTS = 7  # host prompt cache entries kept (the oldest goes silently)
HEAD = 11  # tokens every prompt shares (the chat template's start)
PP_TPS = 18000.0  # prompt tokens per second (the captured server's)
TG_TPS = 600.0  # generated tokens per second
N_GEN = 24  # max_tokens of the agents
SAMPLER = (
    "logits -> ?penalties -> ?dry -> ?top-n-sigma -> top-k -> ?typical -> top-p -> min-p -> "
    "?xtc -> temp-ext -> dist "
)
PARAMS = (
    "\trepeat_last_n = 64, repeat_penalty = 1.000, frequency_penalty = 0.000, presence_penalty = 0.000\n"
    "\tdry_multiplier = 0.000, dry_base = 1.750, dry_allowed_length = 2, dry_penalty_last_n = 64\n"
    "\ttop_k = 40, top_p = 0.950, min_p = 0.050, xtc_probability = 0.000, xtc_threshold = 0.100, "
    "typical_p = 1.000, top_n_sigma = -1.000, temp = 0.000\n"
    "\tmirostat = 0, mirostat_lr = 0.100, mirostat_ent = 5.000, adaptive_target = -1.000, "
    "adaptive_decay = 0.900\n"
)
MIB_PER_TOKEN = 0.0005


@dataclass
class Totals:
    """What the generator wrote (the bench checks kvwatch and mtail against each other)."""

    lines: int = 0
    bytes: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    reused_tokens: int = 0


@dataclass
class Conversation:
    """One agent conversation: its id, its history's length, where a long tool output starts."""

    ident: int
    tokens: int  # history after the last reply (the next prompt starts with it)
    turn: int = 0
    long_at: int | None = None  # prompt position of an uncleared long tool output


@dataclass
class Slot:
    """One slot: the conversation and tokens it holds, whether they are in the prompt cache."""

    conv: int | None = None
    tokens: int = 0
    saved: bool = True
    last_used: int = -1
    graphs: int = 0


@dataclass
class Entry:
    """A host prompt cache entry."""

    conv: int
    tokens: int
    addr: int


@dataclass
class Busy:
    """A request's time on its slot (µs)."""

    slot: int
    task: int
    start: int
    end: int


@dataclass
class Sim:
    """Discrete-event state: agents' next send times, slots, the prompt cache, lines pending by time."""

    rng: random.Random
    slots: list[Slot] = field(default_factory=lambda: [Slot() for _ in range(SLOTS)])
    cache: list[Entry] = field(default_factory=list)
    convs: list[list[Conversation]] = field(default_factory=list)
    ready: list[int] = field(default_factory=list)  # per agent: when it sends next (µs)
    next_conv: list[int] = field(default_factory=list)  # per agent: index of its next conversation
    busy: list[Busy] = field(default_factory=list)  # recent requests
    conv_id: int = 0
    task: int = 0
    addr: int = 0x55BA05B3EC10
    last_start: int = 0
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
        "system info: n_threads = 2, n_threads_batch = 2, total_threads = 2",
        "srv    load_model: loading model 'tiny-llama.gguf'",
        "print_info: n_swa = 0",
        "srv    load_model: prompt cache is enabled, size limit: 8192 MiB",
        "srv    load_model: use `--cache-ram 0` to disable the prompt cache",
        f"srv    load_model: initializing, n_slots = {SLOTS}, n_ctx_slot = {N_CTX}, kv_unified = 'false'",
        "srv  llama_server: listening on http://127.0.0.1:8080",
        "srv  update_slots: all slots are idle",
    ]
    return [f"{rel(10_000 + 1_500 * i)} I {text}\n" for i, text in enumerate(body)]


def new_conversation(sim: Sim) -> Conversation:
    """A conversation's first state: its system prompt and tools."""
    sim.conv_id += 1
    return Conversation(sim.conv_id, sim.rng.randrange(540, 600))


def start(sim: Sim) -> None:
    """The agents and their first conversations."""
    at = 200_000
    for _ in range(AGENTS):
        sim.convs.append([new_conversation(sim) for _ in range(CONVERSATIONS)])
        sim.ready.append(at)
        sim.next_conv.append(0)
        at += sim.rng.randrange(50, 400)


def prompt_of(sim: Sim, conv: Conversation) -> tuple[int, int]:
    """The next prompt of a conversation and the part of it its last one shares."""
    rng = sim.rng
    conv.turn += 1
    shared = conv.tokens - rng.randrange(2, 9)  # the reply's end-of-turn tokens are re-templated
    if conv.long_at is not None and conv.turn % LONG_EVERY == 2:
        shared = min(shared, conv.long_at)  # the client cleared the long tool output
        conv.tokens = conv.long_at + 12 + (conv.tokens - conv.long_at) % 64
        conv.long_at = None
    user = rng.randrange(30, 110)
    prompt = conv.tokens + user
    if conv.turn % LONG_EVERY == 0 and prompt + 2_900 < N_CTX - N_GEN:
        conv.long_at = conv.tokens
        prompt += rng.randrange(2_500, 2_800)
    return min(prompt, N_CTX - N_GEN - 1), max(HEAD, min(shared, prompt - 1))


def cached_lcp(sim: Sim, conv: Conversation, holder: int | None, tokens: int, shared: int) -> int:
    """Tokens of a cached prompt (of conversation `holder`) that the new prompt shares."""
    return min(tokens, shared) if holder == conv.ident else HEAD


def request(sim: Sim, totals: Totals) -> None:
    """The next request of the agent that sends first: its slot, the prompt cache, its lines."""
    rng = sim.rng
    agent = min(range(AGENTS), key=lambda i: (sim.ready[i], i))
    us = sim.ready[agent]
    sim.last_start = us
    convs = sim.convs[agent]
    index = sim.next_conv[agent]
    conv = convs[index]
    sim.next_conv[agent] = (index + 1) % CONVERSATIONS
    n_prompt, shared = prompt_of(sim, conv)
    busy = {b.slot: b for b in sim.busy if b.start <= us < b.end}
    lines: list[tuple[int, str]] = []
    at = us

    def put(text: str, step: int = 2) -> None:
        nonlocal at
        at += step
        lines.append((at, f"{rel(at)} I {text}\n"))

    def slot_line(slot: int, task: int, func: str, msg: str, step: int = 2) -> None:
        put(f"slot {func}: id {slot:2d} | task {task} | {msg}", step)

    def cache_state() -> None:
        mib = sum(e.tokens for e in sim.cache) * MIB_PER_TOKEN
        put(
            f"srv        update:  - cache state: {len(sim.cache)} prompts, {mib:.3f} MiB "
            f"(limits: 8192.000 MiB, 8192 tokens, {16_388_590 + 3 * len(sim.cache) * 5:d} est)"
        )
        for e in sim.cache:
            put(
                f"srv        update:    - prompt 0x{e.addr:x}: {e.tokens:8d} tokens, checkpoints:  0, "
                f"{e.tokens * MIB_PER_TOKEN:9.3f} MiB",
                1,
            )

    def save(slot: Slot) -> None:
        put(
            f"srv   prompt_save:  - saving prompt with length {slot.tokens}, total state size = "
            f"{slot.tokens * MIB_PER_TOKEN:.3f} MiB (draft: 0.000 MiB)",
            20,
        )
        if any(e.conv == slot.conv and e.tokens == slot.tokens for e in sim.cache):
            put("srv         alloc:  - prompt is already in the cache, skipping", 15)
        else:
            sim.addr += 0x50 + rng.randrange(0, 64) * 0x10
            sim.cache.append(Entry(slot.conv or 0, slot.tokens, sim.addr))
            del sim.cache[:-CACHE_PROMPTS]
        slot.saved = True

    put("srv  server_strea: conv_id= (empty=1)", rng.randrange(1500, 4000))
    put("srv    operator(): chat format: peg-native", rng.randrange(1200, 2500))
    best, best_sim = None, 0.0
    for i, slot in enumerate(sim.slots):
        if i in busy:
            slot_line(i, busy[i].task, "get_availabl", " - skipping, is_processing = 1")
        elif slot.conv is None:
            slot_line(i, -1, "get_availabl", " - skipping, slot is empty")
        else:
            lcp = cached_lcp(sim, conv, slot.conv, slot.tokens, shared)
            f_sim = lcp / n_prompt
            slot_line(i, -1, "get_availabl", f" - checking sim = {f_sim:.3f} ({lcp}/{n_prompt}) > 0.100")
            if f_sim > 0.1 and f_sim > best_sim:
                best, best_sim = i, f_sim
    free = [i for i in range(SLOTS) if i not in busy]
    chosen = sim.slots[best] if best is not None else None
    if best is not None and chosen is not None:
        lcp = cached_lcp(sim, conv, chosen.conv, chosen.tokens, shared)
        slot_line(
            best,
            -1,
            "get_availabl",
            f"selected slot by LCP similarity, f_sim_best = {best_sim:.3f} (> 0.100 thold), "
            f"f_keep = {lcp / chosen.tokens:.3f}",
        )
        pick = best
    else:
        pick = min(free, key=lambda i: (sim.slots[i].last_used, i))
        slot_line(pick, -1, "get_availabl", f"selected slot by LRU, t_last = {sim.slots[pick].last_used}")
    slot = sim.slots[pick]
    put("srv  get_availabl: updating prompt cache", 1)
    if slot.conv is None:
        keep, base_sim, reused = -1.0, 0.0, 0
    else:
        reused = cached_lcp(sim, conv, slot.conv, slot.tokens, shared)
        keep, base_sim = reused / slot.tokens, reused / n_prompt
        save(slot)
    put(
        f"srv          load:  - looking for better prompt, base f_keep = {keep:.3f}, f_sim = {base_sim:.3f}",
        15,
    )
    found: Entry | None = None
    found_sim = base_sim
    for e in sim.cache:
        lcp = cached_lcp(sim, conv, e.conv, e.tokens, shared)
        put(
            f"srv          load:    - prompt with length {e.tokens:7d}, lcp = {lcp:7d}, "
            f"f_keep = {lcp / e.tokens:.3f}, f_sim = {lcp / n_prompt:.3f}",
            14,
        )
        if lcp / n_prompt > found_sim:
            found, found_sim = e, lcp / n_prompt
    if found is not None:
        reused = cached_lcp(sim, conv, found.conv, found.tokens, shared)
        put(
            f"srv          load:  - found better prompt with f_keep = {reused / found.tokens:.3f}, "
            f"f_sim = {reused / n_prompt:.3f}",
            14,
        )
        sim.cache.remove(found)
    cache_state()
    put(f"srv  get_availabl: prompt cache update took {rng.uniform(0.03, 0.9):.2f} ms", 25)
    sim.task += 1
    task = sim.task
    slot_line(pick, -1, "launch_slot_", f"sampler chain: {SAMPLER}", 66)
    slot_line(pick, -1, "launch_slot_", "sampler params: ", 20)
    lines[-1] = (lines[-1][0], lines[-1][1] + PARAMS)
    slot_line(pick, task, "launch_slot_", "processing task, is_child = 0", 16)
    for i, other in enumerate(sim.slots):
        if i != pick and i not in busy and not other.saved:
            slot_line(i, -1, "process_sing", "saving idle slot to prompt cache", 1)
            save(other)
            cache_state()
    slot_line(
        pick,
        task,
        "  operator()",
        f"new prompt, n_ctx_slot = {N_CTX}, n_keep = 0, task.n_tokens = {n_prompt}",
        5,
    )
    done = reused
    pp_us = int((n_prompt - reused) / PP_TPS * 1e6 * rng.uniform(0.8, 1.3))
    first = True
    while first or done < n_prompt:
        slot_line(
            pick,
            task,
            "  operator()",
            f"cached n_tokens = {done}, memory_seq_rm [{done}, end)",
            3 if first else pp_us // 2,
        )
        first = False
        done += min(N_BATCH, n_prompt - done)
    slot_line(
        pick,
        task,
        "init_sampler",
        f"init sampler, took {rng.uniform(0.05, 0.2):.2f} ms, tokens: text = {n_prompt}, total = {n_prompt}",
        80,
    )
    pp = max(pp_us, 500) / 1e6
    tg = N_GEN / TG_TPS * rng.uniform(0.7, 1.6)
    end = at + int((pp + tg) * 1e6)
    new = n_prompt - reused
    slot.graphs += N_GEN - 1 + (0 if slot.graphs else -1)
    at = end
    slot_line(
        pick,
        task,
        "print_timing",
        f"prompt eval time = {pp * 1e3:10.2f} ms / {new:5d} tokens "
        f"({pp * 1e3 / new:8.2f} ms per token, {new / pp:8.2f} tokens per second)",
        0,
    )
    slot_line(
        pick,
        task,
        "print_timing",
        f"       eval time = {tg * 1e3:10.2f} ms / {N_GEN:5d} tokens "
        f"({tg * 1e3 / N_GEN:8.2f} ms per token, {N_GEN / tg:8.2f} tokens per second)",
        30,
    )
    slot_line(
        pick,
        task,
        "print_timing",
        f"      total time = {(pp + tg) * 1e3:10.2f} ms / {new + N_GEN:5d} tokens",
        18,
    )
    slot_line(pick, task, "print_timing", f"   graphs reused = {slot.graphs:10d}", 18)
    slot_line(
        pick, task, "     release", f"stop processing: n_tokens = {n_prompt + N_GEN - 1}, truncated = 0", 120
    )
    stop_at = at
    sim.busy.append(Busy(pick, task, us, stop_at))
    del sim.busy[:-8]
    conv.tokens = n_prompt + N_GEN
    slot.conv, slot.tokens, slot.saved, slot.last_used = (
        conv.ident,
        conv.tokens,
        False,
        3_719_000_000 + stop_at,
    )
    if conv.turn >= TURNS:
        convs[index] = new_conversation(sim)
    sim.task += N_GEN  # each generated token consumes a task id
    sim.ready[agent] = stop_at + rng.randrange(60_000, 160_000)
    totals.requests += 1
    totals.prompt_tokens += n_prompt
    totals.reused_tokens += reused
    for at_us, text in lines:
        sim.seq += 1
        heapq.heappush(sim.heap, (at_us, sim.seq, text))
    # `all slots are idle` follows the stop when no request runs then: decided once every request
    # that starts before it is placed (see idle_after)
    sim.seq += 1
    heapq.heappush(sim.heap, (stop_at + 26, sim.seq, f"?{task}"))


def idle_after(sim: Sim, at: int, task: str) -> str | None:
    """The `all slots are idle` line after request `task` stopped, if no other request runs then."""
    running = any(b.start <= at < b.end for b in sim.busy if str(b.task) != task)
    return None if running else f"{rel(at)} I srv  update_slots: all slots are idle\n"


def generate(out: TextIO, lines: int | None, size: int | None, seed: int) -> Totals:
    """Write the log; stops after the request that reaches the target, then drains every slot."""
    sim = Sim(random.Random(seed))
    start(sim)
    totals = Totals()
    block = startup()
    written = sum(map(len, block))
    totals.lines = len(block)

    def take(at: int, text: str) -> None:
        nonlocal written
        if text[0] == "?":
            idle = idle_after(sim, at, text[1:])
            if idle is None:
                return
            text = idle
        block.append(text)
        written += len(text)
        totals.lines += text.count("\n")

    while True:
        request(sim, totals)
        horizon = min(sim.ready)
        heap = sim.heap
        while heap and heap[0][0] < horizon:  # later requests start after this one
            at, _, text = heapq.heappop(heap)
            take(at, text)
        if len(block) >= 20_000:
            out.write("".join(block))
            block = []
        if (lines is not None and totals.lines >= lines) or (size is not None and written >= size):
            break
    while sim.heap:
        at, _, text = heapq.heappop(sim.heap)
        take(at, text)
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
