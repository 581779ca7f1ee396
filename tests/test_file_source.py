"""The file source on real files under tmp_path: every step is an explicit poll(); no sleeps."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from kvwatch.model import LogLine
from kvwatch.sources.file import FileSource, FileTail
from kvwatch.sources.positions import FilePosition, Identity, PositionStore


def texts(lines: list[LogLine]) -> list[str]:
    """The text of each line."""
    return [line.text for line in lines]


class Writer:
    """A logging process: appends numbered lines to its open file; reopens the path on request."""

    def __init__(self, path: Path) -> None:
        """Open `path` for appending."""
        self.path = path
        self.n = 0
        self.written: list[str] = []
        self.fh: BinaryIO = open(path, "ab", buffering=0)  # noqa: SIM115 - held open like a logger

    def write(self, count: int) -> None:
        """Append `count` complete lines to whatever file the handle points at."""
        for _ in range(count):
            self.written.append(f"line {self.n}")
            self.fh.write(f"line {self.n}\n".encode())
            self.n += 1

    def reopen(self) -> None:
        """Close the handle and open the path again (what a logger does after rotation)."""
        self.fh.close()
        self.fh = open(self.path, "ab", buffering=0)  # noqa: SIM115


def test_five_rename_rotations_under_a_steady_writer(tmp_path: Path) -> None:
    """Five rename rotations, late writes to the renamed file: every line is read exactly once."""
    path = tmp_path / "app.log"
    writer = Writer(path)
    tail = FileTail(path, "s", start_at="beginning")
    got: list[str] = []
    for rotation in range(1, 6):
        writer.write(3)
        got += texts(tail.poll())
        writer.fh.write(b"split ")  # a line in progress across the rename
        os.rename(path, f"{path}.{rotation}")
        writer.fh.write(b"line\n")
        writer.written.append("split line")
        writer.write(1)  # late write: the logger has not reopened yet
        if rotation % 2:
            got += texts(tail.poll())  # the path is missing at this poll
        writer.reopen()
        writer.write(2)
        got += texts(tail.poll())
    writer.write(1)
    got += texts(tail.poll()) + texts(tail.poll())
    assert writer.written == got
    assert 5 == tail.counters.rotations
    assert 1 == len(tail.position())  # every rotated file was finished and closed


def test_copytruncate_restarts_at_zero(tmp_path: Path) -> None:
    """copytruncate: the file shrinks under us; reading restarts at 0 and counts a truncation."""
    path = tmp_path / "app.log"
    writer = Writer(path)
    tail = FileTail(path, "s", start_at="beginning")
    writer.write(3)
    assert ["line 0", "line 1", "line 2"] == texts(tail.poll())
    shutil.copy(path, f"{path}.1")
    os.truncate(path, 0)
    writer.write(1)
    assert ["line 3"] == texts(tail.poll())
    assert 1 == tail.counters.truncations


def test_truncation_regrown_past_the_offset_is_detected(tmp_path: Path) -> None:
    """A file truncated and refilled past our offset between polls is read from 0 (fingerprint)."""
    path = tmp_path / "app.log"
    path.write_bytes(b"a\nb\n")
    tail = FileTail(path, "s", start_at="beginning")
    assert ["a", "b"] == texts(tail.poll())
    path.write_bytes(b"new first line\nsecond\n")
    assert ["new first line", "second"] == texts(tail.poll())
    assert 1 == tail.counters.truncations


def test_partial_line_at_truncation_is_dropped_and_counted(tmp_path: Path) -> None:
    """A held partial line is dropped at a truncation: its end is lost or starts the new content."""
    path = tmp_path / "app.log"
    path.write_bytes(b"a\nRunning: 1")
    tail = FileTail(path, "s", start_at="beginning")
    assert ["a"] == texts(tail.poll())
    path.write_bytes(b"")
    with open(path, "ab") as fh:
        fh.write(b"2 reqs\nb\n")
    assert ["2 reqs", "b"] == texts(tail.poll())
    assert 1 == tail.counters.partial_lines_dropped


def test_delete_and_recreate(tmp_path: Path) -> None:
    """A deleted file is drained (late writes too); the re-created one is read from its start."""
    path = tmp_path / "app.log"
    writer = Writer(path)
    tail = FileTail(path, "s", start_at="beginning")
    writer.write(2)
    assert ["line 0", "line 1"] == texts(tail.poll())
    path.unlink()
    writer.write(1)
    assert ["line 2"] == texts(tail.poll())
    assert [] == texts(tail.poll())
    writer.reopen()
    writer.write(2)
    assert ["line 3", "line 4"] == texts(tail.poll())
    assert [] == texts(tail.poll())
    assert 1 == len(tail.position())


def test_unreplaced_deleted_file_is_closed_after_the_drain_timeout(tmp_path: Path) -> None:
    """A deleted file nobody replaces is closed once idle for drain_timeout (an injected clock)."""
    path = tmp_path / "app.log"
    path.write_bytes(b"a\n")
    now = [0.0]
    tail = FileTail(path, "s", start_at="beginning", drain_timeout=10, clock=lambda: now[0])
    assert ["a"] == texts(tail.poll())
    path.unlink()
    assert [] == texts(tail.poll())
    now[0] = 11.0
    tail.poll()
    assert tail.idle()


def test_file_created_after_start_is_read_from_its_beginning(tmp_path: Path) -> None:
    """With start_at=end, a file that did not exist at start is still read from its first line."""
    path = tmp_path / "app.log"
    tail = FileTail(path, "s", start_at="end")
    assert [] == texts(tail.poll())
    path.write_bytes(b"first\nsecond\n")
    assert ["first", "second"] == texts(tail.poll())


def test_glob_source_reads_new_files_from_their_beginning(tmp_path: Path) -> None:
    """A glob source starts existing files at the end and reads files appearing later in full."""
    (tmp_path / "a.log").write_bytes(b"old\n")
    source = FileSource("s", str(tmp_path / "*.log"))
    assert [] == texts(source.poll())
    (tmp_path / "b.log").write_bytes(b"new\n")
    with open(tmp_path / "a.log", "ab") as fh:
        fh.write(b"more\n")
    assert ["more", "new"] == texts(source.poll())


def test_glob_matching_rotated_names_reads_each_line_once(tmp_path: Path) -> None:
    """A glob that also matches app.log.1 does not read the rotated file a second time."""
    path = tmp_path / "app.log"
    writer = Writer(path)
    source = FileSource("s", str(tmp_path / "app.log*"), start_at="beginning")
    got: list[str] = []
    for rotation in range(1, 4):
        writer.write(2)
        got += texts(source.poll())
        os.rename(path, f"{path}.{rotation}")
        writer.write(1)
        got += texts(source.poll())
        writer.reopen()
        writer.write(1)
        got += texts(source.poll()) + texts(source.poll())
    assert writer.written == got


def test_partial_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    """An unterminated last line is held, not returned, and not counted in the position."""
    path = tmp_path / "app.log"
    path.write_bytes(b"done\npart")
    tail = FileTail(path, "s", start_at="beginning")
    assert ["done"] == texts(tail.poll())
    assert 5 == tail.position()[0].offset
    with open(path, "ab") as fh:
        fh.write(b"ial\n")
    assert ["partial"] == texts(tail.poll())
    assert 13 == tail.position()[0].offset


def test_line_endings_and_bad_utf8(tmp_path: Path) -> None:
    """Lines split on \\n only, one trailing \\r stripped, invalid UTF-8 replaced."""
    path = tmp_path / "app.log"
    path.write_bytes(b"a\r\n\xffb\r\r\nc\rd\n")
    tail = FileTail(path, "s", start_at="beginning")
    assert [LogLine("s", "a"), LogLine("s", "\ufffdb\r"), LogLine("s", "c\rd")] == tail.poll()


def test_long_line_is_cut_at_the_cap_and_counted(tmp_path: Path) -> None:
    """A line over line_cap keeps its first line_cap bytes, even when read across several polls."""
    path = tmp_path / "app.log"
    path.write_bytes(b"x" * 25 + b"\nok\n")
    tail = FileTail(path, "s", start_at="beginning", line_cap=10, read_budget=8)
    got: list[str] = []
    for _ in range(5):
        got += texts(tail.poll())
    assert ["x" * 10, "ok"] == got
    assert 1 == tail.counters.truncated_long_lines
    assert 29 == tail.position()[0].offset


def test_read_budget_bounds_a_poll_and_reports_bytes_behind(tmp_path: Path) -> None:
    """One poll reads at most read_budget bytes; the rest shows as bytes_behind."""
    path = tmp_path / "app.log"
    path.write_bytes(b"aaaa\nbbbb\ncccc\n")
    tail = FileTail(path, "s", start_at="beginning", read_budget=10)
    assert ["aaaa", "bbbb"] == texts(tail.poll())
    assert 5 == tail.bytes_behind
    assert ["cccc"] == texts(tail.poll())
    assert (15, 0) == (tail.counters.bytes_read, tail.bytes_behind)


def test_start_at_end_and_beginning(tmp_path: Path) -> None:
    """start_at=end skips the existing complete lines but not a line in progress; beginning: all."""
    path = tmp_path / "app.log"
    path.write_bytes(b"a\nb\npar")
    end = FileTail(path, "s", start_at="end")
    beginning = FileTail(path, "s", start_at="beginning")
    with open(path, "ab") as fh:
        fh.write(b"tial\n")
    assert ["partial"] == texts(end.poll())
    assert ["a", "b", "partial"] == texts(beginning.poll())


def test_resume_same_file(tmp_path: Path) -> None:
    """A restart resumes at the saved offset: nothing is read twice or skipped."""
    path = tmp_path / "app.log"
    writer = Writer(path)
    writer.write(2)
    first = FileTail(path, "s", start_at="beginning")
    assert ["line 0", "line 1"] == texts(first.poll())
    saved = first.position()
    first.close()
    writer.write(2)
    second = FileTail(path, "s", saved=saved)
    assert ["line 2", "line 3"] == texts(second.poll())


def test_resume_after_rotation_while_down(tmp_path: Path) -> None:
    """The saved file, rotated while down, is finished from its offset; then the new file from 0."""
    path = tmp_path / "app.log"
    writer = Writer(path)
    writer.write(2)
    first = FileTail(path, "s", start_at="beginning")
    assert ["line 0", "line 1"] == texts(first.poll())
    saved = first.position()
    first.close()
    writer.write(1)
    os.rename(path, f"{path}.1")
    writer.reopen()
    writer.write(2)
    second = FileTail(path, "s", saved=saved)
    assert ["line 2", "line 3", "line 4"] == texts(second.poll()) + texts(second.poll())
    assert 1 == len(second.position())


def test_inode_reuse_with_another_fingerprint_is_a_new_file(tmp_path: Path) -> None:
    """Same device and inode but different first bytes: a new file, read from its beginning."""
    path = tmp_path / "app.log"
    path.write_bytes(b"brand new\n")
    st = os.stat(path)
    saved = [FilePosition(Identity(st.st_dev, st.st_ino, 5, "0" * 32), 5)]
    tail = FileTail(path, "s", saved=saved)
    assert ["brand new"] == texts(tail.poll())


def test_saved_offset_beyond_the_end_means_truncated_while_down(tmp_path: Path) -> None:
    """A matching file now shorter than the saved offset was truncated while down: read from 0."""
    path = tmp_path / "app.log"
    path.write_bytes(b"a\n")
    tail = FileTail(path, "s", start_at="beginning")
    tail.poll()
    st = os.stat(path)
    saved = [FilePosition(tail.position()[0].identity, 100)]
    assert st.st_size < 100
    resumed = FileTail(path, "s", saved=saved)
    assert (["a"], 1) == (texts(resumed.poll()), resumed.counters.truncations)


def test_glob_source_resumes_through_the_store(tmp_path: Path) -> None:
    """FileSource positions round-trip through PositionStore; a file added while down: all of it."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_bytes(b"a1\n")
    store = PositionStore(tmp_path / "state")
    first = FileSource("src", str(logs / "*.log"), start_at="beginning")
    assert ["a1"] == texts(first.poll())
    store.save("src", first.position())
    first.close()
    with open(logs / "a.log", "ab") as fh:
        fh.write(b"a2\n")
    (logs / "b.log").write_bytes(b"b1\n")
    second = FileSource("src", str(logs / "*.log"), saved=store.load("src"))
    assert ["a2", "b1"] == texts(second.poll())


