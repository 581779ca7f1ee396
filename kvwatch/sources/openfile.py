"""One open log file: bounded reads from an offset, `\\n` line splitting, the held partial line.

`FileTail` (file.py) decides which files to open and when; this module only reads one of them.
Offsets: `read_offset` is how far the file has been read into memory; `committed` is the offset just
after the last complete line handed out, which is what a saved position may claim.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kvwatch.sources.linecap import Clip
from kvwatch.sources.positions import FP_SIZE, FilePosition, Identity, fingerprint

#: Bytes read per os.pread call.
CHUNK = 64 * 1024
#: Not rotated text: compressed, or being compressed (the kubelet writes `<log>.<time>.tmp`, then renames
#: it to `.gz`).
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip", ".tmp")


@dataclass(slots=True)
class FileCounters:
    """Cumulative self-metrics of a file source, plain ints the daemon exports as counters."""

    lines: int = 0
    bytes_read: int = 0
    rotations: int = 0
    truncations: int = 0
    truncated_long_lines: int = 0
    partial_lines_dropped: int = 0
    malformed: int = 0  # physical lines that should have been docker or journald entries and are not


class OpenFile:
    """An open file being read line by line; never blocks, never reads more than asked."""

    def __init__(self, fd: int, offset: int, line_cap: int, counters: FileCounters) -> None:
        """Read `fd` from `offset`; lines longer than `line_cap` bytes are cut (head and tail kept, see
        linecap.py) and counted."""
        self.fd = fd
        self.read_offset = offset
        self.line_cap = line_cap
        self.counters = counters
        self.last_data = 0.0  # clock time of the last read that returned data (set by the tail)
        self._held = Clip(line_cap)  # the partial line (bounded: its head and tail past the cap)
        st = os.fstat(fd)
        self._dev, self._ino = st.st_dev, st.st_ino
        self._head = os.pread(fd, FP_SIZE, 0)

    @classmethod
    def open(cls, path: str, offset: int, line_cap: int, counters: FileCounters) -> OpenFile | None:
        """Open `path` for reading at `offset`, or None if it does not exist."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        return cls(fd, offset, line_cap, counters)

    @property
    def key(self) -> tuple[int, int]:
        """(st_dev, st_ino) of the open file."""
        return self._dev, self._ino

    @property
    def identity(self) -> Identity:
        """The identity of the file from the bytes seen so far (fingerprint grows up to FP_SIZE)."""
        return Identity(self._dev, self._ino, len(self._head), fingerprint(self._head))

    @property
    def committed(self) -> int:
        """The offset just after the last complete line returned."""
        return self.read_offset - self._held.held

    def position(self) -> FilePosition:
        """The saved form of this file's progress."""
        return FilePosition(self.identity, self.committed)

    def size(self) -> int:
        """Current size of the open file (it may have been renamed or unlinked)."""
        return os.fstat(self.fd).st_size

    def written_since(self) -> int:
        """The file's last write (st_mtime_ns): rotated siblings written since are newer files."""
        return os.fstat(self.fd).st_mtime_ns

    def truncated(self) -> bool:
        """Whether the file was truncated under us: smaller than read, or its first bytes changed.

        The second test catches a copytruncate followed by enough new writes to pass our offset
        between two polls, which a size check alone (mtail's) reads as new data mid-line.
        """
        if self.size() < self.read_offset:
            return True
        return bool(self._head) and os.pread(self.fd, len(self._head), 0) != self._head

    def restart(self) -> bool:
        """Start over at 0 after a truncation; returns whether a held partial line was dropped."""
        dropped = bool(self._held)
        self._held.take()
        self.read_offset = 0
        self._head = b""
        return dropped

    def read(self, budget: int) -> tuple[list[bytes], int]:
        """Read up to `budget` bytes (stopping at EOF); return the completed lines, bytes read."""
        lines: list[bytes] = []
        used = 0
        while used < budget:
            data = os.pread(self.fd, min(CHUNK, budget - used), self.read_offset)
            if not data:
                break
            self._grow_head(data)
            self.read_offset += len(data)
            used += len(data)
            lines.extend(self._split(data))
        self.counters.bytes_read += used
        return lines, used

    def flush(self) -> list[bytes]:
        """The held unterminated last line as a line (for a file nobody writes any more), if any."""
        if not self._held:
            return []
        return [self._finish()]

    def close(self) -> None:
        """Close the descriptor."""
        os.close(self.fd)

    def _grow_head(self, data: bytes) -> None:
        """Extend the fingerprint bytes when `data` continues them (read at their end)."""
        have = len(self._head)
        if have < FP_SIZE and self.read_offset <= have < self.read_offset + len(data):
            start = have - self.read_offset
            self._head += data[start : start + FP_SIZE - have]

    def _split(self, data: bytes) -> list[bytes]:
        """Split on `\\n` only, joining the held partial line; hold the new unterminated tail."""
        pieces = data.split(b"\n")
        tail = pieces.pop()
        lines = []
        if pieces and self._held:
            self._hold(pieces[0])  # the first piece completes the held partial line
            lines.append(self._finish())
            del pieces[0]
        # One split in C instead of a slice, a cap check and a copy per line: the pieces are the
        # lines unless one is over the cap or has a `\r` to strip (then each takes the exact path).
        if b"\r" not in data and (not pieces or max(map(len, pieces)) <= self.line_cap):
            lines += pieces
        else:
            for piece in pieces:
                self._hold(piece)
                lines.append(self._finish())
        self._hold(tail)
        return lines

    def _hold(self, piece: bytes) -> None:
        """Append to the partial line (past `line_cap`, its head and tail are kept)."""
        self._held.add(piece)

    def _finish(self) -> bytes:
        """Take the held line: one trailing `\\r` stripped; a cut line counted."""
        line, cut = self._held.take()
        if cut:
            self.counters.truncated_long_lines += 1
        return line[:-1] if line.endswith(b"\r") else line


