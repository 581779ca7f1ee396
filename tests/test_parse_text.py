"""The block paths of LM Studio and Ollama (`parse_text`, replay's inner loop on a dense plain file) give
exactly what `parse` gives line by line: events, recognised and refused lines, and the parser's state.

Held to it on the samples, on logs of the bench generators, and on many damaged variants of them (lines
swapped, dropped, repeated; torn lines, CRLF, ANSI escapes, unknown levels, continuation lines, other
characters than ASCII, restarts), cut into blocks at random (a cut may fall between a record's header
and its message); and through replay's framing (kvwatch.sources.framing.Block) with its counts.
"""

# Lines of the formats are kept whole, however long.
# ruff: noqa: E501

from __future__ import annotations

import io
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpora import sample_logs

from kvwatch.engines import make_parser
from kvwatch.model import Event, LogLine, SourceCounts
from kvwatch.parsers.base import BlockResult, ParseError, Parser, ParserSettings
from kvwatch.parsers.run import SourceRun
from kvwatch.sources.framing import Block, Framer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import gen_lmstudio  # noqa: E402
import gen_ollama  # noqa: E402

LMSTUDIO_ODD = [
    "2026-06-10 09:00:07 [DEBUG]",
    "2026-06-10 09:00:07  [TRACE]",
    "2026-06-10 09:00:07  [INFO]  ",
    "2026-02-30 10:00:00  [INFO]",
    "2026-06-10 08:00:00  [INFO]",  # the clock going back
    "2027-01-01 00:00:00  [WARN]",
    " [cache_wrapper][INFO]: Prompt cache: using 5/10 tokens from cache",
    " [cache_wrapper][INFO]: Prompt cache: using x/10 tokens from cache",
    " [qwen/qwen3-8b] Running chat completion on conversation with 3 messages.",
    " [qwen/qwen3-8b] Streaming response...",
    " [modèle/é] Running chat completion on conversation with 1 messages.",
    " [cache_wrapper][INFO]: Prompt cache: using 7/9 tokens from cache — déjà",
    " [cache_wrapper][INFO]: Trimmed 12 tokens from the prompt cache",
    " [cache_wrapper][INFO]: Tried to trim '5' tokens from the prompt cache, but it is not trimmable. Clearing the cache instead.",
    "Cache reuse summary: 939/939 of prompt (100%), 939 prefix, 0 non-prefix",
    "Total prompt tokens: 939",
    "Looking for non-prefix contiguous prompt sequences of size >= 256 to reuse from cache",
    "[2025-07-19 20:33:33][DEBUG] [cache_wrapper][INFO]: Prompt cache: using 3/4 tokens from cache",
    "[2025-07-19 20:33:34][INFO] [qwen/qwen3-8b] Running chat completion on conversation with 2 messages.",
    "\x1b[32m2026-06-10 09:00:08  [INFO]\x1b[0m",
    " [cache_wrapper][INFO]: Prompt cache: using 1/2 tokens from cache\r",
    "2026-06-10 09:00:09  [INFO]\r",
    " Finished streaming response",
    "no record",
    "",
    " ",
]

