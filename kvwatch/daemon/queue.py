"""The queue from the source readers to the pipeline thread, bounded by batches and by their lines' bytes."""

from __future__ import annotations

import queue
from collections import deque
from typing import cast

from kvwatch.daemon.feed import Lines
from kvwatch.model import LogLine

#: Queue capacity in batches (each up to daemon_feed.BATCH = 512 lines).
QUEUE_SIZE = 256
#: Bytes of queued line text at most (a batch that arrives at an empty queue is always taken).
QUEUE_BYTES = 8 << 20


def weight(item: object) -> int:
    """The bytes of line text an item holds (0 for marks, signals and counts of skipped lines)."""
    if not isinstance(item, Lines):
        return 0
    if item.raw:
        return sum(map(len, cast("list[bytes]", item.lines)))
    return sum(len(line.text) for line in item.lines if type(line) is LogLine)


class LineQueue(queue.Queue[object]):
    """A blocking queue that is full at `batches` items or at `max_bytes` bytes of queued lines.

    A backlog of long lines then holds no more memory than one of short lines (`put` blocks: the
    readers' backpressure, nothing is dropped).
    """

    def __init__(self, batches: int = QUEUE_SIZE, max_bytes: int = QUEUE_BYTES) -> None:
        super().__init__(batches)
        self.max_bytes = max_bytes
        self.bytes = 0
        self._weights: deque[int] = deque()

    def qsize(self) -> int:
        """Items waiting."""
        with self.mutex:
            return len(self.queue)

    # Queue.put waits while _qsize() >= maxsize and get while it is 0: over the byte budget the
    # queue reports itself full, and never empty while it holds an item.
    def _qsize(self) -> int:
        count = len(self.queue)
        return self.maxsize if count and self.bytes >= self.max_bytes else count

    def _put(self, item: object) -> None:
        size = weight(item)
        self.queue.append(item)
        self._weights.append(size)
        self.bytes += size

    def _get(self) -> object:
        self.bytes -= self._weights.popleft()
        return self.queue.popleft()
