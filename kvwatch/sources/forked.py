"""Framing a large file in a forked child, so reading, gunzipping, searching and decoding overlap parsing.

Replay is two sequential stages: framing (read, find the marker lines, decode their entries, count the
rest) and parsing plus metrics and detectors. Parsing is one timeline and stays in one process, but
framing needs nothing from it, so for a big file a forked child frames while the parent parses, on a
second core. The child sends each read's batches in order through a pipe (a LogLine as a plain
(text, time) pair, the rest as they are); the parent sees exactly the batches `batches()` would give,
so the results are the same, only sooner. Small files, and platforms without fork, frame inline.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator
from multiprocessing.connection import Connection

from kvwatch.model import LogLine
from kvwatch.sources.framing import Batch, Framer
from kvwatch.sources.wholefile import DAMAGED, batches, open_log, read_head

#: Files smaller than this frame inline: a fork and a pipe cost more than they save.
FORK_MIN_BYTES = 32 << 20

#: What crosses the pipe for one Batch: a LogLine travels as (text, time).
Wire = int | tuple[str, float | None] | Batch


def _to_wire(group: list[Batch]) -> list[Wire]:
    return [(item.text, item.time) if isinstance(item, LogLine) else item for item in group]


def _damage(err: Exception) -> str:
    return f"the compressed data ends early or is corrupt ({err}); replayed the lines before it"


def _child(path: str, framer: Framer, max_line: int, out: Connection) -> None:
    """Frame the whole file into the pipe: ("batches", items)*, then ("end", (truncated, damage)) or
    ("error", exc)."""
    # Ctrl-C reaches the whole process group: the parent stops and kills this child, which need not
    # print a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        damage = None
        try:
            with open_log(path) as stream:
                for group in batches(stream, framer, max_line):
                    out.send(("batches", _to_wire(group)))
        except DAMAGED as err:
            damage = _damage(err)
        out.send(("end", (framer.truncated, damage)))
    except Exception as err:  # the parent raises it as its own
        out.send(("error", err))
    finally:
        out.close()


class FramedFile:
    """A whole file's batches, framed in a child process when it is big enough; after them, `truncated`
    (lines cut at the size cap) and `damage` (why a compressed file's data ended early, if it did)."""

    def __init__(self, path: str, framer: Framer, max_line: int) -> None:
        self.path, self.framer, self.max_line = path, framer, max_line
        self.truncated = 0
        self.damage: str | None = None

    def batches(self) -> Iterator[list[Batch]]:
        """The batches of each read, in order (read inline or from the child)."""
        if not _forkable(self.path) or self._every_line():
            try:
                with open_log(self.path) as stream:
                    yield from batches(stream, self.framer, self.max_line)
            except DAMAGED as err:
                self.damage = _damage(err)
            self.truncated = self.framer.truncated
            return
        yield from self._from_child()

    def _every_line(self) -> bool:
        # A dense plain log (llama.cpp -lv 4) hands every line to the parser: framing is a decode and a
        # split, cheaper than pickling every line through the pipe.
        with open_log(self.path) as stream:
            return self.framer.every_line(read_head(stream))

    def _from_child(self) -> Iterator[list[Batch]]:
        context = multiprocessing.get_context("fork")
        receive, send = context.Pipe(duplex=False)
        child = context.Process(
            target=_child,
            args=(self.path, self.framer, self.max_line, send),
            name="kvwatch-framer",
            daemon=True,
        )
        child.start()
        send.close()  # the parent's copy: the child's end alone keeps the pipe open
        source = self.framer.source
        try:
            while True:
                try:
                    kind, payload = receive.recv()
                except EOFError:
                    raise RuntimeError(f"{self.path}: the framing process ended without a result") from None
                if kind == "batches":
                    yield [LogLine(source, *item) if type(item) is tuple else item for item in payload]
                elif kind == "end":
                    self.truncated, self.damage = payload
                    return
                else:
                    raise payload
        finally:
            receive.close()
            if child.is_alive():
                child.kill()  # the parent stopped early (an error downstream): nothing more is wanted
            child.join()


def _forkable(path: str) -> bool:
    """Whether this file is worth a child: big enough, and fork available (not on macOS or Windows)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return os.path.getsize(path) >= FORK_MIN_BYTES
    except OSError:
        return False  # (opening it inline reports the error)
