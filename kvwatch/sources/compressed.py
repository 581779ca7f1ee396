"""A rotated file found compressed: the kubelet (and logrotate's `compress`) gzips rotated logs.

A file read to some offset, then rotated and compressed while kvwatch was down, is found again among
the path's `.gz` siblings by the fingerprint of its first bytes (its identity's inode is gone with the
original) and read on from that offset of its decompressed bytes, so its later lines are not lost.
It is decoded by kvwatch.sources.gziplog.GzipLog, as replay decodes one: a file cut short or corrupt
(the node lost power while the kubelet compressed it) yields every complete line before the damage,
and the damage is logged with the file's name and where it is.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import BinaryIO

from kvwatch.sources.gziplog import CompressedDataError, GzipLog
from kvwatch.sources.openfile import CHUNK, FileCounters, OpenFile, open_fd
from kvwatch.sources.positions import FP_SIZE, FilePosition, Identity, fingerprint

log = logging.getLogger(__name__)

#: What reading a damaged gzip file raises, once the complete lines before the damage are read (OSError:
#: the disk's own trouble).
_DAMAGED = (CompressedDataError, OSError)


class CompressedFile(OpenFile):
    """A compressed rotated file, read like an OpenFile from an offset of its decompressed bytes; its
    identity (and saved position) stays the original's, so it is found again after another restart."""

    def __init__(
        self,
        fd: int,
        identity: Identity,
        offset: int,
        line_cap: int,
        counters: FileCounters,
        *,
        path: str = "",
    ) -> None:
        """Read the gzip file open at `fd` (at `path`), which holds the file `identity`, from decompressed
        `offset`."""
        super().__init__(fd, offset, line_cap, counters)
        self.path = path
        self._original = identity
        self._stream = GzipLog(_rewound(fd))
        self._ended = False
        left = offset
        try:
            while left > 0:  # (a compressed stream is read up to an offset, not sought)
                skipped = len(self._stream.read(min(CHUNK, left)))
                if not skipped:
                    break
                left -= skipped
        except _DAMAGED as exc:
            log.warning("%s: damaged before offset %d, where its reading resumes: %s", path, offset, exc)
            self._ended = True

    @property
    def identity(self) -> Identity:
        """The original file's identity (what its saved position names)."""
        return self._original

    def position(self) -> FilePosition:
        """How far its decompressed bytes were handed out, under the original's identity."""
        return FilePosition(self._original, self.committed)

    def size(self) -> int:
        """Unknown without decompressing it all: what was read (nothing counts as behind)."""
        return self.read_offset

    def truncated(self) -> bool:
        """A compressed file is never written again."""
        return False

    def written_since(self) -> int:
        """0: the original's last write is unknown; a rotation compresses the older files first, so
        every rotated sibling still uncompressed was written after it."""
        return 0

    def read(self, budget: int) -> tuple[list[bytes], int]:
        """Up to `budget` decompressed bytes (stopping at the end, or at damage); the completed lines."""
        lines: list[bytes] = []
        used = 0
        while used < budget and not self._ended:
            try:
                data = self._stream.read(min(CHUNK, budget - used))
            except _DAMAGED as exc:
                log.warning("%s: %s; its lines before that were read", self.path, exc)
                data = b""
            if not data:
                self._ended = True
                break
            self.read_offset += len(data)
            used += len(data)
            lines.extend(self._split(data))
        self.counters.bytes_read += used
        return lines, used

    def close(self) -> None:
        """Close the stream and the descriptor."""
        self._stream.close()
        super().close()


def _compressed_siblings(path: str) -> list[str]:
    """The paths of `path`'s compressed rotated siblings (`path.<suffix>.gz`), by name."""
    directory, base = os.path.split(path)
    try:
        names = sorted(os.listdir(directory or "."))
    except OSError:
        return []
    return [
        os.path.join(directory, name)
        for name in names
        if name.startswith((base + ".", base + "-")) and name.endswith(".gz")
    ]


def _rewound(fd: int) -> BinaryIO:
    """A file object of its own over `fd`'s file, at its start (a dup shares the offset: rewound)."""
    stream = os.fdopen(os.dup(fd), "rb")
    stream.seek(0)
    return stream


def head_of(fd: int, size: int = FP_SIZE) -> bytes:
    """The first `size` decompressed bytes of the gzip file open at `fd` (fewer when it is damaged
    there: the complete lines before the damage)."""
    try:
        with GzipLog(_rewound(fd)) as stream:
            return stream.read(size)
    except _DAMAGED:
        return b""


def compressed_after(
    path: str, last: OpenFile, held: Callable[[tuple[int, int]], bool], line_cap: int, counters: FileCounters
) -> list[CompressedFile]:
    """When `last` is a file found compressed: `path`'s other compressed rotated siblings compressed after
    it (rotated after it, since the kubelet and logrotate compress in order) and not `held`, opened at
    their beginning, oldest first; else none."""
    if not isinstance(last, CompressedFile):
        return []
    since = os.fstat(last.fd).st_mtime_ns
    found = []
    for sibling in _compressed_siblings(path):
        fd = open_fd(sibling)
        if fd is None:
            continue
        st = os.fstat(fd)
        if st.st_mtime_ns < since or held((st.st_dev, st.st_ino)):
            os.close(fd)
            continue
        head = head_of(fd, FP_SIZE)
        identity = Identity(st.st_dev, st.st_ino, len(head), fingerprint(head))
        handle = CompressedFile(fd, identity, 0, line_cap, counters, path=sibling)
        found.append((st.st_mtime_ns, sibling, handle))
    return [handle for _, _, handle in sorted(found, key=lambda each: each[:2])]


def find_compressed(
    path: str, saved: FilePosition, line_cap: int, counters: FileCounters
) -> CompressedFile | None:
    """The saved file among `path`'s compressed rotated siblings (`path.<suffix>.gz`), by the fingerprint
    of its first bytes, opened at its saved offset; None when none holds it."""
    identity = saved.identity
    for sibling in _compressed_siblings(path):
        fd = open_fd(sibling)
        if fd is None:
            continue
        head = head_of(fd, identity.fp_len)
        if len(head) == identity.fp_len and fingerprint(head) == identity.fp:
            return CompressedFile(fd, identity, saved.offset, line_cap, counters, path=sibling)
        os.close(fd)
    return None
