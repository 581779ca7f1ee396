"""Replay's accelerators change nothing but the time: every sample, mutated copies of every sample and
random cuts of them give byte for byte the same output with every accelerator off (KVWATCH_REPLAY_PLAIN=1),
with the defaults, and with every accelerator forced on however small the file.

This is the one "fast path equals plain path" harness: a parser's fast paths (a dense read parsed whole,
LMCache's records read in runs, by the compiled loop where built) and the forked stages are each held to
the plain path, one line at a time in one process, here.
"""

# Lines of the formats are kept whole, however long.
# ruff: noqa: E501

from __future__ import annotations

import gzip
import io
import json
import random
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from corpora import SAMPLES, sample_logs
from test_golden import golden_of

from kvwatch.cli import main
from kvwatch.engines import make_parser, names
from kvwatch.model import Event, LogLine
from kvwatch.output.exposition import golden_lines
from kvwatch.output.text import render
from kvwatch.parsers.base import BlockParser, BlockResult, Parser, ParserSettings, TextParser, tally
from kvwatch.replay import plan, replay
from kvwatch.replay.speedups import PLAIN, SWITCH, Speedups, describe

#: Every accelerator on whatever the file's size: a child frames (and parses) each file.
EAGER = Speedups(fork_bytes=0, dense_fork_bytes=0)
SETTINGS = ParserSettings(year=2026)


def replayed(path: Path, speedups: Speedups, tz: str = "UTC", engine: str = "auto") -> str:
    """The golden lines and the text report of `kvwatch replay --year 2026 PATH` with these accelerators."""
    settings = ParserSettings(year=2026, tz=tz)
    result = replay(plan([str(path)], engine, None), settings, speedups=speedups)
    golden = "\n".join(golden_lines(result.registry, result.alerts))
    return golden + "\n" + render(result.summary, result.alerts)


def text_of(log: Path) -> bytes:
    """A sample's bytes, decompressed."""
    data = log.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def moby(text: bytes, time: str = "2026-09-14T08:00:36.123456789Z") -> bytes:
    """One line as the docker json-file entry moby writes for it (stderr; ESC as `\\u001b`, `<>&`
    escaped, non-ASCII raw)."""
    body = json.dumps(text.decode("utf-8", "replace") + "\n", ensure_ascii=False)
    body = body.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return ('{"log":' + body + ',"stream":"stderr","time":"' + time + '"}').encode()


def json_file_copy(data: bytes) -> bytes:
    """A log's lines as a container's json-file log holds them (LMCache's records among vLLM's lines
    then cross undecoded, in runs read by the compiled loop)."""
    return b"".join(moby(line) + b"\n" for line in data.splitlines())


def mutated(data: bytes, seed: int) -> bytes:
    """A copy of a log with some lines dropped, some doubled and some characters changed (digits to
    other digits, letters to other letters, now and then a quote or a backslash), the same for a seed."""
    rng = random.Random(seed)
    out = []
    for line in data.split(b"\n"):
        roll = rng.random()
        if roll < 0.03:
            continue
        if roll < 0.06:
            out.append(line)
        if line and rng.random() < 0.1:
            chars = bytearray(line)
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(len(chars))
                if chr(chars[at]).isdigit():
                    chars[at] = ord(rng.choice("0123456789"))
                elif chr(chars[at]).isalpha():
                    chars[at] = ord(rng.choice("abcxyzABC"))
                elif rng.random() < 0.3:
                    chars[at] = ord(rng.choice('"\\\x1b'))
            line = bytes(chars)  # noqa: PLW2901
        out.append(line)
    return b"\n".join(out)