def test_positions_write_is_atomic_and_ignores_leftover_tmp(tmp_path: Path) -> None:
    """A leftover temporary (a crash mid-save) neither breaks load nor survives the next save."""
    store = PositionStore(tmp_path)
    store.save("src", {"x": 1})
    leftover = store.directory / ".src.json.abc123.tmp"
    leftover.write_text('{"x": 2, "tor')
    assert {"x": 1} == store.load("src")
    store.save("src", {"x": 3})
    assert ({"x": 3}, False) == (store.load("src"), leftover.exists())
    assert [] == [p.name for p in store.directory.iterdir() if p.name.endswith(".tmp")]


def test_unreadable_positions_count_as_none(tmp_path: Path) -> None:
    """A corrupt or missing positions file loads as None (first start), never an exception."""
    store = PositionStore(tmp_path)
    assert store.load("src") is None
    store.directory.mkdir()
    (store.directory / "src.json").write_text("{not json")
    assert store.load("src") is None


def test_watcher_event_is_set_on_append(tmp_path: Path) -> None:
    """Appending to a watched file sets the watcher's event (waited on with a deadline)."""
    from kvwatch.sources.watch import FileWatcher

    path = tmp_path / "app.log"
    path.write_bytes(b"")
    watcher = FileWatcher([str(path)])
    watcher.start()
    try:
        watcher.event.clear()
        with open(path, "ab") as fh:
            fh.write(b"x\n")
        assert watcher.event.wait(timeout=10)
    finally:
        watcher.stop()


