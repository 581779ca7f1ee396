"""Ollama's own log files (macOS ~/.ollama/logs, Windows %LOCALAPPDATA%\\Ollama): the app renames
server.log to server-1.log (and server-N.log to server-N+1.log, up to 5) at each server start and opens
a new server.log (app/logrotate/logrotate.go). The same layout on Linux, with real files and polls."""

from __future__ import annotations

import os
from pathlib import Path

from test_file_source import Writer, texts

from kvwatch.sources.file import FileTail
from kvwatch.sources.openfile import siblings


def rotate(path: Path, keep: int = 5) -> None:
    """logrotate.Rotate: server-4 -> server-5, ..., server -> server-1 (the oldest is removed)."""
    stem, ext = str(path)[: -len(".log")], ".log"
    for i in range(keep, 0, -1):
        older, newer = f"{stem}-{i}{ext}", (f"{stem}-{i - 1}{ext}" if i > 1 else str(path))
        if os.path.exists(newer):
            if os.path.exists(older):
                os.remove(older)
            os.rename(newer, older)


def test_numbered_names_are_siblings_others_are_not(tmp_path: Path) -> None:
    """server-1.log and server-5.log are server.log's rotations; server-x.log and upgrade.log are not."""
    names = ("server.log", "server-1.log", "server-5.log", "server-x.log", "upgrade.log", "server-2.log.gz")
    for name in names:
        (tmp_path / name).write_text("x\n")
    found = [Path(p).name for p, _ in siblings(str(tmp_path / "server.log"))]
    assert ["server-1.log", "server-5.log"] == found


def test_a_restart_of_ollama_while_following_moves_to_the_new_server_log(tmp_path: Path) -> None:
    """Following server.log: Ollama restarts (rename to server-1.log, new server.log); nothing is lost."""
    path = tmp_path / "server.log"
    writer = Writer(path)
    writer.write(2)
    tail = FileTail(path, "ollama", start_at="beginning")
    assert ["line 0", "line 1"] == texts(tail.poll())
    writer.write(1)  # the old server's last words
    rotate(path)
    writer.reopen()
    writer.write(2)
    got = texts(tail.poll()) + texts(tail.poll()) + texts(tail.poll())
    assert ["line 2", "line 3", "line 4"] == got


def test_two_restarts_while_kvwatch_was_down_are_read_oldest_first(tmp_path: Path) -> None:
    """The saved file is now server-2.log, one never seen is server-1.log: both drain, then server.log."""
    path = tmp_path / "server.log"
    writer = Writer(path)
    writer.write(2)
    first = FileTail(path, "ollama", start_at="beginning")
    assert ["line 0", "line 1"] == texts(first.poll())
    saved = first.position()
    first.close()
    writer.write(1)
    rotate(path)
    writer.reopen()
    writer.write(1)
    os.utime(tmp_path / "server-1.log", ns=(1, 1))  # (mtimes as written: the older file first)
    os.utime(path, ns=(2, 2))
    rotate(path)
    writer.reopen()
    writer.write(1)
    second = FileTail(path, "ollama", saved=saved)
    got: list[str] = []
    for _ in range(5):
        got += texts(second.poll())
    assert ["line 2", "line 3", "line 4"] == got