@pytest.mark.parametrize("log", sample_logs(), ids=lambda p: p.name)
def test_every_accelerator_off_gives_the_golden(
    log: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`KVWATCH_REPLAY_PLAIN=1 kvwatch replay` of each sample gives its golden, byte for byte."""
    monkeypatch.setenv(SWITCH, "1")
    assert 0 == main(["replay", "--format", "golden", "--year", "2026", str(log)])
    assert golden_of(log).read_text() == capsys.readouterr().out


@pytest.mark.parametrize("log", sample_logs(), ids=lambda p: p.name)
def test_forced_accelerators_equal_the_plain_replay(log: Path) -> None:
    """Each sample replayed with every accelerator on (a child for every file) gives the plain output."""
    assert replayed(log, PLAIN) == replayed(log, EAGER)


@pytest.mark.parametrize("log", sample_logs(), ids=lambda p: p.name)
def test_mutated_and_cut_samples_give_the_same_either_way(log: Path, tmp_path: Path) -> None:
    """Mutated copies of each sample and of its json-file copy, and cuts of them at random offsets, replay
    the same with the default accelerators and with none."""
    data = text_of(log)
    rng = random.Random(log.name)
    if data.lstrip()[:8].startswith(b'{"log":'):
        copies = [data, mutated(data, 0), mutated(data, 1)]
    else:  # (and its json-file copy, whole and mutated)
        copies = [mutated(data, 0), mutated(data, 1), json_file_copy(data), json_file_copy(mutated(data, 2))]
    for seed, copy in enumerate(copies):
        for name, body in (("whole", copy), ("cut", copy[: rng.randrange(1, len(copy) + 1)])):
            path = tmp_path / f"{seed}-{name}-{log.name.removesuffix('.gz')}"
            path.write_bytes(body)
            assert replayed(path, PLAIN) == replayed(path, Speedups()), path.name
            if log.name.startswith("lmcache") and seed >= 2:  # (in vLLM's container log: read in runs)
                assert replayed(path, PLAIN, engine="vllm") == replayed(path, Speedups(), engine="vllm")


def test_the_switch_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """KVWATCH_REPLAY_PLAIN=1 turns every accelerator off; unset or 0 leaves them on; --version says which."""
    from kvwatch.replay.speedups import chosen

    monkeypatch.delenv(SWITCH, raising=False)
    assert chosen().any and SWITCH in describe()
    monkeypatch.setenv(SWITCH, "0")
    assert chosen().any
    monkeypatch.setenv(SWITCH, "1")
    assert not chosen().any and "off" in describe()


def test_version_names_the_accelerators_and_the_switch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kvwatch --version` says which accelerators a replay uses, whether its loop is compiled, and the
    switch; with the switch set, that they are off."""
    monkeypatch.delenv(SWITCH, raising=False)
    with pytest.raises(SystemExit):
        main(["--version"])
    out = capsys.readouterr().out
    assert out.startswith("kvwatch ") and f"{SWITCH}=1 turns them all off" in out
    assert "LMCache's run loop: compiled" in out  # (CI builds the loops: a C compiler is installed)
    assert "the json-file framer's walk: compiled" in out
    monkeypatch.setenv(SWITCH, "1")
    with pytest.raises(SystemExit):
        main(["--version"])
    assert f"replay accelerators: off ({SWITCH} is set)" in capsys.readouterr().out


def test_a_replay_without_the_compiled_loop_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A replay of a json-file log whose LMCache records are read in runs says on stderr when a loop it
    could use is not compiled (no silent fallback); a plain log, or the switch set, says nothing."""
    from kvwatch.replay import speedups

    lines = (SAMPLES / "lmcache-0.5.6-tp2.log").read_text().splitlines()
    stamp = '","stream":"stderr","time":"2026-09-14T08:00:00.5Z"}\n'
    log = tmp_path / "vllm-lmcache-json.log"
    log.write_text("".join('{"log":' + json.dumps(line + "\n")[:-1] + stamp for line in lines))
    args = ["replay", "--format", "golden", "--year", "2026"]
    assert 0 == main([*args, str(log)])
    assert "" == capsys.readouterr().err  # (CI builds the loops: a C compiler is installed)
    monkeypatch.setattr(speedups, "built", lambda: {"a loop": False, "another": True})
    assert 0 == main([*args, str(log)])
    assert "kvwatch: a loop not compiled in this install" in capsys.readouterr().err
    assert 0 == main([*args, str(SAMPLES / "lmcache-0.5.6-tp2.log")])
    monkeypatch.setenv(SWITCH, "1")
    assert 0 == main([*args, str(log)])
    assert "" == capsys.readouterr().err


def lmcache_records(seed: int) -> bytes:
    """LMCache's commonest records (lookups, stores, loads) of a few requests in turn, as vLLM's json-file
    log holds them: a lookup repeated, requests run and looked up again, stamps a second or more apart
    across midnight and a month's end, leap days, stamps that are no date, needs below zero, numbers
    wider than a machine word and sums past 2^63: what the compiled loop reads its own way."""
    rng = random.Random(seed)
    records = [
        line
        for name in ("lmcache-0.3.12-write-only", "lmcache-0.4.4-healthy", "lmcache-0.5.6-tp2")
        for line in (SAMPLES / f"{name}.log").read_bytes().splitlines()
        if re.search(rb"\] LMCache INFO.*(Reqid: |\] Stored |\] Retrieved )", line)
    ]
    requests = [f"chatcmpl-{index:04x}".encode() for index in range(6)]
    start, second, lines = datetime(2026, rng.choice([2, 9, 12]), 28, 23, 59, 0), 0, []
    odd = [b"2026-02-30 08:00:00", b"2026-13-01 08:00:00", b"0000-01-01 00:00:00", b"2026-09-14 24:00:00"]
    odd += [b"2028-02-29 12:00:00", b"2000-02-29 23:59:59", b"2026-12-31 23:59:60"]
    for _ in range(600):
        line = rng.choice(records)
        second += rng.choice([0, 0, 1, 4, 907])
        stamp = (start + timedelta(seconds=second)).strftime("%Y-%m-%d %H:%M:%S").encode()
        if rng.random() < 0.03:
            stamp = rng.choice(odd)
        line = re.sub(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", stamp, line, count=1)
        line = re.sub(rb"(Reqid: |req_id=)[^,\]\s]+", lambda m: m.group(1) + rng.choice(requests), line)
        if rng.random() < 0.1:
            line = re.sub(rb"need to load: \d+", b"need to load: -" + str(rng.randrange(9)).encode(), line)
        if rng.random() < 0.05:
            digits = rng.choice([17, 18, 19, 25])
            line = re.sub(
                rb"(Stored |Total tokens |hit tokens: )\d+", rb"\g<1>" + b"9" * digits, line, count=1
            )
        lines.append(line)
    return json_file_copy(b"\n".join(lines))


@pytest.mark.parametrize(
    ("seed", "tz"), [(0, "UTC"), (1, "UTC"), (2, "America/New_York"), (3, "Asia/Kolkata")]
)
def test_lmcache_records_of_every_kind_read_in_runs_give_the_plain_result(
    seed: int, tz: str, tmp_path: Path
) -> None:
    """LMCache's records read in runs by the compiled loop (its numbers, stamps and request ids of every
    kind, in UTC and other zones) give what decoding and parsing each line gives."""
    log = tmp_path / "vllm-lmcache.log"
    log.write_bytes(lmcache_records(seed))
    plain = replayed(log, PLAIN, tz, "vllm")  # (as vLLM's container log holds them)
    assert "kvwatch_lmcache_" in plain
    assert plain == replayed(log, Speedups(), tz, "vllm")


def generated(kind: str, seed: int) -> bytes:
    """A log of the bench's generator for `kind` (llama.cpp -lv 4, LM Studio, Ollama under journald):
    thousands of requests in a real line mix, dense enough to be read a block at a time."""
    sys.path.insert(0, str(SAMPLES.parent / "bench"))
    import gen_llamacpp
    import gen_lmstudio
    import gen_ollama

    out = io.StringIO()
    if kind == "llamacpp":
        gen_llamacpp.generate(out, 6000, None, seed)
    elif kind == "lmstudio":
        gen_lmstudio.generate(out, 0.4, seed)
    else:
        gen_ollama.generate(out, 0.4, seed)
    return out.getvalue().encode()


@pytest.mark.parametrize("kind", ["llamacpp", "lmstudio", "ollama"])
def test_generated_dense_logs_give_the_same_every_way(kind: str, tmp_path: Path) -> None:
    """A generated dense log, a mutated copy and a cut of it: the same with no accelerator, the
    defaults, and a child forced."""
    data = generated(kind, 3)
    rng = random.Random(kind)
    for name, body in (
        ("whole", data),
        ("mutated", mutated(data, 4)),
        ("cut", data[: rng.randrange(len(data))]),
    ):
        path = tmp_path / f"{kind}-{name}.log"
        path.write_bytes(body)
        plain = replayed(path, PLAIN)
        assert plain == replayed(path, Speedups()) == replayed(path, EAGER), name


def block_engines() -> list[str]:
    """The engines whose parser reads a dense read whole (parse_text) or many lines in one call
    (parse_block): replay's block fast paths."""
    return [
        name for name in names() if isinstance(make_parser(name, "src", SETTINGS), (TextParser, BlockParser))
    ]