class Claims:
    """The files open across the tails of one source, and where the ones they closed were left.

    A glob may match a rotated name (`app.log.1`) of a file another tail still drains as
    `app.log`: such a file is not opened twice, and once finished it is continued from where it
    was left, not re-read.
    """

    def __init__(self, remember: int = 256) -> None:
        """Remember the final positions of the last `remember` closed files."""
        self._held: set[tuple[int, int]] = set()
        self.reserved: set[tuple[int, int]] = set()  # saved files while their tails resume
        self._finished: dict[tuple[int, int], FilePosition] = {}
        self._remember = remember

    def holds(self, key: tuple[int, int]) -> bool:
        """Whether some tail has this (dev, ino) open, or will when resumed."""
        return key in self._held or key in self.reserved

    def hold(self, handle: OpenFile) -> None:
        """Record an opened file."""
        self._held.add(handle.key)

    def release(self, handle: OpenFile) -> None:
        """Record a closed file and where it was left."""
        self._held.discard(handle.key)
        self._finished.pop(handle.key, None)
        self._finished[handle.key] = handle.position()
        while len(self._finished) > self._remember:
            del self._finished[next(iter(self._finished))]

    def offset_for(self, fd: int) -> int:
        """Where to start a newly found file: where it was left if finished before, else 0."""
        st = os.fstat(fd)
        pos = self._finished.get((st.st_dev, st.st_ino))
        return pos.offset if pos is not None and pos.identity.matches(fd) else 0


def open_fd(path: str) -> int | None:
    """A read-only descriptor for `path`, or None if it does not exist."""
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None


def end_offset(fd: int) -> int:
    """Where `start_at = "end"` starts: after the last complete line, so no fragment is read."""
    size = os.fstat(fd).st_size
    start = max(size - CHUNK, 0)
    nl = os.pread(fd, size - start, start).rfind(b"\n")
    if nl == -1:
        return 0 if start == 0 else size
    return start + nl + 1


def siblings(path: str) -> list[tuple[str, os.stat_result]]:
    """The rotated names of `path` in its directory (path.1, path-20240101, ...; and stem-N.ext, as
    Ollama's app rotates server.log to server-1.log ... server-5.log), not compressed."""
    directory, base = os.path.split(path)
    stem, dot, ext = base.rpartition(".")
    numbered = f"{stem}-" if dot and stem else None
    found = []
    for name in sorted(os.listdir(directory or ".")):
        rotated = name.startswith((base + ".", base + "-"))
        if not rotated and numbered is not None and name.startswith(numbered) and name.endswith(dot + ext):
            rotated = name[len(numbered) : len(name) - len(dot + ext)].isdecimal()
        if rotated and not name.endswith(_COMPRESSED):
            try:
                found.append((os.path.join(directory, name), os.stat(os.path.join(directory, name))))
            except FileNotFoundError:
                continue
    return found
