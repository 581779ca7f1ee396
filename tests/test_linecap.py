"""The one line cap: a longer line keeps its head and tail, is counted once, and memory stays bounded."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from itertools import chain
from pathlib import Path

from kvwatch.model import LogLine
from kvwatch.replay.files import batches, open_log
from kvwatch.sources.docker_json import Entry, EntryJoiner
from kvwatch.sources.filetail import FileTail
from kvwatch.sources.framing import Framer
from kvwatch.sources.linecap import LINE_CAP, Clip, clip_bytes

LONG = b"HEAD" + b"m" * (16 << 20) + b'x\\y"},"usage":{"prompt_tokens":4242}}'


def test_the_cap_is_at_least_one_mebibyte_and_keeps_head_and_tail() -> None:
    """A line past the cap is its first half-cap and last half-cap joined; a shorter one is untouched."""
    assert LINE_CAP >= 1 << 20
    clip = Clip(10)
    for piece in (b"abc", b"defgh", b"ijklmnop", b"qrstuvwxyz"):
        clip.add(piece)
    assert ((b"abcdevwxyz", True), (b"", False)) == (clip.take(), clip.take())
    clip.add(b"0123456789")
    assert ((b"0123456789", False), b"01234vwxyz", b"ab") == (
        clip.take(),
        clip_bytes(b"01234" + b"_" * 99 + b"vwxyz", 10),
        clip_bytes(b"ab", 10),
    )
    assert b'ab"cd' == clip_bytes(b"ab\\\\\\" + b"_" * 9 + b'"cd', 6)  # no cut-off escape before the tail


def peak(work: Callable[[], object]) -> int:
    """Peak bytes allocated while `work` runs."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_16_mib_line_is_read_in_bounded_memory_live_and_in_replay(tmp_path: Path) -> None:
    """Following or replaying a file with a 16 MiB line holds a few MiB, and both give the same
    line: its head and tail, counted as one truncated line."""
    path = tmp_path / "long.log"
    path.write_bytes(b"short\n" + LONG + b"\nafter\n")
    tail = FileTail(path, "s", start_at="beginning")
    live: list[LogLine] = []
    live_peak = peak(lambda: [live.extend(tail.poll()) for _ in range(40)])
    framer = Framer("s", "plain", (), LINE_CAP)
    replayed: list[object] = []

    def replay() -> None:
        with open_log(str(path)) as stream:
            replayed.extend(chain.from_iterable(batches(stream, framer, LINE_CAP)))

    replay_peak = peak(replay)
    expected = clip_bytes(LONG).decode()
    assert (["short", expected, "after"], 1) == (
        [line.text for line in live],
        tail.counters.truncated_long_lines,
    )
    texts = [text for item in replayed if not isinstance(item, int) for text in getattr(item, "texts", [])]
    texts += [item.text for item in replayed if isinstance(item, LogLine)]
    assert (sorted(["short", expected, "after"]), 1) == (sorted(texts), framer.truncated)
    assert expected.endswith('"prompt_tokens":4242}}') and len(expected) == LINE_CAP
    assert [True, True] == [live_peak < 6 * LINE_CAP, replay_peak < 6 * LINE_CAP], (live_peak, replay_peak)


def test_a_docker_line_joined_past_the_cap_keeps_its_head_and_tail() -> None:
    """Docker's 16 KiB entries of one line, joined past the cap: the head and the tail, counted once."""
    joiner = EntryJoiner(10)
    pieces = ["abcdefgh", "ijklmnop", "qrstuvw", "xyz\n"]
    results = [joiner.add(Entry(piece, "stdout", 1.0)) for piece in pieces]
    assert ([None, None, None, ("abcdevwxyz", 1.0)], 1) == (results, joiner.truncated)
    assert (("short", 2.0), 1) == (joiner.add(Entry("short\n", "stdout", 2.0)), joiner.truncated)