def by_lines(parser: Parser, texts: list[str]) -> tuple[BlockResult, list[Event]]:
    """`parse` of each line, counted up, and what `flush` gives at the end: the plain path."""
    return tally(parser.parse(LogLine("src", text, None)) for text in texts), parser.flush()


def by_cuts(parser: Parser, texts: list[str], rng: random.Random) -> tuple[BlockResult, list[Event]]:
    """The same lines cut at random into runs (one line, a few, hundreds, the rest), each read the way
    replay may read it: as one text, as a list, or line by line (a read that was not dense); state
    carries across the cuts."""
    events: list[Event] = []
    recognized = errors = start = 0
    while start < len(texts):
        stop = start + rng.choice((1, 2, 7, 50, 400, len(texts)))
        run, way = texts[start:stop], rng.random()
        if isinstance(parser, TextParser) and way < 0.45:
            got = parser.parse_text("".join(text + "\n" for text in run))
        elif isinstance(parser, BlockParser) and way < 0.9:
            got = parser.parse_block(run)
        else:
            got = tally(parser.parse(LogLine("src", text, None)) for text in run)
        events += got.events
        recognized += got.recognized
        errors += got.errors
        start = stop
    return BlockResult(events, recognized, errors), parser.flush()


@pytest.mark.parametrize("engine", block_engines())
@pytest.mark.parametrize("log", sample_logs(), ids=lambda p: p.name)
def test_block_reads_cut_at_random_give_what_each_line_gives(engine: str, log: Path) -> None:
    """Each block-reading parser over every sample and mutated copies of it, cut into reads at random
    (a cut may fall between a record's header and its message), gives the events, the recognised and
    refused lines, and the held-back events at the end that parsing each line gives."""
    rng = random.Random(f"{engine} {log.name}")
    data = text_of(log)
    for copy in (data, mutated(data, 5), mutated(data, 6)):
        texts = copy.decode("utf-8", "replace").split("\n")[:-1]
        plain = by_lines(make_parser(engine, "src", SETTINGS), texts)
        for _ in range(3):
            assert plain == by_cuts(make_parser(engine, "src", SETTINGS), texts, rng)


