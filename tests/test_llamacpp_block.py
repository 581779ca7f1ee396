"""The llama.cpp parser's block path (replay's inner loop) gives exactly what parse() gives, line by line.

parse_block() applies quiet lines in place and keeps their clock as text; these tests hold it to
parse() on the samples, on a generated -lv 4 log, and on many damaged variants of them (lines out of
order, clocks going back, restarts, torn and garbled lines, foreign bytes), cut into blocks at random.
"""

from __future__ import annotations

import io
import random
import re
import sys
from dataclasses import fields
from pathlib import Path

import pytest
from corpora import sample_logs

from kvwatch.engines.llamacpp import lines as ln
from kvwatch.engines.llamacpp.parser import LlamacppParser
from kvwatch.engines.llamacpp.slots import Stream
from kvwatch.model import Event, LogLine
from kvwatch.parsers.base import BlockResult, ParseError, ParserSettings

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sample_logs("llamacpp-", rotated=False)
sys.path.insert(0, str(ROOT / "bench"))
import gen_llamacpp  # noqa: E402

#: Lines spliced into damaged variants: starts, rescues, empty and odd messages, foreign text.
ODD = [
    "0.00.910.000 I srv          init: initializing, n_slots = 4, n_ctx_slot = 32768",
    "0.01.060.000 I srv          init: listening on http://0.0.0.0:8080",
    "9.59.999.999 I srv          load:  - found better prompt with f_keep = 0.900, sim = 0.950",
    "0.00.000.001 I srv  get_availabl: updating prompt cache",
    "10.00.000.000 I srv  get_availabl: updating prompt cache",
    "0.05.335.419 I slot print_timing: id  0 | task 1 | ",
    "0.05.335.419 I slot print_timing: id  0 | task 1 |",
    "0.05.335.420 I slot print_timing: id  0 | task 1 | \t n_gen =    64, memory_seq_rm [5, end)",
    "0.05.335.421 I slot print_timing: id  1 | task x7 | n_gen =    64",
    "0.05.335.422 I slot print_timing: id  0 | task 1 | total time =  x ms",
    "0.05.335.423 I slot   operator(): id  0 | task 1 | cached n_tokens = 5, memory_seq_rm [zz, end)",
    "0.05.335.424 W slot print_timing: id  3 | task -1 | idle slot save",
    "0.05.335.425 I slot print_timing: id  0 | task 1 | n_gen = 1\r",
    "\x1b[32m0.05.335.426 I slot print_timing: id  0 | task 1 | n_gen = 1\x1b[0m",
    "0.0\u0665.335.427 I srv  get_availabl: updating prompt cache",
    "0.05.3\u0663\u0663.427 I slot print_timing: id  0 | task 1 | n_gen = 1",
    "   prompt eval time =     950.28 ms /  2487 tokens",
    "       eval time =    1599.14 ms /    64 tokens",
    "      total time =    2549.42 ms /  2598 tokens",
    '{"type":"log","time":5335428,"level":"I","msg":"slot print_timing: id  0 | task 1 | n_gen = 2"}',
    "ggml_cuda_init: found 1 CUDA devices",
    "",
]


def generated(lines: int, seed: int) -> list[str]:
    """A -lv 4 log from the bench generator."""
    out = io.StringIO()
    gen_llamacpp.generate(out, lines, None, seed)
    return out.getvalue().splitlines()


def state(parser: LlamacppParser) -> tuple[object, ...]:
    """What a parser carries to its next line (its caches excluded)."""
    streams = {
        port: tuple(getattr(s, f.name) for f in fields(Stream) if f.name != "ids")
        for port, s in parser._streams.items()
    }
    return streams, parser._last, parser._runs


def by_line(texts: list[str]) -> tuple[BlockResult, tuple[object, ...]]:
    """parse() of each line, counted as SourceRun counts it."""
    parser = LlamacppParser("src", ParserSettings())
    events: list[Event] = []
    recognized = errors = 0
    for text in texts:
        result = parser.parse(LogLine("src", text, None))
        if isinstance(result, list):
            recognized += 1
            events += result
        elif isinstance(result, ParseError):
            errors += 1
    events += parser.flush()
    return BlockResult(events, recognized, errors), state(parser)