OLLAMA_ODD = [
    'Jun 10 09:00:00 gpu-ws ollama[2231]: time=2026-06-10T09:00:00.000Z level=INFO source=routes.go:2008 msg="Listening on 127.0.0.1:11434 (version 0.30.2)"',
    'Jun 10 10:00:00 gpu-ws ollama[2231]: time=2026-06-10T10:00:00.000Z level=INFO source=llama_server.go:433 msg="starting llama-server" cmd="/usr/local/lib/ollama/llama-server --model /x/blobs/sha256-0123456789abcdef --port 39555"',
    "Jun 10 10:00:01 gpu-ws ollama[2231]: slot   operator(): id  0 | task 7 | n_gen = 3",
    "Jun 10 10:00:01 gpu-ws ollama[2231]: slot   operator(): id  0 | task 7 |",
    "Jun 10 10:00:01 gpu-ws ollama[2231]: slot   operator(): id  0 | task 7 | cached n_tokens = 5, memory_seq_rm [zz, end)",
    "Jun 10 10:00:01 gpu-ws ollama[2231]: slot   operator(): id  x | task 7 | n_gen = 3",
    "Jun 10 10:00:01 gpu-ws ollama[2231]: slot   operator(): id  1 | task -1 | new slot, n_ctx = 32768",
    "Jun 10 10:00:01 gpu-ws ollama[2231]: srv  update_slots: all slots are idle",
    "Jun 10 08:59:59 gpu-ws ollama[2231]: slot print_timing: id  0 | task 3 | n_gen = 100, t_gen = 2.63 s, 38.00 t/s",
    "Foo 10 10:00:01 gpu-ws ollama[2231]: slot print_timing: id  0 | task 3 | n_gen = 100",
    "Jun 10 10:00:01 gpu-ws ollama[2231]: slot print_timing: id  0 | task 3 | n_gen = 100\r",
    "\x1b[1mJun 10 10:00:01 gpu-ws ollama[2231]: slot print_timing: id  0 | task 3 | n_gen = 1\x1b[0m",
    "slot print_timing: id  0 | task 3 | n_gen = 100, t_gen = 2.63 s, 38.00 t/s",
    'Jun 10 10:00:02 gpu-ws ollama[2231]: [GIN] 2026/06/10 - 10:00:02 | 200 |     1.5s |       127.0.0.1 | POST     "/api/chat"',
    "Jun 10 10:00:02 gpu-ws ollama[2231]: [GIN] torn",
    "Jun 10 10:00:02 gpu-ws ollama[2231]: slot   operator(): id  0 | task 3 | prompt processing, n_tokens = 5 — ünïcode",
    "Jun 10 10:00:02 gpu-ws ollama[2231]: ",
    "",
]


def lmstudio_log(seed: int) -> list[str]:
    """A small LM Studio log from the bench generator."""
    out = io.StringIO()
    gen_lmstudio.generate(out, 0.05, seed)
    return out.getvalue().splitlines()


def ollama_log(seed: int) -> list[str]:
    """A small Ollama log from the bench generator (two runners, two models)."""
    out = io.StringIO()
    gen_ollama.generate(out, 0.2, seed)
    return out.getvalue().splitlines()


def journald(texts: list[str], rng: random.Random, rate: float = 0.3) -> list[str]:
    """Lines as journald shows them (`Mon DD HH:MM:SS host ollama[PID]: `), a few to a second (the
    next second comes after a line at `rate`)."""
    second, out = 0, []
    for text in texts:
        second += rng.random() < rate
        out.append(
            f"Jun 10 {9 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d} gpu-ws ollama[2231]: {text}"
        )
    return out


