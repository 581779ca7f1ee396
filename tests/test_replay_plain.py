"""Replay's accelerators change nothing but the time: every sample, mutated copies of every sample and
random cuts of them give byte for byte the same output with every accelerator off (KVWATCH_REPLAY_PLAIN=1),
with the defaults, and with every accelerator forced on however small the file.

This is the one "fast path equals plain path" harness: a parser's fast paths (a dense read parsed whole,
LMCache's records read in runs, by the compiled loop where built) and the forked stages are each held to
the plain path, one line at a time in one process, here.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from test_golden import SAMPLES, golden_of, sample_logs

from kvwatch.cli import main
from kvwatch.parsers.base import ParserSettings
from kvwatch.replay import plan, replay
from kvwatch.replay.speedups import PLAIN, SWITCH, Speedups, describe
from kvwatch.report.exposition import golden_lines
from kvwatch.report.text import render

#: Every accelerator on whatever the file's size: a child frames (and parses) each file.
EAGER = Speedups(fork_bytes=0, dense_fork_bytes=0)
SETTINGS = ParserSettings(year=2026)


def replayed(path: Path, speedups: Speedups) -> str:
    """The golden lines and the text report of `kvwatch replay --year 2026 PATH` with these accelerators."""
    result = replay(plan([str(path)], "auto", None), SETTINGS, speedups=speedups)
    golden = "\n".join(golden_lines(result.registry, result.alerts))
    return golden + "\n" + render(result.summary, result.alerts)


def text_of(log: Path) -> bytes:
    """A sample's bytes, decompressed."""
    data = log.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


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
    """Mutated copies of each sample, and cuts of them at random offsets, replay the same with the default
    accelerators and with none."""
    data = text_of(log)
    rng = random.Random(log.name)
    for seed in range(2):
        copy = mutated(data, seed)
        for name, body in (("whole", copy), ("cut", copy[: rng.randrange(1, len(copy) + 1)])):
            path = tmp_path / f"{seed}-{name}-{log.name.removesuffix('.gz')}"
            path.write_bytes(body)
            assert replayed(path, PLAIN) == replayed(path, Speedups()), path.name


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
    assert "LMCache's run loop: compiled" in out  # (CI builds it: a C compiler is installed)
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
    monkeypatch.setitem(speedups.NATIVE, "kvwatch.no_such_loop", "a loop")
    assert 0 == main([*args, str(log)])
    assert "kvwatch: a loop not compiled in this install" in capsys.readouterr().err
    assert 0 == main([*args, str(SAMPLES / "lmcache-0.5.6-tp2.log")])
    monkeypatch.setenv(SWITCH, "1")
    assert 0 == main([*args, str(log)])
    assert "" == capsys.readouterr().err