def test_watcher_watches_a_missing_directory_from_its_parent(tmp_path: Path) -> None:
    """A log directory created after start still wakes the loop (its parent is watched)."""
    from kvwatch.sources.watch import FileWatcher

    watcher = FileWatcher([str(tmp_path / "later" / "*.log")])
    watcher.start()
    try:
        watcher.event.clear()
        (tmp_path / "later").mkdir()
        (tmp_path / "later" / "a.log").write_bytes(b"x\n")
        assert watcher.event.wait(timeout=10)
        assert watcher.inotify
    finally:
        watcher.stop()


def test_watcher_falls_back_to_a_timer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the observer cannot start, a timer sets the event instead."""
    from kvwatch.sources import watch

    def broken() -> None:
        raise OSError("inotify instance limit reached")

    monkeypatch.setattr(watch, "Observer", broken)
    watcher = watch.FileWatcher([str(tmp_path / "a.log")], fallback_interval=0.01)
    watcher.start()
    try:
        assert (True, False) == (watcher.event.wait(timeout=10), watcher.inotify)
    finally:
        watcher.stop()


def run_writer_and_reader(tmp_path: Path, seed: int, glob_source: bool) -> tuple[list[str], list[str]]:
    """Random writes, half lines, renames, late writes, reopens, polls, checkpoints and restarts.

    Half of the seeds restart like SIGKILL: from the last checkpoint, dropping what was read after it,
    so the lines read must still equal the lines written exactly. Returns (written, read).
    """
    rng = random.Random(seed)
    path = tmp_path / "app.log"
    writer = Writer(path)
    budget, crash = rng.choice([7, 64, 1 << 20]), rng.random() < 0.5

    def reader(saved: Any) -> FileTail | FileSource:
        """A fresh reader resuming from `saved`."""
        if glob_source:  # the glob also matches the rotated names: still no line twice
            return FileSource("s", f"{path}*", start_at="beginning", saved=saved, read_budget=budget)
        return FileTail(path, "s", start_at="beginning", saved=saved, read_budget=budget)

    tail, rotations = reader(None), 0
    got: list[str] = []
    checkpoint: tuple[Any, int] = (tail.position(), 0)
    for _ in range(300):
        op = rng.random()
        if op < 0.35:
            writer.write(rng.randint(1, 3))
        elif op < 0.45:  # a line written in two pieces
            writer.fh.write(f"half {writer.n} ".encode())
            writer.written.append(f"half {writer.n} line {writer.n}")
            writer.fh.write(f"line {writer.n}\n".encode())
            writer.n += 1
        elif op < 0.52 and path.exists():
            rotations += 1
            os.rename(path, f"{path}.{rotations}")
        elif op < 0.6:
            writer.reopen()
        elif op < 0.63:
            checkpoint = (tail.position(), len(got))
        elif op < 0.67:
            saved, kept = checkpoint if crash else (tail.position(), len(got))
            got = got[:kept]
            tail.close()
            tail = reader(saved)
            checkpoint = (tail.position(), len(got))
        else:
            got += texts(tail.poll())
    writer.reopen()
    writer.write(1)
    for _ in range(20_000):  # a 7-byte budget needs many polls; stop once everything came
        got += texts(tail.poll())
        if len(got) >= len(writer.written):
            break
    return writer.written, got + texts(tail.poll())


@pytest.mark.parametrize("seed", range(30))
def test_random_interleavings_read_every_line_once(tmp_path: Path, seed: int) -> None:
    """One path under random rotations and restarts: every line exactly once, in order."""
    written, got = run_writer_and_reader(tmp_path, seed, glob_source=False)
    assert written == got


@pytest.mark.parametrize("seed", range(30))
def test_random_interleavings_with_a_glob_matching_rotated_names(tmp_path: Path, seed: int) -> None:
    """A glob that also matches the rotated files: every line exactly once (order across files aside)."""
    written, got = run_writer_and_reader(tmp_path, seed, glob_source=True)
    assert sorted(written) == sorted(got)