def two_runners(seed: int, rate: float = 0.3) -> list[str]:
    """Two llama-server runners of Ollama 0.30 serving at once, their lines interleaved at random (and a
    line now and then again, late), under journald: which runner a slot line is for is told by tasks."""
    rng = random.Random(seed)
    head = [
        'time=2026-06-10T09:00:00.000Z level=INFO source=routes.go:2008 msg="Listening on 127.0.0.1:11434 (version 0.30.2)"'
    ]
    for n in (1, 2):  # each runner's start, then its own start-up lines
        head += [
            f'time=2026-06-10T09:00:0{n}.000Z level=INFO source=llama_server.go:433 msg="starting llama-server" cmd="/usr/local/lib/ollama/llama-server --model /x/blobs/sha256-{n}123456789abcdef --port 3910{n}"',
            "srv    load_model: initializing, n_slots = 1, n_ctx_slot = 32768, kv_unified = 'false'",
            "slot   load_model: id  0 | task -1 | new slot, n_ctx = 32768",
            f"srv  llama_server: server is listening on http://127.0.0.1:3910{n}",
        ]
    queues = []
    for _ in range(2):
        lines = []
        for task in range(rng.randint(3, 12)):
            prompt = rng.randint(100, 5000)
            tag = f"id  0 | task {task} |"
            lines += [
                "slot get_availabl: id  0 | task -1 | selected slot by LCP similarity, sim_best = 0.500 (> 0.100 thold), f_keep = 1.000",
                f"slot launch_slot_: {tag} processing task, is_child = 0",
                f"slot   operator(): {tag} new prompt, n_ctx_slot = 32768, n_keep = 0, task.n_tokens = {prompt}",
                f"slot   operator(): {tag} cached n_tokens = {prompt // 2}, memory_seq_rm [{prompt // 2}, end)",
                f"slot   operator(): {tag} init sampler, took 0.05 ms, tokens: text = {prompt}, total = {prompt}",
                *(
                    f"slot print_timing: {tag} n_gen = {n}, t_gen = 1.00 s, 38.00 t/s"
                    for n in range(rng.randint(0, 4))
                ),
                f"slot print_timing: {tag} prompt eval time =     100.00 ms / {prompt - prompt // 2:5d} tokens (    0.40 ms per token,  2500.00 tokens per second)",
                f"slot print_timing: {tag}        eval time =     100.00 ms /    10 tokens (   26.30 ms per token,    38.02 tokens per second)",
                f"slot print_timing: {tag}       total time =     200.00 ms / {prompt + 10:5d} tokens",
                f"slot      release: {tag} stop processing: n_tokens = {prompt + 9}, truncated = 0",
                "srv  update_slots: all slots are idle",
            ]
        queues.append(lines)
    out = list(head)
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        out.append(queue.pop(0))
        if rng.random() < 0.05:
            out.append(out[rng.randrange(len(head), len(out))])
        elif rng.random() < 0.1:  # (the line again at once: after `stop processing`, of a task now done)
            out.append(out[-1])
    return journald(out, rng, rate)


def damaged(texts: list[str], odd: list[str], rng: random.Random) -> list[str]:
    """The lines with a few dozen random changes."""
    out = list(texts)
    for _ in range(rng.randint(1, 40)):
        i = rng.randrange(len(out))
        kind = rng.randrange(6)
        if kind == 0 and i + 1 < len(out):
            out[i], out[i + 1] = out[i + 1], out[i]
        elif kind == 1:
            del out[i]
        elif kind == 2:
            out.insert(i, out[rng.randrange(len(out))])
        elif kind == 3:
            out.insert(i, rng.choice(odd))
        elif kind == 4:
            out[i] = out[i][: rng.randrange(len(out[i]) + 1)]
        else:
            out[i] = out[i] + rng.choice(("\r", " ", "\x1b[0m", "é"))
    return out


def state(parser: Parser) -> dict[str, Any]:
    """What a parser carries to its next line (an Ollama parser's runners by their state keys)."""
    out = dict(vars(parser))
    runners = out.pop("_runners", None)
    if runners is not None:
        out.pop("_reused")
        out["_clock"] = out["_clock"].key()
        out["runners"] = {name: llama_state(r) for name, r in runners.items()}
    return out


def by_line(engine: str, texts: list[str]) -> tuple[BlockResult, dict[str, Any]]:
    """parse() of each line, counted as SourceRun counts it."""
    parser = make_parser(engine, "src", ParserSettings(year=2026))
    events: list[Event] = []
    recognized = errors = 0
    for text in texts:
        result = parser.parse(LogLine("src", text, None))
        if isinstance(result, list):
            recognized += 1
            events += result
        elif isinstance(result, ParseError):
            errors += 1
    return BlockResult(events, recognized, errors), state(parser)


def by_text(engine: str, texts: list[str], rng: random.Random) -> tuple[BlockResult, dict[str, Any]]:
    """parse_text() over random cuts of the lines (state carries across blocks)."""
    parser = make_parser(engine, "src", ParserSettings(year=2026))
    whole: Callable[[str], BlockResult] = parser.parse_text  # type: ignore[attr-defined]
    events: list[Event] = []
    recognized = errors = 0
    start = 0
    while start < len(texts):
        stop = start + rng.choice((1, 2, 3, 7, 50, 400, len(texts)))
        got = whole("".join(text + "\n" for text in texts[start:stop]))
        events += got.events
        recognized += got.recognized
        errors += got.errors
        start = stop
    return BlockResult(events, recognized, errors), state(parser)


