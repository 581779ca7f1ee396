"""A runner's request read in one match (kvwatch.engines.llamacpp.whole) gives what Ollama's parse gives
line by line: on requests as b9452 writes them, one journald second each, and on many near misses
(a character changed, a line dropped, doubled or swapped, `memory_seq_rm` where no line has it, another
pick, a late or repeated task, a second ticking over mid-request, two runners), events, counts and the
parser's state alike; and the match reads most of the clean ones."""

# Lines of the formats are kept whole, however long.
# ruff: noqa: E501

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from test_parse_text import by_line, by_text

from kvwatch.engines.llamacpp import whole
from kvwatch.engines.llamacpp.parser import LlamacppParser

PREFIX = "Jun 10 09:00:{:02d} gpu-ws ollama[2231]: "
START = [
    'time=2026-06-10T09:00:00.000Z level=INFO source=routes.go:2008 msg="Listening on 127.0.0.1:11434 (version 0.30.2)"',
    'time=2026-06-10T09:00:00.000Z level=INFO source=llama_server.go:433 msg="starting llama-server" cmd="/usr/local/lib/ollama/llama-server --model /x/blobs/sha256-0123456789abcdef --port 39001 -np 2"',
    "srv    load_model: initializing, n_slots = 2, n_ctx_slot = 32768, kv_unified = 'false'",
    "slot   load_model: id  0 | task -1 | new slot, n_ctx = 32768",
    "slot   load_model: id  1 | task -1 | new slot, n_ctx = 32768",
    "srv  llama_server: server is listening on http://127.0.0.1:39001",
]
SECOND_RUNNER = 'time=2026-06-10T09:00:00.000Z level=INFO source=llama_server.go:433 msg="starting llama-server" cmd="/usr/local/lib/ollama/llama-server --model /x/blobs/sha256-fedcba9876543210 --port 39002 -np 2"'
ODD = [
    "memory_seq_rm",
    "memory_seq_rm [x, end)",
    ", memory_seq_rm [7, end)",
    " ",
    "  ",
    "x",
    "9",
    "é",
    "\u0663",
    "-",
    ".",
    "|",
    "]: ",
    "\t",
]


def request(rng: random.Random, slot: int, task: int, prompts: int = 9000) -> list[str]:
    """One request's lines as b9452 writes them (bench/gen_ollama.py's shape), picks of both kinds;
    prompts of up to `prompts` tokens (two lines per 2048 of them)."""
    prompt, cached, gen = rng.randint(100, prompts), rng.randint(0, 90), rng.randint(1, 500)
    tag = f"id  {slot} | task {task} |"
    pick = rng.choice(
        (
            "selected slot by LRU, t_last = -1",
            f"selected slot by LCP similarity, sim_best = 0.{rng.randint(0, 999):03d} (> 0.100 thold), f_keep = 1.000",
        )
    )
    lines = [
        f"slot get_availabl: id  {slot} | task -1 | {pick}",
        f"slot launch_slot_: {tag} processing task, is_child = 0",
        f"slot   operator(): {tag} new prompt, n_ctx_slot = 32768, n_keep = 0, task.n_tokens = {prompt}",
        f"slot   operator(): {tag} cached n_tokens = {cached}, memory_seq_rm [{cached}, end)",
    ]
    for done in range(cached + 2048, prompt, 2048):
        lines.append(
            f"slot print_timing: {tag} prompt processing, n_tokens = {done - cached:6d}, progress = 0.50, t =   1.00 s / 2400.00 tokens per second"
        )
        lines.append(f"slot   operator(): {tag} cached n_tokens = {done}, memory_seq_rm [{done}, end)")
    lines.append(
        f"slot   operator(): {tag} init sampler, took 0.05 ms, tokens: text = {prompt}, total = {prompt}"
    )
    lines += [
        f"slot print_timing: {tag} n_gen = {n}, t_gen = 2.63 s, 38.00 t/s" for n in range(100, gen, 110)
    ]
    lines += [
        f"slot print_timing: {tag} prompt eval time = {(prompt - cached) * 0.4:10.2f} ms / {prompt - cached:5d} tokens (    0.40 ms per token,  2500.00 tokens per second)",
        f"slot print_timing: {tag}        eval time = {gen * 26.3:10.2f} ms / {gen:5d} tokens (   26.30 ms per token,    38.02 tokens per second)",
        f"slot print_timing: {tag}       total time = {(prompt - cached) * 0.4 + gen * 26.3:10.2f} ms / {prompt + gen:5d} tokens",
        f"slot      release: {tag} stop processing: n_tokens = {prompt + gen - 1}, truncated = 0",
        *(
            (
                "srv  update_slots: all slots are idle",
                "srv  log_server_r: done request: POST /v1/chat/completions 127.0.0.1 200",
            )
            if rng.random() < 0.7
            else ()
        ),
        '[GIN] 2026/06/10 - 09:00:00 | 200 |     1.500000s |       127.0.0.1 | POST     "/api/chat"',
    ]
    return lines


