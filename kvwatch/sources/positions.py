"""Read positions: file identity (device, inode, fingerprint) and offset, saved atomically.

A position file is `<state_dir>/positions/<source>.json`. It is written to a temporary file in the
same directory, fsynced, renamed over the old one and the directory fsynced, so a crash leaves
either the old or the new file, never a torn one; leftover temporaries are ignored by `load` and
removed by the next `save`. The store is format-agnostic (a JSON object per source) so docker and
journald sources can use it too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvwatch.atomic import write_atomic

log = logging.getLogger(__name__)

#: How many leading bytes fingerprint a file; fewer while the file is shorter.
FP_SIZE = 1024
_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def fingerprint(head: bytes) -> str:
    """Hex digest of a file's first bytes."""
    return hashlib.blake2b(head, digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class Identity:
    """Which file: (st_dev, st_ino) and a hash of its first `fp_len` bytes (catches inode reuse)."""

    dev: int
    ino: int
    fp_len: int
    fp: str

    @classmethod
    def of(cls, fd: int) -> Identity:
        """The identity of an open file, fingerprinting up to FP_SIZE bytes."""
        st = os.fstat(fd)
        head = os.pread(fd, FP_SIZE, 0)
        return cls(st.st_dev, st.st_ino, len(head), fingerprint(head))

    def same_inode(self, st: os.stat_result) -> bool:
        """Whether `st` is the same (device, inode), ignoring the fingerprint."""
        return (self.dev, self.ino) == (st.st_dev, st.st_ino)

    def matches(self, fd: int) -> bool:
        """Whether the open file is this one: same inode and the same first `fp_len` bytes."""
        if not self.same_inode(os.fstat(fd)):
            return False
        head = os.pread(fd, self.fp_len, 0)
        return len(head) == self.fp_len and fingerprint(head) == self.fp


@dataclass(frozen=True, slots=True)
class FilePosition:
    """How far a file has been handed out: the offset just after the last line poll() returned."""

    identity: Identity
    offset: int

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict."""
        i = self.identity
        return {"dev": i.dev, "ino": i.ino, "fp_len": i.fp_len, "fp": i.fp, "offset": self.offset}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FilePosition:
        """The inverse of to_json; raises KeyError/TypeError/ValueError on a malformed entry."""
        identity = Identity(int(data["dev"]), int(data["ino"]), int(data["fp_len"]), str(data["fp"]))
        return cls(identity, int(data["offset"]))


class PositionStore:
    """Per-source JSON position files in `<state_dir>/positions/`."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        """Keep positions under `state_dir`; the directory is created on the first save."""
        self.directory = Path(state_dir) / "positions"

    def _path(self, source: str) -> Path:
        """The position file of `source`; the name is checked so it cannot leave the directory."""
        if not _NAME.fullmatch(source) or source.startswith("."):
            raise ValueError(f"source name {source!r} cannot name a position file")
        return self.directory / f"{source}.json"

    def load(self, source: str) -> dict[str, Any] | None:
        """The saved object of `source`, or None when there is none (or it is unreadable: logged)"""
        path = self._path(source)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable positions %s: %s", path, exc)
            return None
        return data if isinstance(data, dict) else None

    def save(self, source: str, data: dict[str, Any]) -> None:
        """Replace the saved object atomically: write a temporary, fsync, rename, fsync the dir."""
        path = self._path(source)
        self.directory.mkdir(parents=True, exist_ok=True)
        for stale in self.directory.glob(f".{source}.json.*.tmp"):
            with contextlib.suppress(OSError):
                stale.unlink()
        write_atomic(path, json.dumps(data, sort_keys=True))

    def forget(self, source: str) -> None:
        """Delete the saved object of `source` (a container whose pod is gone), if any."""
        with contextlib.suppress(FileNotFoundError):
            self._path(source).unlink()