CASES = [
    ("lmstudio", sample_logs("lmstudio-", rotated=False), lmstudio_log, LMSTUDIO_ODD),
    ("ollama", sample_logs("ollama-", rotated=False), ollama_log, OLLAMA_ODD),
]


@pytest.mark.parametrize("engine, samples", [(e, s) for e, s, _, _ in CASES], ids=[c[0] for c in CASES])
def test_samples(engine: str, samples: list[Path]) -> None:
    """Every sample of the engine, whole and cut."""
    assert samples
    for path in samples:
        texts = path.read_text().splitlines()
        want = by_line(engine, texts)
        assert want[0].recognized > 0
        for seed in range(3):
            assert by_text(engine, texts, random.Random(seed)) == want, (path.name, seed)


def test_ollama_samples_under_journald() -> None:
    """The Ollama samples with journald's prefix, whole and damaged: the prefix is read once a second."""
    rng = random.Random(3)
    for path in sample_logs("ollama-", rotated=False):
        texts = journald(path.read_text().splitlines(), rng)
        for variant in (texts, damaged(texts, OLLAMA_ODD, rng)):
            assert by_text("ollama", variant, rng) == by_line("ollama", variant), path.name


@pytest.mark.parametrize("seed", range(30))
def test_two_ollama_runners_at_once(seed: int) -> None:
    """Two runners' slot lines interleaved, some late: each line goes where `parse` sends it."""
    texts = two_runners(seed)
    want = by_line("ollama", texts)
    assert len(want[0].events) > 2
    assert by_text("ollama", texts, random.Random(seed)) == want


@pytest.mark.parametrize("seed", range(20))
def test_two_ollama_runners_in_long_seconds(seed: int) -> None:
    """The same, with dozens of lines to a second: a runner's lines come in long runs under one
    journald prefix (read together, see the llama.cpp parser's `untagged_run`), broken by the other
    runner's lines and by damage."""
    rng = random.Random(seed)
    texts = two_runners(seed, rate=0.02)
    if seed % 2:
        texts = damaged(texts, OLLAMA_ODD, rng)
    want = by_line("ollama", texts)
    assert len(want[0].events) > 2
    assert by_text("ollama", texts, rng) == want


@pytest.mark.parametrize("seed", range(6))
def test_a_runner_starting_while_another_has_the_same_task_in_progress(seed: int) -> None:
    """Runner a has task 3 of slot 0 in progress when b starts and logs that task's lines before any
    of its own: the first goes to b (the runner that started last, a runner's only line), the next
    ones to a (`_owner`: a has the task in progress and comes first)."""
    rng = random.Random(seed)
    texts = [line for line in two_runners(seed, rate=0.0) if "task 3 |" not in line or "39102" in line]
    a, b = (next(i for i, t in enumerate(texts) if f"--port 3910{n}" in t) for n in (1, 2))
    runner_b = texts[b : b + 1]  # (its start; its own start-up lines are left out)
    del texts[b : b + 4]
    tag = "id  0 | task 3 |"
    prefix = texts[0].split("]: ")[0] + "]: "
    task = [
        f"slot launch_slot_: {tag} processing task, is_child = 0",
        f"slot   operator(): {tag} new prompt, n_ctx_slot = 32768, n_keep = 0, task.n_tokens = 900",
        f"slot   operator(): {tag} cached n_tokens = 450, memory_seq_rm [450, end)",
        f"slot print_timing: {tag} n_gen = 1, t_gen = 1.00 s, 38.00 t/s",
        f"slot print_timing: {tag} prompt eval time =     100.00 ms /   450 tokens (    0.40 ms per token,  2500.00 tokens per second)",
        f"slot print_timing: {tag}        eval time =     100.00 ms /    10 tokens (   26.30 ms per token,    38.02 tokens per second)",
        f"slot print_timing: {tag}       total time =     200.00 ms /   910 tokens",
        f"slot      release: {tag} stop processing: n_tokens = 909, truncated = 0",
    ]
    at = rng.randint(1, 4)
    texts[a + 4 : a + 4] = [prefix + line for line in task[:at]]
    texts[a + 4 + at : a + 4 + at] = [*runner_b, *(prefix + line for line in task[at:])]
    want = by_line("ollama", texts)
    assert by_text("ollama", texts, rng) == want


