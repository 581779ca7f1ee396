"""FileWatcher: the poll loop's wake-up signal, from inotify via watchdog, or a timer if that fails.

Only a hint: FileTail.poll() is correct without it; the daemon waits on `event` with a timeout
anyway.
"""

from __future__ import annotations

import glob
import logging
import os
import threading
from collections.abc import Iterable
from typing import Any

from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer

log = logging.getLogger(__name__)

#: Our own reads open and close the files; waking on those would spin the loop.
_IGNORED = frozenset({"opened", "closed_no_write"})


class _Wake(FileSystemEventHandler):
    """Sets the event on any change."""

    def __init__(self, event: threading.Event) -> None:
        """Remember the event to set."""
        super().__init__()
        self._event = event

    def on_any_event(self, event: Any) -> None:
        """Wake the loop unless the event is a mere open or read."""
        if event.event_type not in _IGNORED:
            self._event.set()


class FileWatcher:
    """Sets `event` when anything changes in the directories of `patterns`; tick-based fallback."""

    def __init__(self, patterns: Iterable[str], fallback_interval: float = 1.0) -> None:
        """Watch the directories holding `patterns` (paths or globs)."""
        self.event = threading.Event()
        self.inotify = False
        self._dirs = sorted({watched_dir(p) for p in patterns})
        self._interval = fallback_interval
        self._observer: Any = None
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None

    def start(self) -> None:
        """Start the observer; failing that, a thread sets the event every `fallback_interval`."""
        try:
            observer = Observer()
            for directory, recursive in self._dirs:
                observer.schedule(_Wake(self.event), directory, recursive=recursive)
            observer.start()
        except Exception as exc:
            log.warning("file watching unavailable (%s); polling every %ss", exc, self._interval)
            self._timer = threading.Thread(target=self._tick, name="kvwatch-file-timer", daemon=True)
            self._timer.start()
            return
        self._observer, self.inotify = observer, True

    def stop(self) -> None:
        """Stop watching."""
        self._stop.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join()
        if self._timer is not None:
            self._timer.join()

    def _tick(self) -> None:
        """The fallback: wake the loop periodically."""
        while not self._stop.wait(self._interval):
            self.event.set()


def watched_dir(pattern: str) -> tuple[str, bool]:
    """The directory to watch for a path or glob, and whether recursively.

    A directory with a glob in it, or not created yet, is watched from its nearest plain, existing
    ancestor, recursively, so a log directory that appears later still wakes the loop (the root
    directory only for itself).
    """
    directory = os.path.dirname(os.path.abspath(pattern))
    recursive = False
    while glob.has_magic(directory) or not os.path.isdir(directory):
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory, recursive = parent, True
    # Never the whole filesystem (a path under a directory that does not exist, e.g. a wrong
    # docker_root): scheduling that walks every directory, and every write anywhere would wake us.
    return directory, recursive and os.path.dirname(directory) != directory
