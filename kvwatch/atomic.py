"""Durable state files: write a temporary file, fsync it, rename it over the old one, fsync the folder.

A reader (or a restart after a crash) sees the old content or the new, never half of either. Used for
positions, alert state and notifier spools.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Replace `path`'s content with `text` (UTF-8), atomically and durably."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # The rename itself must reach the disk too; where a folder cannot be opened there is nothing to do.
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def unwritable(directory: Path, *, create: bool) -> str | None:
    """Why state cannot be kept in `directory` (None: it can), in a sentence that names it.

    create=True makes it if need be and writes a file there (the daemon, which would anyway);
    create=False only looks (check-config: it must not leave directories behind).
    """
    try:
        if create:
            directory.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=directory, prefix=".kvwatch-probe.")
            os.close(fd)
            os.unlink(probe)
            return None
        existing = directory
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent  # (the folder it would be created in)
        if not existing.is_dir():
            return f"state_dir {directory}: cannot create it ({existing} is not a directory)"
        if not os.access(existing, os.W_OK | os.X_OK):
            verb = "write there" if existing == directory else f"create it in {existing}"
            return f"state_dir {directory}: cannot {verb} (permission denied)"
    except OSError as err:
        return f"state_dir {directory}: cannot write there ({err.strerror or err})"
    return None
