"""Work on a large file in a forked child, so reading and framing (or parsing too) overlap the rest.

Replay is sequential stages: framing (read, find the marker lines, decode their entries, count the
rest), parsing, then metrics and detectors. Parsing is one timeline per source and the rest one for
all of them, but neither needs the stage before it to be in the same process: `in_child` runs a
generator in a forked child and yields its items, in order, through a pipe. A big file is framed in a
child while the parent parses (`FramedFile`); a big dense file (llama.cpp -lv 4, where every line is
parsed and few make an event) is framed and parsed in a child while the parent runs metrics and
detectors (`FramedFile.parse_ahead`, see replay), as is a big docker json-file log. The parent sees
exactly what the inline path gives, so the results are the same, only sooner. Small files, and
platforms without fork, stay inline (kvwatch.replay.speedups says how big is big).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Generator, Iterator
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from kvwatch.model import LogLine
from kvwatch.replay.files import DAMAGED, ClosedAtEnd, batches, open_log, read_head
from kvwatch.replay.speedups import Speedups
from kvwatch.sources.framing import Batch, Framer

#: What crosses the pipe for one Batch: a LogLine travels as (text, time).
Wire = int | tuple[str, float | None] | Batch

Item = TypeVar("Item")
Result = TypeVar("Result")


def _to_wire(group: list[Batch]) -> list[Wire]:
    """A read's batches for the pipe: a LogLine as (text, time)."""
    return [(item.text, item.time) if type(item) is LogLine else item for item in group]


def _damage(err: Exception) -> str:
    return f"{err}; replayed the complete lines before it"


#: The parent's ends of its children's pipes. A child closes its copies at once: while one holds the
#: end it writes to, or a sibling's, a child whose parent died unannounced (SIGKILL) would block on a
#: full pipe for ever; with none, its next write fails and it ends.
_READ_ENDS: set[Connection] = set()

#: The signals held back while a child is forked (see _received).
_HELD = {signal.SIGINT, signal.SIGTERM}


def _child(work: Callable[[], Generator[Any, None, Any]], out: Connection) -> None:
    """Run `work` into the pipe: ("item", item)*, then ("end", its return value) or ("error", exc)."""
    for end in _READ_ENDS:
        end.close()
    # Everything the parent made is kept for the child's life: the collector need not walk it again at
    # each full collection (nor, walking it, copy its pages from the parent's).
    gc.freeze()
    # Ctrl-C reaches the whole process group: the parent stops and kills this child, which need not
    # print a traceback of its own. SIGTERM ends it at once, whatever the parent does about its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)  # (see _received; a pending SIGINT is dropped)
    try:
        items = work()
        while True:
            try:
                item = next(items)
            except StopIteration as stop:
                _send(out, ("end", stop.value))
                return
            if not _send(out, ("item", item)):
                return
    except Exception as err:  # the parent raises it as its own
        _send(out, ("error", err))
    finally:
        out.close()


def _send(out: Connection, message: tuple[str, Any]) -> bool:
    """Send `message` to the parent; False if it can no longer read (it ended, or was killed by its own
    parent: a framing child's parsing child): nothing more is wanted, and nothing is left to say."""
    try:
        out.send(message)
    except BrokenPipeError:
        return False
    return True


def in_child(work: Callable[[], Generator[Item, None, Result]], name: str) -> Generator[Item, None, Result]:
    """The items of `work()` made in a forked child, in order; then its return value.

    The child starts at once, not at the first item asked for: it reads while the caller gets the rest
    ready (replay imports the pipeline meanwhile). Items and the result are pickled; an exception in the
    child is raised here. Closing the generator (a caller that stops early) kills the child.
    """
    received = _received(work, name)
    next(received)  # forks, and returns without waiting for an item
    return received  # type: ignore[return-value]  # (its first item, the start, was taken)


