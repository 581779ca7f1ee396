"""FileTail: follow one path across rename rotation, copytruncate, deletion and re-creation.

Each poll() is one bounded, non-blocking step (mtail's loop, extended):
  1. Files rotated away are read to EOF ("draining"). One is closed once the file now at the path
     has shown data before this drain: a writer reopens only after its last write to the old file,
     so by then the old file is complete. A drained file nobody replaced is closed after
     `drain_timeout` seconds idle.
  2. The current file is checked for truncation (size < offset, or its first bytes changed:
     copytruncate). A truncated file restarts at 0 and its held partial line is dropped and counted:
     the rest of that line is lost or sits at the start of the new content, and a fragment
     ("Running: 1" of "Running: 12") would parse into a wrong number.
  3. The current file is read until EOF or the byte budget. At EOF, stat(path): a different inode
     means a rename rotation, so the old file joins the draining list (late writes still arrive) and
     the new file is read from offset 0 in the same poll; a missing path means deletion or a rename
     not yet followed by a create, so the old file drains while the path is retried on each poll.
Before a new file at the path is opened, rotated siblings written since the last file we had and never
opened (two rotations between polls, or while kvwatch was down) are queued for draining, oldest first
(see _catch_up). A file rotated away that is closed for good gets its unterminated last line handed out
as a line: nothing will ever complete it. Any other file opened at the path after start is read from
its beginning.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Literal

from kvwatch.model import LogLine
from kvwatch.sources.compressed import compressed_after, find_compressed
from kvwatch.sources.linecap import LINE_CAP
from kvwatch.sources.openfile import Claims, FileCounters, OpenFile, end_offset, open_fd, siblings
from kvwatch.sources.positions import FilePosition

log = logging.getLogger(__name__)

StartAt = Literal["end", "beginning"]
READ_BUDGET = 1024 * 1024
DRAIN_TIMEOUT = 300.0


class FileTail:
    """Follows one path; poll() returns the complete lines available now (≤ `read_budget` bytes)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        source: str,
        *,
        start_at: StartAt = "end",
        saved: Sequence[FilePosition] | None = None,
        counters: FileCounters | None = None,
        claims: Claims | None = None,
        line_cap: int = LINE_CAP,
        read_budget: int = READ_BUDGET,
        drain_timeout: float = DRAIN_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Resume from `saved` (None: never seen; []: seen without a file), else `start_at`."""
        self.path = os.fspath(path)
        self.source = source
        self.counters = counters if counters is not None else FileCounters()
        self.bytes_behind = 0
        self.error: str | None = None
        self._claims = claims if claims is not None else Claims()
        self._cap, self._budget = line_cap, read_budget
        self._drain_timeout, self._clock = drain_timeout, clock
        self._current: OpenFile | None = None
        self._draining: list[OpenFile] = []
        self._opened_before = False
        try:
            self._resume(saved, start_at)
        except OSError as exc:
            self.error = f"{self.path}: {exc.strerror or exc}"

    def poll(self) -> list[LogLine]:
        """One step: read what is available now; never raises (an I/O error is kept in `error`)."""
        return [LogLine(self.source, line.decode("utf-8", "replace")) for line in self.poll_raw()]

    def poll_raw(self) -> list[bytes]:
        """poll() without decoding: the lines as bytes (the daemon decodes only those it parses)."""
        raw: list[bytes] = []
        try:
            self._poll(raw)
            self.error = None
        except OSError as exc:  # lines already taken from buffers are still returned below
            self.error = f"{self.path}: {exc.strerror or exc}"
        self.counters.lines += len(raw)
        return raw

    def position(self) -> list[FilePosition]:
        """Where every open file stands, oldest first; counting only lines already returned."""
        handles = [*self._draining, *([self._current] if self._current else [])]
        return [h.position() for h in handles]

    def idle(self) -> bool:
        """Whether no file is open (the path is missing and nothing is left to drain)."""
        return self._current is None and not self._draining

    def close(self) -> None:
        """Close every open file."""
        for handle in [*self._draining, *([self._current] if self._current else [])]:
            self._claims.release(handle)
            handle.close()
        self._draining, self._current = [], None

    def _resume(self, saved: Sequence[FilePosition] | None, start_at: StartAt) -> None:
        """Open the path's file at its saved offset, and rotated-away saved files as draining."""
        fd = open_fd(self.path)
        for pos in saved or ():
            if fd is not None and self._current is None and pos.identity.matches(fd):
                self._current = self._adopt(fd, pos.offset)  # a too-big offset reads as truncation
            else:
                self._find_rotated(pos)
        if fd is None or self._current is not None:
            return
        if saved is None and start_at == "end":
            self._current = self._adopt(fd, end_offset(fd))
        else:  # new since the last save, or asked for: from its beginning, open now so that a
            os.close(fd)  # rotation before the first poll is followed like any other
            self._current = self._open_new()

    def _find_rotated(self, pos: FilePosition) -> None:
        """Find a saved file among the rotated siblings (path.1, path-2024...) and drain it."""
        for sibling, st in siblings(self.path):
            fd = open_fd(sibling) if pos.identity.same_inode(st) else None
            if fd is not None and pos.identity.matches(fd):
                self._retire(self._adopt(fd, pos.offset), self._clock())
                return
            if fd is not None:
                os.close(fd)
        compressed = find_compressed(self.path, pos, self._cap, self.counters)  # (kubelet gzips rotated logs)
        if compressed is not None:
            self._claims.hold(compressed)
            self._retire(compressed, self._clock())
            return
        log.warning("%s: a file read to offset %d is gone; its later lines are lost", self.path, pos.offset)

    def _catch_up(self, last: OpenFile) -> bool:
        """Queue the rotated siblings written since `last` and never read; whether any were found.

        Two rotations between polls (or while kvwatch was down) leave a file we never had open,
        between `last` and the one now at the path: it is found by name and mtime (>= the last
        write to `last`), and drained from 0, oldest first, before the new file is read.
        """
        since = last.written_since()
        # (a file found compressed: those compressed after it were rotated after it, and never read)
        later = compressed_after(self.path, last, self._claims.holds, self._cap, self.counters)
        for handle in later:
            self.counters.rotations += 1
            self._claims.hold(handle)
            self._retire(handle, self._clock())
        try:
            at_path = os.stat(self.path)
        except FileNotFoundError:
            at_path = None
        found = []
        for sibling, st in siblings(self.path):
            key = (st.st_dev, st.st_ino)
            if st.st_mtime_ns < since or self._claims.holds(key):
                continue
            if at_path is None or key != (at_path.st_dev, at_path.st_ino):
                found.append((st.st_mtime_ns, sibling))
        for _, sibling in sorted(found):
            fd = open_fd(sibling)
            if fd is not None:
                self.counters.rotations += 1  # each file rotated in between was one rotation we missed
                self._retire(self._adopt(fd, self._claims.offset_for(fd)), self._clock())
        return bool(found) or bool(later)

    def _poll(self, raw: list[bytes]) -> None:
        """Drain rotated-away files, then follow the current one; see the module docstring."""
        now = self._clock()
        newer_has_data = self._current is not None and self._current.size() > 0
        budget = self._drain(raw, self._budget, newer_has_data, now)
        if budget > 0:
            self._follow(raw, budget)
        handles = [*self._draining, *([self._current] if self._current else [])]
        self.bytes_behind = sum(max(h.size() - h.read_offset, 0) for h in handles)

    def _drain(self, raw: list[bytes], budget: int, newer_has_data: bool, now: float) -> int:
        """Read the draining files; close those complete (step 1). Returns the budget left."""
        for handle in list(self._draining):
            lines, used = handle.read(budget)
            raw.extend(lines)
            budget -= used
            if used:
                handle.last_data = now
            if budget <= 0:
                break
            if newer_has_data or now - handle.last_data >= self._drain_timeout:
                raw.extend(handle.flush())
                self._draining.remove(handle)
                self._claims.release(handle)
                handle.close()
        return budget

    def _follow(self, raw: list[bytes], budget: int) -> None:
        """Read the current file; at EOF check the path, moving on to a new file (steps 2 and 3)."""
        while budget > 0:
            if self._current is None:
                self._current = self._open_new()
                if self._current is None:
                    return
            current = self._current
            if current.truncated():
                self.counters.truncations += 1
                if current.restart():
                    self.counters.partial_lines_dropped += 1
            lines, used = current.read(budget)
            raw.extend(lines)
            budget -= used
            if budget <= 0 or not self._path_changed(current):
                return

    def _path_changed(self, current: OpenFile) -> bool:
        """At EOF: whether the path now names another file (a rename rotation) to read at once."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._retire(current, self._clock())  # deleted or renamed away: keep reading late writes
            return False
        if (st.st_dev, st.st_ino) == current.key:
            return False
        self._retire(current, self._clock())
        return True

    def _open_new(self) -> OpenFile | None:
        """Open the file now at the path, from its beginning (or where a sibling tail left it)."""
        fd = open_fd(self.path)
        if fd is None:
            return None
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        for handle in self._draining:  # renamed back: it is our own draining file
            if handle.key == key:
                os.close(fd)
                self._draining.remove(handle)
                return handle
        if self._claims.holds(key):  # another tail drains it under its old name; wait for it
            os.close(fd)
            return None
        if self._draining and self._catch_up(self._draining[-1]):
            os.close(fd)  # read the files rotated in between first; open this one next poll
            return None
        if self._opened_before:
            self.counters.rotations += 1
        return self._adopt(fd, self._claims.offset_for(fd))

    def _adopt(self, fd: int, offset: int) -> OpenFile:
        """Wrap an open descriptor at `offset` and claim it."""
        handle = OpenFile(fd, offset, self._cap, self.counters)
        self._claims.hold(handle)
        self._opened_before = True
        return handle

    def _retire(self, handle: OpenFile, now: float) -> None:
        """Move a file that is no longer at the path to the draining list."""
        handle.last_data = now
        self._draining.append(handle)
        if handle is self._current:
            self._current = None
