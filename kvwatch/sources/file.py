"""The `file` source: a path or a glob, one FileTail per matching file, with saved positions.

Which start a file gets:
  - listed in the saved positions: resumed there (see FileTail: same identity, or found rotated);
  - first start (no saved positions, or saved for another pattern): the source's `start_at`;
  - a restart, but the file is not in the saved positions: it appeared while kvwatch was down, so it
    is read from its beginning, as is every file that appears while running.
Each file is read in its framing, told from its head as replay tells it (see
kvwatch.sources.fileframing): plain text, a docker json-file log or `docker logs -t` output.
A glob should match live files only (`*.log`, not `*.log*`); if it also matches rotated names, a
file already being read under its old name is not opened twice (see Claims). With `newest_only` (the
config's `follow = "newest"`, for servers that start a new file per day or per start in dated folders,
as LM Studio's `server-logs/YYYY-MM/YYYY-MM-DD.N.log`) only the match whose name sorts last, numbers
compared as numbers, is followed; the one it replaces is read to its end, then closed.
"""

from __future__ import annotations

import glob
import logging
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kvwatch.model import LogLine
from kvwatch.sources.docker_json import Entry, entries_from_json, entries_to_json
from kvwatch.sources.fileframing import FileFraming, Framed, decoded
from kvwatch.sources.filetail import (
    DRAIN_TIMEOUT,
    READ_BUDGET,
    FileTail,
    StartAt,
)
from kvwatch.sources.linecap import LINE_CAP
from kvwatch.sources.openfile import Claims, FileCounters
from kvwatch.sources.positions import FilePosition

__all__ = ["FileCounters", "FileSource", "FileTail", "StartAt"]

log = logging.getLogger(__name__)
_DIGITS = re.compile(r"(\d+)")