@pytest.mark.parametrize("seed", range(6))
def test_bare_timing_headers_in_an_ollama_log(seed: int) -> None:
    """A legacy timing block (a bare slot line, then untagged timing lines) after a runner's slot line,
    under the same journald prefix: the lines after the header are its, as `parse` reads them."""
    rng = random.Random(seed)
    texts = ollama_log(seed)
    for _ in range(30):
        at = rng.randrange(len(texts))
        found = re.match(r"(.*?\]: )slot +\S+: (id +\S+ \| task \S+ \|)", texts[at])
        if found:
            texts[at + 1 : at + 1] = [
                f"{found[1]}slot print_timing: {found[2]}",
                *([f"{found[1]}srv  update_slots: all slots are idle"] if rng.random() < 0.5 else []),
                f"{found[1]}       eval time =    1599.14 ms /    64 tokens",
            ]
    want = by_line("ollama", texts)
    assert by_text("ollama", texts, rng) == want


@pytest.mark.parametrize("engine, make", [(e, m) for e, _, m, _ in CASES], ids=[c[0] for c in CASES])
def test_bench_logs(engine: str, make: Callable[[int], list[str]]) -> None:
    """Logs of the bench generator, as they are: many events, every line recognised."""
    texts = make(5)
    want = by_line(engine, texts)
    assert len(want[0].events) > 100 and want[0].recognized == len(texts)
    assert by_text(engine, texts, random.Random(5)) == want


