"""Whole files for replay: plain, docker json-file or gzip (told by content), read in bounded chunks.

Memory stays flat however large the file: a chunk at a time, and a line longer than the cap is cut
(its head and tail kept, the middle dropped: see linecap.py) and counted.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, Protocol

from kvwatch.engines.detect import Detector
from kvwatch.sources import compose, cri
from kvwatch.sources.docker_json import decode_entry, split_logs_t
from kvwatch.sources.framing import HEAD, Batch, Framer, Framing, sniff
from kvwatch.sources.gziplog import CompressedDataError, GzipLog
from kvwatch.sources.linecap import Clip, clip_bytes

CHUNK = 1 << 20
_SUFFIX = re.compile(r"(?:\.gz|\.\d+|\.log|\.jsonl|\.json|\.txt|-json)$")


def source_name(path: str) -> str:
    """The source label for a file: its name without rotation and compression suffixes."""
    name = Path(path).name
    while True:
        stripped = _SUFFIX.sub("", name)
        if stripped == name or not stripped:
            return name
        name = stripped


def spooled(paths: Sequence[str], directory: str) -> list[str]:
    """The paths, with each stream among them (a pipe, `-` or /dev/stdin, a process substitution)
    copied into `directory` first, under its own name: a replay reads a file more than once (its
    head to tell the engine and framing, then the whole of it), and a pipe gives its bytes once.
    Files, directories and missing paths stay as they are (the caller reports what it cannot read)."""
    out = []
    for index, given in enumerate(paths):
        path = "/dev/stdin" if given == "-" else given
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            out.append(path)
            continue
        copy = Path(directory, str(index), Path(path).name)  # (the name gives the source its label)
        copy.parent.mkdir(parents=True)
        with open(path, "rb") as stream, copy.open("wb") as disk:
            shutil.copyfileobj(stream, disk, CHUNK)
        out.append(str(copy))
    return out


def open_log(path: str) -> BinaryIO:
    """Open a file for reading, decompressing gzip (told by its magic bytes, not its name)."""
    # (buffered by HEAD bytes: peek() returns no more than one buffer, and read_head wants HEAD)
    raw = io.BufferedReader(io.FileIO(path), buffer_size=HEAD)  # (the caller closes it)
    if raw.peek(2)[:2] == b"\x1f\x8b":
        return GzipLog(raw)  # type: ignore[return-value]  # (what replay asks of a file, it has)
    return raw


#: What reading a damaged compressed file raises (cut short while being written or copied, or corrupt),
#: once the complete lines before the damage are read: the damage is then reported.
DAMAGED = (CompressedDataError,)


def read_head(stream: BinaryIO) -> bytes:
    """The first bytes of the stream without consuming them from the caller's view (b"" when the
    compressed data is damaged that early)."""
    if isinstance(stream, io.BufferedReader):
        return stream.peek(HEAD)[:HEAD]
    try:
        head = stream.read(HEAD)
    except DAMAGED:
        head = b""
    stream.seek(0)
    return head


def head_text(head: bytes, framing: Framing) -> str:
    """The head decoded the way its framing says, for engine detection."""
    lines = head.split(b"\n")[:-1] or [head]
    if framing == "docker-json":
        entries = (decode_entry(line) for line in lines[:400])
        return "".join(entry.log for entry in entries if entry is not None)
    if framing == "cri":
        return cri.head_text(lines)
    if framing == "compose":
        return compose.head_text(lines)
    if framing == "docker-t":
        return "\n".join(split_logs_t(line)[0].decode("utf-8", "replace") for line in lines)
    return head.decode("utf-8", "replace")


class Reader(Protocol):
    """What batches() reads from: a binary stream's read()."""

    def read(self, size: int = -1, /) -> bytes:
        """Up to `size` bytes; fewer only at the end."""