class FileSource:
    """One configured `file` source; poll() returns the lines of all its files."""

    def __init__(
        self,
        name: str,
        pattern: str,
        *,
        start_at: StartAt = "end",
        saved: Mapping[str, Any] | None = None,
        line_cap: int = LINE_CAP,
        read_budget: int = READ_BUDGET,
        drain_timeout: float = DRAIN_TIMEOUT,
        markers: tuple[str, ...] | None = None,
        newest_only: bool = False,
    ) -> None:
        """Open the files matching `pattern`, resuming from `saved` (an earlier position()); `markers`:
        the parser's, to skip docker-framed lines holding none undecoded (see FileFraming)."""
        self.name = name
        self._markers = markers
        self.pattern = pattern
        self.newest_only = newest_only
        self.counters = FileCounters()
        self.bytes_behind = 0
        self.error: str | None = None
        self.tails: dict[str, FileTail] = {}
        self._framing: dict[str, FileFraming] = {}
        self._claims = Claims()
        self._options: dict[str, Any] = {
            "line_cap": line_cap,
            "read_budget": read_budget,
            "drain_timeout": drain_timeout,
        }
        state = _decode(saved, pattern)
        pending = _pending(saved) if state is not None else {}
        # Every saved file is claimed before any tail opens a new one: a tail catching up on
        # rotated siblings must not take a file that another tail resumes at its saved offset.
        self._claims.reserved = {
            (p.identity.dev, p.identity.ino) for ps in (state or {}).values() for p in ps
        }
        for path in sorted(state or {}):
            self._add(path, (state or {})[path], start_at, pending.get(path, []))
        self._claims.reserved.clear()
        for path in self._matches():
            if path not in self.tails:
                self._add(path, None if state is None else [], start_at)

    def poll(self) -> list[LogLine]:
        """One step over every file: discover new ones, read each, forget those gone for good."""
        return decoded(self.name, self.poll_raw())

    def poll_raw(self) -> list[Framed]:
        """poll() without decoding plain text: its lines as bytes (the daemon decodes only those it
        parses); a docker-framed file's lines come decoded, with docker's time, or as a count of lines
        that hold no marker."""
        matches = self._matches()
        for path in matches:
            if path not in self.tails:  # appeared after start: read from its beginning
                self._add(path, [], "beginning")
        lines: list[Framed] = []
        errors = []
        for path, tail in list(self.tails.items()):
            framing = self._framing[path]
            raw = tail.poll_raw()
            lines.extend(framing.frame(raw, path))
            if tail.error:
                errors.append(tail.error)
            # (newest only: a newer file took over, and this one is read to its end)
            superseded = self.newest_only and not raw and tail.bytes_behind == 0
            if (tail.idle() or superseded) and path not in matches:
                tail.close()
                del self.tails[path]
                lines.extend(self._framing.pop(path).finish())
        self.error = "; ".join(errors) or None
        self.bytes_behind = sum(tail.bytes_behind for tail in self.tails.values())
        return lines

    def set_markers(self, markers: tuple[str, ...] | None) -> None:
        """The parser's markers, once known (an auto source chose its engine): see FileFraming."""
        self._markers = markers
        for framing in self._framing.values():
            framing.set_markers(markers)

    def watched(self) -> list[str]:
        """What to watch for changes: the pattern's directory."""
        return [self.pattern]

    def position(self) -> dict[str, Any]:
        """The JSON object to save (PositionStore.save) once the returned lines are processed."""
        files = {path: [p.to_json() for p in tail.position()] for path, tail in self.tails.items()}
        saved: dict[str, Any] = {"pattern": self.pattern, "files": files}
        pending = {path: f.lines.pending() for path, f in self._framing.items()}
        if any(pending.values()):  # (the head of a line docker cut, read before the position)
            saved["pending"] = {path: entries_to_json(e) for path, e in pending.items() if e}
        return saved

    def close(self) -> None:
        """Close every file."""
        for tail in self.tails.values():
            tail.close()

    def _add(
        self, path: str, saved: list[FilePosition] | None, start_at: StartAt, pending: Sequence[Entry] = ()
    ) -> None:
        """Start following `path` (`pending`: the saved entries of a line docker cut)."""
        self._framing[path] = FileFraming(
            self.name, self._options["line_cap"], self.counters, pending=pending, markers=self._markers
        )
        self.tails[path] = FileTail(
            path,
            self.name,
            start_at=start_at,
            saved=saved,
            counters=self.counters,
            claims=self._claims,
            **self._options,
        )

    def _matches(self) -> list[str]:
        """The regular files matching now; a plain path always matches (it may appear)."""
        if not glob.has_magic(self.pattern):
            return [self.pattern]
        found = sorted(p for p in glob.glob(self.pattern) if os.path.isfile(p))
        if self.newest_only and found:
            return [max(found, key=natural)]
        return found


def natural(path: str) -> tuple[tuple[int, str], ...]:
    """A sort key comparing the numbers in a path as numbers (`2025-09-23.10.log` after `.9.log`)."""
    return tuple((int(part), "") if part.isdecimal() else (-1, part) for part in _DIGITS.split(path) if part)


def _pending(saved: Mapping[str, Any] | None) -> dict[str, list[Entry]]:
    """The saved entries of cut lines per path ({} when there are none, or they are malformed)."""
    try:
        return {str(path): entries_from_json(e) for path, e in (saved or {}).get("pending", {}).items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("ignoring malformed saved entries of cut lines: %r", exc)
        return {}


def _decode(saved: Mapping[str, Any] | None, pattern: str) -> dict[str, list[FilePosition]] | None:
    """Saved positions per path, or None for a first start (none saved, or for another pattern)."""
    if saved is None or saved.get("pattern") != pattern:
        return None
    try:
        files = saved["files"]
        return {str(path): [FilePosition.from_json(e) for e in entries] for path, entries in files.items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("ignoring malformed saved positions for %s: %r", pattern, exc)
        return None
