"""kvwatch.replay.forked.Channel: the pipe between a replay's stages carries each message whole and in
order, its buffers out of band, through short writes, and says when the other end has gone."""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kvwatch.model import LogLine
from kvwatch.replay import forked
from kvwatch.replay.forked import Channel, _pipe, _to_wire
from kvwatch.sources.framing import Entries


@pytest.fixture
def pipe() -> Iterator[tuple[Channel, Channel]]:
    receive, send = _pipe()
    yield receive, send
    receive.close()
    send.close()


def _sent_in_turn(send: Channel, messages: list[Any]) -> threading.Thread:
    """A thread writing `messages` (a pipe holds less than some of them: the reader must read meanwhile)."""

    def write() -> None:
        for message in messages:
            send.send(message)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_buffers_cross_out_of_band_and_come_back_as_bytes(pipe: tuple[Channel, Channel]) -> None:
    """Runs of every size, the empty one and one larger than the pipe among them, among other items:
    the same values, each run `bytes` again, the messages in order."""
    receive, send = pipe
    runs = [b"", b"\n", b"\nx\n" * 7, os.urandom(3 << 20), b"\n" + b"y" * 70_000 + b"\n"]
    messages = [
        ("item", [Entries(3, [pickle.PickleBuffer(run), LogLine("s", "text", 1.0), "t"]) for run in runs]),
        ("item", [pickle.PickleBuffer(b"one"), 7, None]),
        ("end", (1, "two")),
    ]
    writer = _sent_in_turn(send, messages)
    first = receive.recv()
    assert first == ("item", [Entries(3, [run, LogLine("s", "text", 1.0), "t"]) for run in runs])
    assert all(type(entries.items[0]) is bytes for entries in first[1])
    assert receive.recv() == ("item", [b"one", 7, None])
    assert receive.recv() == ("end", (1, "two"))
    writer.join(timeout=30)


def test_more_buffers_than_one_write_takes(pipe: tuple[Channel, Channel]) -> None:
    """A message of more runs than writev() is given at once (forked._IOV): all of them, in order."""
    receive, send = pipe
    runs = [bytes([index % 256]) * (index % 50) for index in range(3 * forked._IOV + 7)]
    writer = _sent_in_turn(send, [[pickle.PickleBuffer(run) for run in runs]])
    assert receive.recv() == runs
    writer.join(timeout=30)


def test_short_writes_are_finished(pipe: tuple[Channel, Channel], monkeypatch: pytest.MonkeyPatch) -> None:
    """A write cut short (a signal in the middle of a long one) is finished where it stopped: the reader
    sees each message whole."""
    receive, send = pipe
    real = os.writev
    calls = []

    def short(fd: int, buffers: list[memoryview]) -> int:
        calls.append(len(buffers))
        first = memoryview(buffers[0]).cast("B")
        return real(fd, [first[: max(1, min(len(first), 777))]])

    monkeypatch.setattr(forked.os, "writev", short)
    runs = [b"a" * 5000, b"", b"b" * 3]
    messages = [("item", [pickle.PickleBuffer(run) for run in runs]), ("item", "x" * 10_000)]
    writer = _sent_in_turn(send, messages)
    assert receive.recv() == ("item", runs)
    assert receive.recv() == ("item", "x" * 10_000)
    writer.join(timeout=30)
    assert len(calls) > 20


def test_a_closed_writer_ends_the_reader(pipe: tuple[Channel, Channel]) -> None:
    """EOFError at the end of the messages, and in the middle of one whose writer died while writing."""
    receive, send = pipe
    send.send(("item", 1))
    os.write(send.fileno(), forked._HEAD.pack(100, 0) + b"part of it")
    send.close()
    send.close()  # (again: nothing)
    assert receive.recv() == ("item", 1)
    with pytest.raises(EOFError):
        receive.recv()


def test_a_closed_reader_breaks_the_writer(pipe: tuple[Channel, Channel]) -> None:
    """A writer whose reader has gone is told so (the stage stops)."""
    receive, send = pipe
    receive.close()
    with pytest.raises(BrokenPipeError):
        send.send(("item", b"x" * 10))


def test_the_wire_holds_entries_runs_as_buffers() -> None:
    """_to_wire: a LogLine as (text, time), an Entries' runs as PickleBuffers over the same bytes (not
    copied), its other items as they are."""
    run = b"\nrecord\n"
    line = LogLine("s", "vllm line", 2.0)
    wire = _to_wire([line, Entries(2, [run, line]), 5])
    assert wire[0] == ("vllm line", 2.0)
    entries = wire[1]
    assert isinstance(entries, Entries)
    buffer = entries.items[0]
    assert isinstance(buffer, pickle.PickleBuffer)
    assert buffer.raw().obj is run
    assert entries.items[1] is line
    assert wire[2] == 5