class ClosedAtEnd:
    """A stream whose read that meets the end closes it. Replay merges its files by time, so each is
    read until its last event is taken; this way a file smaller than a read is closed after its
    first, and a thousand rotated logs need not be open at once."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._damage: CompressedDataError | None = None

    def read(self, size: int = -1, /) -> bytes:
        """Up to `size` bytes (fewer: the end, and the stream is closed); b"" once closed."""
        if self._stream.closed:
            damage, self._damage = self._damage, None
            if damage is not None:
                raise damage  # (a compressed file's damage, found by the read that met the end)
            return b""
        data = self._stream.read(size)
        if size < 0 or len(data) < size:
            self._damage = getattr(self._stream, "damage", None)
            self._stream.close()
        return data


def batches(stream: Reader, framer: Framer, max_line: int) -> Iterator[list[Batch]]:
    """Frame a whole stream, a read at a time; the last line may lack its newline.

    The lines wholly inside a read are framed in place; only a line spanning two reads is copied, and
    one past `max_line` keeps only its head and tail (see linecap.py).
    """
    held = Clip(max_line)  # the start of a line that continues in the next read
    while data := stream.read(CHUNK):
        start = 0
        if held:
            end = data.find(b"\n")
            if end < 0:
                held.add(data)
                continue
            held.add(memoryview(data)[:end])
            line, cut = held.take()
            if cut:
                yield [*framer.feed(line)]
                framer.note_truncated()
            else:
                yield framer.chunk(line + b"\n")
            start = end + 1
        cut_at = data.rfind(b"\n", start)
        if cut_at >= 0:
            if cut_at - start >= max_line and _longest(data, start, cut_at) > max_line:
                yield from _cut_lines(data, start, cut_at + 1, framer, max_line)
            else:
                yield framer.chunk(data, start, cut_at + 1)
            start = cut_at + 1
        if start < len(data):
            held.add(memoryview(data)[start:])
    if held:
        line, cut = held.take()
        yield [*framer.feed(line.removesuffix(b"\r"))]
        if cut:
            framer.note_truncated()
    yield framer.finish()


def _longest(data: bytes, start: int, stop: int) -> int:
    """The length of the longest line in data[start:stop] (only asked of reads longer than the cap)."""
    return max(map(len, data[start:stop].split(b"\n")))


def _cut_lines(data: bytes, start: int, stop: int, framer: Framer, max_line: int) -> Iterator[list[Batch]]:
    """The whole lines of data[start:stop], each past `max_line` cut to its head and tail and counted."""
    for raw in data[start:stop].split(b"\n")[:-1]:
        if len(raw) <= max_line:
            yield framer.chunk(raw + b"\n")
            continue
        yield [*framer.feed(clip_bytes(raw, max_line))]
        framer.note_truncated()


#: The most of a file engine detection reads: its rule decides within 2000 lines or 64 KiB of their
#: text (kvwatch.engines.detect), which a json-file or CRI log's framing makes a few times longer.
DETECT_READ = 16 * HEAD


def detect_file(path: str) -> str | None:
    """The engine the detection rule (kvwatch.engines.detect) chooses for a file, fed its lines decoded
    as the daemon's source decodes them (None: no engine recognised its head)."""
    with open_log(path) as stream:
        try:
            data = stream.read(DETECT_READ)
        except DAMAGED:
            data = b""
    ended = len(data) < DETECT_READ
    if not ended or not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1] if not ended else data + b"\n"
    framing = sniff(data[:HEAD])
    if framing == "docker-json":
        entries = (decode_entry(line) for line in data.split(b"\n")[:-1])
        text = "".join(entry.log for entry in entries if entry is not None)
    else:
        text = head_text(data, framing)
    detector = Detector()
    for line in text.split("\n")[: -1 if text.endswith("\n") else None]:
        if detector.feed(line):
            break
    return detector.end()


def sniff_file(path: str) -> tuple[Framing, str]:
    """Framing and decoded head of a file (for engine detection before the parser is chosen)."""
    with open_log(path) as stream:
        head = read_head(stream)
    framing = sniff(head)
    return framing, head_text(head, framing)
