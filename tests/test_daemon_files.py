"""The running daemon on real files: every line counted once across rotation, truncation and restarts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
from pathlib import Path

import pytest
from daemon_helpers import Kvwatch, file_source, wait_until, write_config


def append(path: Path, start: int, count: int) -> int:
    """Append `count` numbered lines; the next number."""
    with open(path, "a") as out:
        out.writelines(f"line {i} of the test log\n" for i in range(start, start + count))
    return start + count


@pytest.mark.slow
def test_five_rename_rotations_under_a_steady_writer(tmp_path: Path) -> None:
    """A writer rotating its log 5 times (rename, reopen) while writing: every line counted once."""
    log = tmp_path / "app.log"
    log.touch()
    cfg = write_config(tmp_path / "kv.toml", file_source("app", log))
    kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv.err")
    # (a rotation before the source first opened the file would not be one it could see)
    wait_until(lambda: kv.value("kvwatch_source_up", {"source": "app"}) == 1, what="source up")
    written = 0
    for rotation in range(5):
        for _ in range(20):  # a steady trickle, each write its own append
            written = append(log, written, 5)
        if rotation % 2:  # every other rotation once the reader caught up: it sees it happen
            wait_until(lambda n=written: kv.lines("app") == n, what="caught up")
        for i in range(rotation, 0, -1):
            os.rename(f"{log}.{i}", f"{log}.{i + 1}")
        os.rename(log, f"{log}.1")
        written = append(log, written, 3)  # the new file gets lines at once, as a writer's reopen does
    written = append(log, written, 50)
    wait_until(lambda: kv.lines("app") == written, what=f"{written} lines")
    assert 1 <= (kv.value("kvwatch_source_rotations_total", {"source": "app"}) or 0)
    assert 0 == kv.stop()
    assert written == kv.processed("app")


@pytest.mark.slow
def test_copytruncate_delete_recreate_and_a_file_created_after_start(tmp_path: Path) -> None:
    """copytruncate, delete + re-create, and a file appearing under a glob: each line once."""
    logs = tmp_path / "logs"
    logs.mkdir()
    ct, gone = logs / "ct.log", logs / "gone.log"
    n_gone = append(gone, 0, 10)  # open when the daemon starts: deleted later with lines unread
    body = file_source("ct", ct) + file_source("gone", gone) + file_source("glob", logs / "new-*.log")
    cfg = write_config(tmp_path / "kv.toml", body)
    kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv.err")
    n_ct = append(ct, 0, 40)
    wait_until(lambda: kv.lines("ct") == n_ct, what="ct before truncation")
    shutil.copy(ct, f"{ct}.1")  # logrotate's copytruncate: copy, then truncate in place
    os.truncate(ct, 0)
    n_ct = append(ct, n_ct, 25)
    n_gone = append(gone, n_gone, 30)
    os.unlink(gone)
    n_gone = append(gone, n_gone, 12)
    n_new = append(logs / "new-1.log", 0, 17)
    wait_until(lambda: kv.lines("ct") == n_ct, what=f"{n_ct} ct lines")
    wait_until(lambda: kv.lines("gone") == n_gone, what=f"{n_gone} gone lines")
    wait_until(lambda: kv.lines("glob") == n_new, what=f"{n_new} new lines")
    assert 1 == kv.value("kvwatch_source_truncations_total", {"source": "ct"})
    assert 0 == kv.stop()


@pytest.mark.slow
def test_sigterm_then_restart_processes_each_line_exactly_once(tmp_path: Path) -> None:
    """Stopped mid-stream with SIGTERM and restarted: the two runs processed exactly the lines written."""
    log = tmp_path / "app.log"
    cfg = write_config(tmp_path / "kv.toml", file_source("app", log))
    stop = threading.Event()
    written = [0]

    def writer() -> None:
        while not stop.is_set():
            written[0] = append(log, written[0], 7)
            stop.wait(0.002)

    thread = threading.Thread(target=writer)
    thread.start()
    first = Kvwatch(["--config", str(cfg)], tmp_path / "run1.err")
    wait_until(lambda: (first.lines("app") or 0) > 200, what="first run reading")
    assert 0 == first.stop(signal.SIGTERM)
    second = Kvwatch(["--config", str(cfg)], tmp_path / "run2.err")
    wait_until(lambda: (second.lines("app") or 0) > 0, what="second run reading")
    stop.set()
    thread.join()
    expected = written[0] - first.processed("app")
    wait_until(lambda: second.lines("app") == expected, what=f"{expected} lines in the second run")
    assert 0 == second.stop()
    assert written[0] == first.processed("app") + second.processed("app")


def saved_offset(state: Path, source: str) -> int:
    """The offset saved for the source's only file (0 if none yet)."""
    try:
        data = json.loads((state / "positions" / f"{source}.json").read_text())
    except FileNotFoundError:
        return 0
    return int(next(iter(data["files"].values()))[-1]["offset"])


