"""The readers' queue is full at its batch count or at its byte budget, whichever comes first."""

from __future__ import annotations

import queue
import threading
import time

import pytest

from kvwatch.daemon.feed import Feeder, Lines, Mark
from kvwatch.daemon.queue import LineQueue, weight
from kvwatch.model import LogLine
from kvwatch.sources.settings import SourceConfig, StdinSettings


@pytest.fixture
def feeder() -> Feeder:
    """A feeder that is never started (only named by the items)."""
    return Feeder(SourceConfig("f", "vllm", "stdin", StdinSettings()), lambda: None, lambda item: None)


def test_bytes_fill_the_queue_before_its_batches_do(feeder: Feeder) -> None:
    """4 KiB batches in a 10 KiB queue: the third fills it, a fourth waits until one is taken."""
    items = LineQueue(batches=100, max_bytes=10 * 1024)
    batch = Lines(feeder, [b"x" * 1024] * 4, raw=True)
    for _ in range(3):
        items.put_nowait(batch)
    with pytest.raises(queue.Full):
        items.put_nowait(batch)
    assert (items.qsize(), items.bytes) == (3, 12 * 1024)
    waiting = threading.Thread(target=items.put, args=(batch,))
    waiting.start()
    assert items.get() is batch  # (12 KiB -> 8 KiB: room again)
    waiting.join(timeout=10)
    assert not waiting.is_alive()
    assert (items.qsize(), items.bytes) == (3, 12 * 1024)


def test_marks_weigh_nothing_and_a_big_batch_is_taken_by_an_empty_queue(feeder: Feeder) -> None:
    """Marks count as batches only; a batch over the budget still enters an empty queue, and the
    queue is not empty while it holds it."""
    items = LineQueue(batches=3, max_bytes=100)
    big = Lines(feeder, [LogLine("f", "y" * 500)])
    assert (weight(big), weight(Mark(feeder, 7))) == (500, 0)
    assert weight(Lines(feeder, [LogLine("f", "abc"), 4, LogLine("f", "de")])) == 5  # (4: lines skipped)
    items.put_nowait(big)
    with pytest.raises(queue.Full):
        items.put_nowait(Mark(feeder, 7))
    assert items.get_nowait() is big
    for _ in range(3):
        items.put_nowait(Mark(feeder, 7))
    with pytest.raises(queue.Full):
        items.put_nowait(Mark(feeder, 8))
    assert (items.qsize(), items.bytes) == (3, 0)
    deadline = time.monotonic() + 5
    while items.qsize() and time.monotonic() < deadline:
        items.get_nowait()
    with pytest.raises(queue.Empty):
        items.get_nowait()