def _received(
    work: Callable[[], Generator[Item, None, Result]], name: str
) -> Generator[Item | None, None, Result]:
    """in_child's generator: None once the child is started, then the child's items and result."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(work, send), name=name, daemon=True)
    # Ctrl-C and SIGTERM are held back while forking: a child interrupted before it sets its own
    # handlers would run the parent's (a stray traceback), and the parent gets them the moment the
    # mask is restored.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    _READ_ENDS.add(receive)
    try:
        child.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    send.close()  # the parent's copy: the child's end alone keeps the pipe open
    try:
        yield None  # (inside the try: a generator closed from here on kills the child)
        while True:
            try:
                kind, payload = receive.recv()
            except EOFError:
                raise RuntimeError(f"{name}: the child process ended without a result") from None
            if kind == "item":
                yield payload
            elif kind == "end":
                return payload  # type: ignore[no-any-return]
            else:
                raise payload
    finally:
        _READ_ENDS.discard(receive)
        receive.close()
        if child.is_alive():
            child.kill()  # the parent stopped early (an error downstream): nothing more is wanted
        child.join()


class FramedFile:
    """A whole file's batches, framed in a child process when it is big enough; after them, `truncated`
    (lines cut at the size cap) and `damage` (why a compressed file's data ended early, if it did)."""

    def __init__(self, path: str, framer: Framer, max_line: int, speedups: Speedups) -> None:
        self.path, self.framer, self.max_line, self.speedups = path, framer, max_line, speedups
        self.fork = True  # False: never a child (the replay has as many as it may run)
        self.truncated = 0
        self.damage: str | None = None
        self._dense: bool | None = None

    @property
    def parse_ahead(self) -> bool:
        """Whether the caller should frame and parse this file in a child (`in_child`): a big dense log,
        or a docker json-file log.

        Every line of a dense log goes to the parser and few make an event, so the events cross the pipe
        cheaply where lines would not. A json-file log's framing is light next to what the parent has
        to do (vLLM's: the metrics and windows of every stats line; LMCache's records, which cross
        undecoded, are read by the parser), so the child parses too. `batches()` then frames inline (in
        that child).
        """
        return self.forks and (self._every_line() or self.framer.framing == "docker-json")

    @property
    def forks(self) -> bool:
        """Whether a child works on this file (frames it, or parses it too): a big one (small files stay
        inline: a fork and a pipe cost more than they save), unless `fork` says no."""
        big, dense = self.speedups.fork_bytes, self.speedups.dense_fork_bytes
        if not self.fork or (big is None and dense is None):
            return False
        size = _forkable_size(self.path)
        return (big is not None and size >= big) or (
            dense is not None and size >= dense and self._every_line()
        )

    def batches(self) -> Iterator[list[Batch]]:
        """The batches of each read, in order: read inline, or from a child started now."""
        if not self.forks or self.parse_ahead:
            return self._inline()
        return self._from_child(in_child(self._framed, "kvwatch-framer"))

    def _inline(self) -> Iterator[list[Batch]]:
        try:
            with open_log(self.path) as stream:
                yield from batches(ClosedAtEnd(stream), self.framer, self.max_line)
        except DAMAGED as err:
            self.damage = _damage(err)
        self.truncated = self.framer.truncated

    def _every_line(self) -> bool:
        # A dense plain log (llama.cpp -lv 4) hands every line to the parser: framing is a decode and a
        # split, cheaper than pickling every line through the pipe.
        if self._dense is None:
            with open_log(self.path) as stream:
                self._dense = self.framer.every_line(read_head(stream))
        return self._dense

    def _from_child(
        self, framed: Generator[list[Wire], None, tuple[int, str | None]]
    ) -> Iterator[list[Batch]]:
        source = self.framer.source
        try:
            while True:
                wire = next(framed)
                yield [LogLine(source, *item) if isinstance(item, tuple) else item for item in wire]
        except StopIteration as end:
            self.truncated, self.damage = end.value
        finally:
            framed.close()

    def _framed(self) -> Generator[list[Wire], None, tuple[int, str | None]]:
        """(In the child) each read's batches as they cross the pipe; then (truncated, damage)."""
        damage = None
        try:
            with open_log(self.path) as stream:
                for group in batches(stream, self.framer, self.max_line):
                    yield _to_wire(group)
        except DAMAGED as err:
            damage = _damage(err)
        return self.framer.truncated, damage


def _forkable_size(path: str) -> int:
    """The file's size where a child may work on it (fork available: not on macOS or Windows), else 0."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # (opening it inline reports the error)