@pytest.mark.parametrize("engine, make, odd", [(e, m, o) for e, _, m, o in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize("seed", range(12))
def test_damaged_logs(engine: str, make: Callable[[int], list[str]], odd: list[str], seed: int) -> None:
    """Damaged variants of the bench logs and the samples: the same events, counts and state."""
    rng = random.Random(seed)
    base = (
        make(seed)
        if seed % 3
        else [
            line
            for path in sample_logs(f"{engine}-", rotated=False)
            for line in path.read_text().splitlines()
        ]
    )
    texts = damaged(base, odd, rng)
    want = by_line(engine, texts)
    assert by_text(engine, texts, rng) == want


@pytest.mark.parametrize("engine, make", [(e, m) for e, _, m, _ in CASES], ids=[c[0] for c in CASES])
def test_through_the_framing(engine: str, make: Callable[[int], list[str]]) -> None:
    """Replay's framing hands a dense plain read over as one text (CRLF line ends dropped); SourceRun's
    counts and events are those of parse() line by line."""
    texts = make(7)
    data = "".join(text + "\r\n" for text in texts).encode()
    parser = make_parser(engine, "src", ParserSettings(year=2026))
    framer = Framer("src", "plain", parser.markers, 1 << 20)
    batches = framer.chunk(data)
    assert len(batches) == 1 and isinstance(batches[0], Block)
    assert batches[0].texts == texts
    run = SourceRun("src", parser, SourceCounts())
    events = run.take_many(batches)
    want, _ = by_line(engine, texts)
    assert events == want.events
    assert run.counts.parsed() == (len(texts), want.recognized, want.errors)


@pytest.mark.parametrize("seed", range(6))
def test_untagged_fast_forms_are_parse(seed: int) -> None:
    """The llama.cpp parser's fast forms of an untagged slot or srv line (what Ollama hands its runners)
    give what `parse` gives, line by line, with the same state after: on runner lines of the bench log
    and the samples, damaged, at transport times that sometimes go back or are missing."""
    rng = random.Random(seed)
    runner_lines = [
        line.split("]: ", 1)[-1]
        for line in ollama_log(seed) + two_runners(seed)
        if "time=" not in line and "[GIN]" not in line
    ]
    samples = [
        line
        for path in sample_logs("ollama-0.30", rotated=False)
        for line in path.read_text().splitlines()
        if "time=" not in line
    ]
    odd = [
        "srv  load:  - found better prompt with f_keep = 0.900, sim = 0.950",
        "srv  x: initializing",
        "srv   log: \x1b[1mok",
        "srv  x: idle\r",
        "srv x:",
        "srv  update_slots: all slots are idle",
    ]
    texts = damaged(runner_lines + samples, odd + [o.split("]: ", 1)[-1] for o in OLLAMA_ODD], rng)
    for _ in range(20):  # a legacy timing block with a srv line inside: its header is forgotten
        at = rng.randrange(len(texts))
        found = re.match(r"slot +\S+: (id +\S+ \| task \S+ \|)", texts[at])
        if found:
            bare = f"slot print_timing: {found[1]}"
            texts[at + 1 : at + 1] = [
                bare,
                "srv  update_slots: all slots are idle",
                "       eval time =    1599.14 ms /    64 tokens",
            ]
    general = make_parser("llamacpp", "src", ParserSettings(year=2026))
    fast = make_parser("llamacpp", "src", ParserSettings(year=2026))
    wall: float | None = 1781082000.0
    for text in texts:
        wall = None if rng.random() < 0.05 else (wall or 1781082000.0) + rng.choice((0.0, 0.0, 1.0, -3.0))
        want = general.parse(LogLine("src", text, wall))
        kind = (
            "untagged_slot" if text.startswith("slot ") else "untagged_srv" if text.startswith("srv ") else ""
        )
        got = getattr(fast, kind)(text, wall) if kind else None
        if got is None:
            got = fast.parse(LogLine("src", text, wall))
        assert got == want, text
        assert llama_state(fast) == llama_state(general), text


def llama_state(parser: Any) -> tuple[object, ...]:
    """What a llama.cpp parser carries to its next line (its streams whole)."""
    streams = {
        port: {name: getattr(stream, name) for name in stream.__slots__ if name != "ids"}  # (ids: a cache)
        for port, stream in parser._streams.items()
    }
    return parser._clock.key(), parser._legacy, parser._last, streams, parser._runs


def test_lmstudio_records_read_from_the_match_and_their_near_misses() -> None:
    """The two records parse_text reads from its own match, and records like them that `parse` reads
    otherwise (a torn number, words after the line, another tag, a disk usage note): the same results."""
    header = "2026-06-10 09:00:0{} {:>7}"
    messages = [
        " [cache_wrapper][INFO]: Prompt cache: using 5/10 tokens from cache",
        " [cache_wrapper][INFO]: Prompt cache: using 11/10 tokens from cache",
        " [cache_wrapper][INFO]: Prompt cache: using 5/10 tokens from cache ",
        " [cache_wrapper][INFO]: Prompt cache: using 5/10 tokens from cache, then more",
        " [cache_wrapper][INFO]: Prompt cache: using 5/10 tokens from cachet",
        " [cache_wrapper][DEBUG]: Prompt cache: using 5/10 tokens from cache",
        " [cache_wrapper][INFO]:Prompt cache: using 5/10 tokens from cache",
        " [cache_wrapper][INFO]: Prompt cache: using \u0665/10 tokens from cache",
        " [qwen/qwen3-8b] Running chat completion on conversation with 3 messages.",
        " [qwen/qwen3-8b] Running chat completion on conversation with prompt cache disk usage",
        " [qwen/qwen3-8b][x] Running chat completion on conversation with 3 messages.",
        " [LM STUDIO SERVER] Running chat completion on conversation with 3 messages.",
        " [a b] Running chat completion on conversation with 3 messages.",
        " [qwen/qwen3-8b]  Running chat completion on conversation with 3 messages.",
        " [qwen/qwen3-8b] Streaming response...",
    ]
    rng = random.Random(11)
    for _ in range(40):
        texts = []
        for second in range(rng.randint(1, 8)):
            for _ in range(rng.randint(1, 4)):
                level = rng.choice(("[INFO]", "[DEBUG]", "[WARN]"))
                texts += [header.format(second, level), rng.choice(messages)]
        want = by_line("lmstudio", texts)
        assert by_text("lmstudio", texts, rng) == want