def mutate(lines: list[str], rng: random.Random) -> list[str]:
    """A request's lines with one near miss."""
    out = list(lines)
    at = rng.randrange(len(out) - 3)  # (mostly the runner's lines)
    kind = rng.randrange(12)
    if kind >= 10:  # the lines after `stop processing`: a srv line a run does not take, a torn [GIN] line
        tail = rng.randrange(len(out) - 3, len(out))
        out[tail] = rng.choice(
            (
                "srv  update_slots: - found better prompt with f_keep = 0.500, sim = 0.900",
                "srv  load_model: initializing, n_slots = 2, n_ctx_slot = 32768",
                "srv  listening on http://127.0.0.1:39003",
                "srv ",
                '[GIN] 2026/06/10 - 09:00:00 | 2x0 |     1.500000s |       127.0.0.1 | POST     "/api/chat"',
                '[GIN] 2026/06/10 - 09:00:00 | 200 |     1.5q0000s |       127.0.0.1 | POST     "/api/chat"',
                "[GIN] 2026/06/10 - 09:00:00 | 200 |",
                out[tail].replace("/api/chat", "/api/tags"),
                out[tail] + " ",
            )
        )
    elif (
        kind >= 8
    ):  # `memory_seq_rm`, torn or whole, somewhere in a line (any line holding it is read as one)
        text = out[at]
        i = rng.randrange(text.find("|") + 1, len(text) + 1)
        out[at] = (
            text[:i] + rng.choice((" memory_seq_rm", " memory_seq_rm [7, end)", "memory_seq_rm [")) + text[i:]
        )
    elif kind == 0:  # a character or a few put in, taken out or changed
        text = out[at]
        i = rng.randrange(len(text) + 1)
        cut = rng.choice((0, 0, 1, 2))
        out[at] = text[:i] + rng.choice(("", *ODD)) + text[i + cut :]
    elif kind == 1:
        del out[at]
    elif kind == 2:
        out.insert(at, out[at])
    elif kind == 3:
        out[at], out[at + 1] = out[at + 1], out[at]
    elif kind == 4:  # a word swapped for one another message begins with
        words = (
            "new prompt",
            "stop processing",
            "total time",
            "eval time",
            "prompt eval time",
            "restored context checkpoint",
            "forcing full prompt",
            "kv cache rm [3, end)",
            "selected slot by",
        )
        out[at] = out[at].replace("| ", "| " + rng.choice(words) + " ", 1)
    elif kind == 5:
        out[at] = out[at].replace(
            "LCP similarity", rng.choice(("lcs similarity", "LCP similarity, f_", "id (0)"))
        )
    elif kind == 6:  # the message moved or emptied
        head, bar, _ = out[at].rpartition("|")
        out[at] = head + bar + rng.choice(("", " ", "  stop processing: n_tokens = 5"))
    else:
        out[at] = out[at].replace("memory_seq_rm [", "kv cache rm [").replace("n_tokens =", "n_past =")
    return out


def log(seed: int, *, damage: float, two: bool = False, prompts: int = 9000) -> list[str]:
    """Requests on two slots (tasks now and then repeated or going back), a journald second each (at
    times ticking over mid-request), some damaged; with `two`, a second runner started midway."""
    rng = random.Random(seed)
    second = 0
    out = [PREFIX.format(0) + line for line in START]
    task = 0
    for n in range(60):
        if two and n == 30:
            out.append(PREFIX.format(second) + SECOND_RUNNER)
        slot = rng.randrange(2)
        task = max(0, task + rng.choice((1, 1, 1, 2, 0, -1)))
        lines = request(rng, slot, task, prompts)
        if rng.random() < damage:
            lines = mutate(lines, rng)
        if rng.random() < 0.1:  # a bare timing header ends the second before: the pick forgets it
            out.append(PREFIX.format(second) + f"slot print_timing: id  {1 - slot} | task {task + 900} |")
        second = (second + 1) % 60
        tick = rng.randrange(len(lines) * 8)  # (mostly past the end: one second for the request)
        for i, line in enumerate(lines):
            if i == tick:
                second = (second + 1) % 60
            out.append(PREFIX.format(second) + line)
    return out


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Per request offered to the match: whether it was read (by Ollama's run of requests, which
    leaves one it does not read to `read`, or by `read`)."""
    seen: list[bool] = []
    real, request = whole.read, LlamacppParser.untagged_request

    def spy(*args: Any, **kwargs: Any) -> object:
        got = real(*args, **kwargs)
        seen.append(got is not None)
        return got

    def spy_request(*args: Any, **kwargs: Any) -> object:
        got = request(*args, **kwargs)
        if got is not None:
            seen.append(True)
        return got

    monkeypatch.setattr(whole, "read", spy)
    monkeypatch.setattr(LlamacppParser, "untagged_request", spy_request)
    return seen


@pytest.mark.parametrize("seed", range(40))
def test_whole_requests_are_parse_line_by_line(seed: int, taken: list[bool]) -> None:
    """Clean requests are read whole, damaged ones as the line-by-line path reads them: the same."""
    texts = log(seed, damage=0.5, two=seed % 4 == 3)
    want = by_line("ollama", texts)
    assert len(want[0].events) > 30
    assert by_text("ollama", texts, random.Random(seed)) == want
    assert sum(taken) >= 10 and not all(taken)


@pytest.mark.parametrize("make", [lambda seed: log(seed, damage=0.0)], ids=["clean"])
def test_clean_requests_are_read_whole(make: Callable[[int], list[str]], taken: list[bool]) -> None:
    """Without damage, most requests are read whole (not those over two seconds, of a task not after
    the slot's last one, or after a bare header in their second)."""
    texts = make(99)
    assert by_text("ollama", texts, random.Random(0)) == by_line("ollama", texts)
    assert sum(taken) > len(taken) * 0.4


@pytest.mark.parametrize("seed", range(6))
def test_long_requests(seed: int, taken: list[bool]) -> None:
    """Requests of 10 to 90 lines (the match's first try holds 24, its window 64), some damaged."""
    texts = log(seed, damage=0.3, two=seed % 2 == 1, prompts=80_000)
    assert by_text("ollama", texts, random.Random(seed)) == by_line("ollama", texts)
    assert sum(taken) >= 10 and not all(taken)