@pytest.mark.slow
def test_sigkill_loses_nothing_and_repeats_at_most_the_lines_since_the_last_sync(tmp_path: Path) -> None:
    """Killed with SIGKILL: the restart resumes from the last saved position, so none is lost."""
    log, state = tmp_path / "app.log", tmp_path / "state"
    cfg = write_config(tmp_path / "kv.toml", file_source("app", log), state)
    first = Kvwatch(["--config", str(cfg), "--sync-interval", "0.5"], tmp_path / "run1.err")
    synced = append(log, 0, 300)
    size = log.stat().st_size
    wait_until(lambda: saved_offset(state, "app") == size, what="a sync after the first lines")
    unsynced = append(log, synced, 200)
    wait_until(lambda: first.lines("app") == unsynced, what="the second batch processed")
    assert -signal.SIGKILL == first.stop(signal.SIGKILL)
    offset = saved_offset(state, "app")
    resumed_at = log.read_bytes()[:offset].count(b"\n")  # lines before the saved position
    assert synced <= resumed_at <= unsynced  # duplicates: at most the lines read since the last sync
    written = append(log, unsynced, 100)
    second = Kvwatch(["--config", str(cfg)], tmp_path / "run2.err")
    wait_until(lambda: second.lines("app") == written - resumed_at, what="the rest read again")
    assert 0 == second.stop()


@pytest.mark.slow
def test_sighup_with_a_broken_config_keeps_running_and_a_good_one_adds_a_source(tmp_path: Path) -> None:
    """SIGHUP: a broken config is refused (old one keeps running); a valid one adds a source, no reset."""
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    cfg = write_config(tmp_path / "kv.toml", file_source("a", a))
    kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv.err")
    n_a = append(a, 0, 10)
    wait_until(lambda: kv.lines("a") == n_a, what="a read")
    good = cfg.read_text()
    cfg.write_text(good + "[[source]]\nname = 3\n")
    kv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "reload refused" in kv.log.read_text(), what="the refusal logged")
    n_a = append(a, n_a, 5)
    wait_until(lambda: kv.lines("a") == n_a, what="a still read after the refused reload")
    assert (200, "ok\n") == (kv.get("/healthz")[0], kv.get("/healthz")[2])
    cfg.write_text(good + file_source("b", b))
    kv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "reloaded" in kv.log.read_text(), what="the reload")
    n_b = append(b, 0, 8)
    n_a = append(a, n_a, 4)
    wait_until(lambda: kv.lines("b") == n_b, what="the new source read")
    wait_until(lambda: kv.lines("a") == n_a, what="the old source counted on, not reset")
    assert 0 == kv.stop()


def test_a_missing_file_is_said_once_as_waiting_never_up_first(tmp_path: Path) -> None:
    """A source whose file does not exist yet: one line saying kvwatch waits for it and what then
    happens (never `up` right before it, never repeated); when the file appears, `up`, and its lines
    are read from the first."""
    log = tmp_path / "llama.log"
    cfg = write_config(tmp_path / "kv.toml", file_source("llama", log, start_at="end"))
    kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv.err")
    said = tmp_path / "kv.err"
    wait_until(lambda: "waiting for" in said.read_text(), what="the waiting line")
    wait_until(lambda: kv.value("kvwatch_source_up", {"source": "llama"}) == 0, what="source down")
    append(log, 0, 3)
    wait_until(lambda: kv.lines("llama") == 3, what="the new file read from its first line")
    assert 0 == kv.stop()
    lines = [line for line in said.read_text().splitlines() if "source llama:" in line]
    about = [line.split("source llama: ", 1)[1] for line in lines if "lines processed" not in line]
    assert [
        f"waiting for {log}: no file there yet; once one appears it is read from its first line",
        "up",
    ] == about[:2], lines
    assert 1 == sum("waiting for" in line for line in lines)