def by_block(texts: list[str], rng: random.Random) -> tuple[BlockResult, tuple[object, ...]]:
    """parse_block() over random cuts of the lines (state carries across blocks)."""
    parser = LlamacppParser("src", ParserSettings())
    events: list[Event] = []
    recognized = errors = 0
    start = 0
    while start < len(texts):
        stop = start + rng.choice((1, 2, 7, 50, 400, len(texts)))
        got = parser.parse_block(texts[start:stop])
        events += got.events
        recognized += got.recognized
        errors += got.errors
        start = stop
    events += parser.flush()
    return BlockResult(events, recognized, errors), state(parser)


def damaged(texts: list[str], rng: random.Random) -> list[str]:
    """The lines with a few dozen random changes."""
    out = list(texts)
    for _ in range(rng.randint(1, 40)):
        i = rng.randrange(len(out))
        kind = rng.randrange(9)
        if kind == 0 and i + 1 < len(out):  # out of order: a clock going back, a task out of turn
            out[i], out[i + 1] = out[i + 1], out[i]
        elif kind == 1:
            del out[i]
        elif kind == 2:
            out.insert(i, out[rng.randrange(len(out))])  # a line again, maybe of another request
        elif kind == 3:
            out.insert(i, rng.choice(ODD))
        elif kind == 4:  # another slot or task on a line
            out[i] = out[i].replace("id  0", "id  1", 1).replace("task 1", "task 2", 1)
        elif kind == 5:  # a restart: the clock starts again
            out[i:i] = texts[:20]
        elif kind == 7 and "stop processing" in out[i] and i >= 4:  # V-2025-08: released, then timed
            stop = out.pop(i)
            stamp = out[i - 4].split(" ", 1)[0]  # (its own is later than the timing lines')
            out.insert(i - 4, stamp + " " + stop.split(" ", 1)[-1])
        elif kind == 6:  # a line cut short
            out[i] = out[i][: rng.randrange(len(out[i]) + 1)]
        elif " | task " in out[i]:  # a legacy timing block (bare header, then unprefixed lines)
            tag, task = out[i].split(" | task ", 1)
            out[i + 1 : i + 1] = [f"{tag} | task {task.split(' |')[0]} | ", *ODD[16:19]]
    return out


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_samples(path: Path) -> None:
    """Every llama.cpp sample, whole."""
    texts = path.read_text().splitlines()
    assert by_line(texts) == by_block(texts, random.Random(1))


def test_generated_log() -> None:
    """A generated -lv 4 log: the same records, counts and final state."""
    texts = generated(20000, 3)
    expected = by_line(texts)
    assert len(expected[0].events) > 400 and expected[0].errors == 0
    assert expected == by_block(texts, random.Random(2))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_damaged_logs(seed: int) -> None:
    """Damaged variants of generated logs and samples give what parse() gives, errors included."""
    rng = random.Random(seed)
    base = generated(3000, seed) if seed % 2 else SAMPLES[seed % len(SAMPLES)].read_text().splitlines()
    for _ in range(25):
        texts = damaged(base, rng)
        assert by_line(texts) == by_block(texts, rng), texts


def test_to_float_reads_what_printf_writes_and_nothing_else() -> None:
    """to_float accepts exactly the texts `\\d+(?:\\.\\d+)?` matches whole (any Unicode digits)."""
    number = re.compile(r"\d+(?:\.\d+)?")
    rng = random.Random(5)
    alphabet = "0123456789..-+e \u0663\u00b2x\n"
    accepted = 0
    for _ in range(50000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        try:
            ln.to_float(text)
            got = True
        except ln.GarbledError:
            got = False
        assert (number.fullmatch(text) is not None) == got, repr(text)
        accepted += got
    assert accepted > 1000
