"""Makes samples/llamacpp-synthetic-2025-08.log (+ .golden): V-2025-08, no prefix, SWA, two slots."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from scripts.samples.llamacpp.lines import SWA_URL, Log, Record, slot_line, srv_line, table, timing_lines
from scripts.samples.made import Made

# V-2025-08 = llama-cpp-python 0.3.16 `vendor/llama.cpp/tools/server/server.cpp`, `utils.hpp`,
# `common/log.cpp` (llama.cpp commit 4227c9be, <= 2025-08-15): no prefix, selection only at DBG,
# SWA checkpoints (3 per slot).

GEMMA_SWA = 1024  # gemma-3 sliding window
GEMMA_SWA_CELLS = 1536  # n_swa + n_ubatch
GEMMA_SWA_MIB_PER_CELL = 0.3125  # 40 SWA layers x 8 KV heads x 256 x 2 (K, V) x f16


@dataclass
class Slot08:
    """One V-2025-08 slot: its cached tokens and SWA checkpoints (pos_min, pos_max, MiB)."""

    cache: int = 0
    checkpoints: list[tuple[int, int, float]] = field(default_factory=list)


def make_2025_08() -> tuple[str, list[Record]]:
    """Two conversations (A: coding agent, B: review agent with tools) on two slots, interleaved.

    Healthy: every turn reuses the previous prompt + reply. B4 re-renders its system prompt (a date
    line near the top), so only 38 tokens match; the SWA memory cannot serve them and no SWA checkpoint
    starts early enough: `forcing full prompt re-processing (likely due to SWA, ...)`, n_past 0.
    """
    rng = random.Random(202508)
    log = Log(prefix=False)
    name = "llamacpp-synthetic-2025-08"
    records: list[Record] = []
    log.emit("I", srv_line("load_model", "loading model '/models/gemma-3-12b-it-Q4_K_M.gguf'"), 4000)
    log.emit("I", srv_line("init", "initializing slots, n_slots = 2"), 3_900_000)
    for sid in (0, 1):
        log.emit("I", slot_line("init", sid, -1, "new slot n_ctx_slot = 8192"), 40)
    log.raw("main: model loaded")
    log.raw("main: server is listening on http://127.0.0.1:8080 - starting the main loop")
    log.emit("I", srv_line("update_slots", "all slots are idle"), 60)

    slots = [Slot08(), Slot08()]
    task = 0
    prompts = {"A": 1187, "B": 1846}
    plan = [(conv, turn) for turn in range(1, 6) for conv in "AB"]
    for conv, turn in plan:
        sid = 0 if conv == "A" else 1
        slot = slots[sid]
        n_prompt = prompts[conv]
        n_gen = rng.randint(140, 420)
        log.tick(rng.randint(4_000_000, 20_000_000))  # the user reads and types
        log.emit("I", srv_line("params_from_", "Chat format: Content-only"), 800)
        log.emit("I", slot_line("launch_slot_", sid, task, "processing task"), 300)

        def sl(msg: str, lvl: str = "I", step: int = 40, sid: int = sid, task: int = task) -> None:
            log.emit(lvl, slot_line("update_slots", sid, task, msg), step)

        sl(f"new prompt, n_ctx_slot = 8192, n_keep = 0, n_prompt_tokens = {n_prompt}", step=900)
        n_past = slot.cache  # the whole cached prompt + reply is a prefix of the new prompt
        note = ""
        if conv == "B" and turn == 4:
            # re-rendered system prompt: the LCP ends at the date line
            n_past = 38
            pos_min = max(0, slot.cache - GEMMA_SWA_CELLS)
            sl(
                f"n_past = {n_past}, cache_tokens.size() = {slot.cache}, seq_id = {sid}, "
                f"pos_min = {pos_min}, n_swa = {GEMMA_SWA}",
                "W",
            )
            # no checkpoint with pos_min <= max(0, n_past - n_swa) = 0
            forcing = "forcing full prompt re-processing due to lack of cache data"
            sl(f"{forcing} (likely due to SWA, see {SWA_URL})", "W")
            n_past = 0
            slot.checkpoints.clear()
            note = "forced full re-processing (SWA)"
        reused = n_past
        # prompt processing: one `kv cache rm` + progress line per batch of n_batch = 2048
        pos = n_past
        t_prompt = 0.0
        while pos < n_prompt:
            chunk = min(2048, n_prompt - pos)
            sl(f"kv cache rm [{pos}, end)", step=60)
            pos += chunk
            sl(
                f"prompt processing progress, n_past = {pos}, n_tokens = {chunk}, "
                f"progress = {(pos - n_past) / n_prompt:f}"
            )
            if pos == n_prompt:
                sl(f"prompt done, n_past = {pos}, n_tokens = {chunk}", step=20)
            batch_ms = chunk / rng.uniform(1900.0, 2300.0) * 1000.0
            t_prompt += batch_ms
            log.tick(int(batch_ms * 1000))
        # SWA checkpoint of the processed prompt (made when the first token is sampled)
        pos_max = n_prompt - 1
        pos_min = max(0, n_prompt - GEMMA_SWA_CELLS)
        size = (pos_max - pos_min + 1) * GEMMA_SWA_MIB_PER_CELL
        if len(slot.checkpoints) >= 3:
            newest = slot.checkpoints[-1]  # V-2025-08 prints back() and erases front()
            sl(
                f"SWA checkpoint erase, pos_min = {newest[0]}, pos_max = {newest[1]}, "
                f"size = {newest[2]:.3f} MiB",
                "W",
            )
            slot.checkpoints.pop(0)
        slot.checkpoints.append((pos_min, pos_max, size))
        total = sum(c[2] for c in slot.checkpoints)
        sl(
            f"SWA checkpoint create, pos_min = {pos_min}, pos_max = {pos_max}, size = {size:.3f} MiB, "
            f"total = {len(slot.checkpoints)}/3 ({total:.3f} MiB)",
            "W",
        )
        t_gen = n_gen / rng.uniform(38.0, 44.0) * 1000.0
        log.tick(int(t_gen * 1000))
        stop = n_prompt + n_gen - 1
        # V-2025-08 calls release() before print_timings() (server.cpp, update_slots, stop condition)
        log.emit(
            "I", slot_line("release", sid, task, f"stop processing: n_past = {stop}, truncated = 0"), 200
        )
        log.emit(
            "I",
            slot_line(
                "print_timing",
                sid,
                task,
                "\n" + "\n".join(timing_lines(t_prompt, n_prompt - reused, t_gen, n_gen)),
            ),
            30,
        )
        log.emit("I", srv_line("update_slots", "all slots are idle"), 120)
        log.emit("I", srv_line("log_server_r", "request: POST /v1/chat/completions 127.0.0.1 200"), 400)
        label = f"{conv}{turn}: {note}" if note else f"{conv}{turn}"
        records.append(Record(name, sid, task, n_prompt, reused, "unknown", note=label))
        slot.cache = stop
        prompts[conv] = stop + 1 + rng.randint(40, 160)  # previous prompt + reply + the next user message
        if conv == "B" and turn == 3:
            prompts[conv] += 12  # B4's re-rendered system prompt is a little longer
        task += n_gen + 1
    return log.text(), records


NAME = "llamacpp-synthetic-2025-08.log"


NAME = "llamacpp-synthetic-2025-08.log"


def make() -> list[Made]:
    """The sample and its request table."""
    text, records = make_2025_08()
    return [Made(NAME, text.encode("utf-8"), table(NAME, text, records))]