@pytest.mark.parametrize("engine", block_engines())
@pytest.mark.parametrize("kind", ["llamacpp", "lmstudio", "ollama"])
def test_block_reads_of_generated_dense_logs_give_what_each_line_gives(engine: str, kind: str) -> None:
    """The same over a generated dense log of each kind and mutated copies of it."""
    rng = random.Random(f"{engine} {kind}")
    data = generated(kind, 8)
    for copy in (data, mutated(data, 9)):
        texts = copy.decode().split("\n")[:-1]
        plain = by_lines(make_parser(engine, "src", SETTINGS), texts)
        assert plain[0].recognized or engine != kind
        assert plain == by_cuts(make_parser(engine, "src", SETTINGS), texts, rng)


#: Lines spliced into damaged copies, of every block-reading engine's formats: starts, restarts, bare
#: and torn headers and timing lines, odd numbers and digits of other scripts, CR, ANSI escapes, foreign
#: text, empty lines (each engine's parser meets the others' lines too).
ODD = [
    # llama.cpp
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
    # LM Studio
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
    # Ollama under journald
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


def damaged(texts: list[str], rng: random.Random) -> list[str]:
    """The lines with a few dozen random changes: neighbours swapped, lines dropped, repeated (maybe of
    another request), odd lines spliced in, a restart (the log's head again), lines torn short or
    given a CR, a blank, an escape or a non-ASCII character at the end."""
    out = list(texts)
    for _ in range(rng.randint(1, 40)):
        i = rng.randrange(len(out))
        kind = rng.randrange(7)
        if kind == 0 and i + 1 < len(out):
            out[i], out[i + 1] = out[i + 1], out[i]
        elif kind == 1:
            del out[i]
        elif kind == 2:
            out.insert(i, out[rng.randrange(len(out))])
        elif kind == 3:
            out.insert(i, rng.choice(ODD))
        elif kind == 4:
            out[i] = out[i][: rng.randrange(len(out[i]) + 1)]
        elif kind == 5:
            out[i:i] = texts[:20]
        else:
            out[i] = out[i] + rng.choice(("\r", " ", "\x1b[0m", "é"))
        if not out:
            out = [rng.choice(ODD)]
    return out


@pytest.mark.parametrize("engine", block_engines())
@pytest.mark.parametrize("seed", range(12))
def test_damaged_logs_cut_at_random_give_what_each_line_gives(engine: str, seed: int) -> None:
    """Damaged copies of generated dense logs and of samples, cut into reads at random, give what
    parsing each line gives, refused lines included."""
    rng = random.Random(seed)
    logs = sample_logs()
    if seed % 2:
        base = generated(("llamacpp", "lmstudio", "ollama")[seed % 3], seed).decode().split("\n")[:-1]
    else:
        base = text_of(logs[seed * 7 % len(logs)]).decode("utf-8", "replace").split("\n")[:-1]
    for _ in range(8):
        texts = damaged(base, rng)
        plain = by_lines(make_parser(engine, "src", SETTINGS), texts)
        assert plain == by_cuts(make_parser(engine, "src", SETTINGS), texts, rng)
