"""Makes samples/llamacpp-2024-early.log and samples/llamacpp-2024-mid.log (+ .golden): llama.cpp's 2024 server."""

# Log lines are built whole from their format strings, however long.
# ruff: noqa: E501

from __future__ import annotations

import random

from scripts.samples.made import Made

# examples/server/server.cpp as vendored by llama-cpp-python 0.2.38 (LOG_TEE, `[%lu] ` timestamps) and
# 0.2.77 (utils.hpp server_log `%4s [%24s] %s |` + ordered_json tid, timestamp, then the call's keys).
START = 1709159700


def chat(seed: int, turns: int) -> list[tuple[int, int, int]]:
    """(prompt, cached, generated): each turn reuses all of the previous one."""
    rng = random.Random(seed)
    out, prompt, held = [], 420, 0
    for _ in range(turns):
        generated = rng.randint(40, 300)
        out.append((prompt, min(held, prompt), generated))
        held = prompt + generated
        prompt = held + rng.randint(30, 400)
    return out


def early() -> str:
    """Two slots, six turns each, early-2024 LOG_TEE lines."""
    t, out = START, []
    for turn in range(6):
        for slot, (prompt, cached, generated) in ((0, chat(1, 6)[turn]), (1, chat(2, 6)[turn])):
            t += 7
            task = turn * 2 + slot
            new = prompt - cached
            out += [
                f"[{t}] slot {slot} is processing [task id: {task}]",
                f"[{t}] slot {slot} : in cache: {cached} tokens | to process: {new} tokens",
                f"[{t}] slot {slot} : kv cache rm - [{cached}, end)",
                f"[{t + 2}] print_timings: prompt eval time = {new * 2.5:10.2f} ms / {new:5d} tokens ({2.5:8.2f} ms per token, {400:8.2f} tokens per second)",
                f"[{t + 2}] print_timings:        eval time = {generated * 30.0:10.2f} ms / {generated:5d} runs   ({30.0:8.2f} ms per token, {33.33:8.2f} tokens per second)",
                f"[{t + 2}] print_timings:       total time = {new * 2.5 + generated * 30.0:10.2f} ms",
                f"[{t + 2}] slot {slot} released ({prompt + generated} tokens in cache)",
            ]
    return "\n".join(out) + "\n"


def mid() -> str:
    """One slot, eight turns, mid-2024 server_log lines (llama.cpp's padded columns)."""
    t, out, tid = START + 8_000_000, [], '"140031219712000"'

    def log(function: str, msg: str, *pairs: tuple[str, object]) -> str:
        extra = "".join(f" {k}={v}" for k, v in pairs)
        return f"INFO [{function:>24}] {msg} | tid={tid} timestamp={t}{extra}"

    out.append(log("init", "initializing slots", ("n_slots", 1)))
    for task, (prompt, cached, generated) in enumerate(chat(3, 8)):
        t += 11
        ids = (("id_slot", 0), ("id_task", task))
        new = prompt - cached
        out += [
            log("launch_slot_with_task", "slot is processing task", *ids),
            log("update_slots", "kv cache rm [p0, end)", *ids, ("p0", cached)),
        ]
        t += 1
        ms = new * 2.5
        out.append(
            log(
                "print_timings",
                f"prompt eval time     = {ms:10.2f} ms / {new:5d} tokens ({2.5:8.2f} ms per token, {400.0:8.2f} tokens per second)",
                *ids,
                ("t_prompt_processing", ms),
                ("n_prompt_tokens_processed", new),
                ("t_token", 2.5),
                ("n_tokens_second", 400.0),
            )
        )
        out.append(
            log(
                "update_slots",
                "slot released",
                *ids,
                ("n_ctx", 4096),
                ("n_past", prompt + generated - 1),
                ("n_system_tokens", 0),
                ("n_cache_tokens", prompt + generated),
                ("truncated", "false"),
            )
        )
    return "\n".join(out) + "\n"


def make() -> list[Made]:
    """Both samples."""
    return [Made("llamacpp-2024-early.log", early().encode()), Made("llamacpp-2024-mid.log", mid().encode())]
