"""Replay's accelerators change nothing but the time: every sample, mutated copies of every sample and
random cuts of them give byte for byte the same output with every accelerator off (KVWATCH_REPLAY_PLAIN=1),
with the defaults, and with every accelerator forced on however small the file.

This is the one "fast path equals plain path" harness: the fast paths (LMCache's records read in runs,
by the compiled loop where built) and the forked stages are each held to the plain path, one line at a
time in one process, here.
"""

# Lines of the formats are kept whole, however long.

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
from kvwatch.output.exposition import golden_lines
from kvwatch.output.text import render
from kvwatch.parsers.base import ParserSettings
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
