"""The journald source on real journal files written by systemd-journal-remote; no sleeps."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from kvwatch.model import LogLine
from kvwatch.sources.journald import JournaldSource, journalctl_argv
from kvwatch.sources.positions import PositionStore

REMOTE = "/lib/systemd/systemd-journal-remote"
BOOT = "6b1e4d0c2f7a4e5b9c8d7e6f5a4b3c2d"
REBOOT = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
BASE = 1_755_000_000_000_000  # __REALTIME_TIMESTAMP of entry 0, in microseconds

Fields = dict[str, str | bytes]


class Journal:
    """Entries numbered in order, written to journal files through systemd-journal-remote."""

    def __init__(self) -> None:
        """No entries yet."""
        self.n = 0

    def entry(self, message: str | bytes, boot: str = BOOT, **fields: str) -> Fields:
        """The next entry's fields (MESSAGE may be bytes that are not UTF-8)."""
        self.n += 1
        return {
            "__REALTIME_TIMESTAMP": str(BASE + self.n * 1000),
            "__MONOTONIC_TIMESTAMP": str(self.n * 1000),
            "_BOOT_ID": boot,
            "_HOSTNAME": "gpu-host",
            "PRIORITY": "6",
            "MESSAGE": message,
            **fields,
        }

    def unit(self, count: int, unit: str = "vllm.service", boot: str = BOOT) -> list[Fields]:
        """`count` entries of a systemd unit's stdout."""
        return [self.entry(f"{unit} line {self.n + 1}", boot, _SYSTEMD_UNIT=unit) for _ in range(count)]


def export(entries: list[Fields]) -> bytes:
    """Journal export format: `KEY=value` lines, binary fields length-prefixed, a blank line after each."""
    out = bytearray()
    for fields in entries:
        for key, value in fields.items():
            if isinstance(value, bytes):
                out += key.encode() + b"\n" + len(value).to_bytes(8, "little") + value + b"\n"
            else:
                out += f"{key}={value}\n".encode()
        out += b"\n"
    return bytes(out)


def write(path: Path, entries: list[Fields]) -> None:
    """Append `entries` to the journal file at `path` (created if missing)."""
    done = subprocess.run(
        [REMOTE, f"--output={path}", "-"], input=export(entries), capture_output=True, check=False
    )
    assert 0 == done.returncode, done.stderr.decode()


def collect(source: JournaldSource, count: int, timeout: float = 10.0) -> list[LogLine]:
    """Poll until `count` lines arrived or the deadline passed."""
    deadline = time.monotonic() + timeout
    got: list[LogLine] = []
    while len(got) < count and time.monotonic() < deadline:
        got.extend(source.poll())
    return got


def wait_for(check: Callable[[], bool], source: JournaldSource, timeout: float = 10.0) -> list[LogLine]:
    """Poll until `check()` holds or the deadline passed; return the lines seen meanwhile."""
    deadline = time.monotonic() + timeout
    got: list[LogLine] = []
    while not check() and time.monotonic() < deadline:
        got.extend(source.poll())
    return got


def messages(entries: list[Fields]) -> list[str]:
    """The MESSAGE of each entry, as text."""
    return [str(e["MESSAGE"]) for e in entries]


def texts(lines: list[LogLine]) -> list[str]:
    """The text of each line."""
    return [line.text for line in lines]


def test_reads_a_unit_from_the_beginning(tmp_path: Path) -> None:
    """`--unit` keeps that unit's entries; text is MESSAGE, time is __REALTIME_TIMESTAMP."""
    journal = Journal()
    wanted = journal.unit(2)
    other = journal.unit(2, unit="sshd.service")
    wanted += journal.unit(1)
    write(tmp_path / "a.journal", wanted[:2] + other + wanted[2:])
    source = JournaldSource("gpu0", unit="vllm.service", file=tmp_path / "a.journal", start_at="beginning")
    try:
        got = collect(source, 3)
        assert messages(wanted) == texts(got)
        assert [(BASE + n * 1000) / 1e6 for n in (1, 2, 5)] == [line.time for line in got]
        assert {"gpu0"} == {line.source for line in got}
        assert None is source.error
        assert 3 == source.counters.lines
    finally:
        source.close()


def test_each_line_names_the_process_that_wrote_it(tmp_path: Path) -> None:
    """Two processes of one unit: each line's origin is its SYSLOG_IDENTIFIER[_PID], none without them."""
    journal = Journal()
    unit = {"_SYSTEMD_UNIT": "llama.service"}
    entries = [
        journal.entry("slot a", SYSLOG_IDENTIFIER="llama-server", _PID="4101", **unit),
        journal.entry("slot b", SYSLOG_IDENTIFIER="llama-server", _PID="4377", **unit),
        journal.entry("slot c", **unit),
    ]
    write(tmp_path / "a.journal", entries)
    source = JournaldSource("gpu0", unit="llama.service", file=tmp_path / "a.journal", start_at="beginning")
    try:
        got = collect(source, 3)
        assert ["llama-server[4101]", "llama-server[4377]", None] == [line.origin for line in got]
    finally:
        source.close()


def test_follows_a_new_journal_file_in_the_directory(tmp_path: Path) -> None:
    """With `--directory`, entries in a journal file created later are followed."""
    journal = Journal()
    first, second = journal.unit(2), journal.unit(3)
    write(tmp_path / "a.journal", first)
    source = JournaldSource("gpu0", unit="vllm.service", directory=tmp_path, start_at="beginning")
    try:
        got = collect(source, 2)
        write(tmp_path / "b.journal", second)
        got += collect(source, 3)
        assert messages(first + second) == texts(got)
    finally:
        source.close()


def test_resume_from_cursor_gives_exactly_the_new_lines(tmp_path: Path) -> None:
    """Saved cursor: a new run reads exactly the entries added meanwhile, a reboot's included."""
    store = PositionStore(tmp_path / "state")
    journals = tmp_path / "journal"
    journals.mkdir()
    journal = Journal()
    first = journal.unit(3)
    write(journals / "a.journal", first)
    source = JournaldSource("gpu0", unit="vllm.service", directory=journals, start_at="beginning")
    got = collect(source, 3)
    store.save("gpu0", source.position())
    source.close()
    appended = journal.unit(2)
    after_reboot = journal.unit(2, boot=REBOOT)
    write(journals / "a.journal", appended)
    write(journals / "b.journal", after_reboot)
    again = JournaldSource("gpu0", unit="vllm.service", directory=journals, saved=store.load("gpu0"))
    try:
        got += collect(again, 4)
        got += again.poll()
        assert messages(first + appended + after_reboot) == texts(got)
    finally:
        again.close()


def test_resume_from_cursor_gives_more_than_ten_new_entries(tmp_path: Path) -> None:
    """A saved cursor with 25 entries after it: all of them, not journalctl's default last ten."""
    path = tmp_path / "a.journal"
    journal = Journal()
    first, later = journal.unit(3), journal.unit(25)
    write(path, first)
    source = JournaldSource("gpu0", unit="vllm.service", file=path, start_at="beginning")
    assert messages(first) == texts(collect(source, 3))
    saved = source.position()
    source.close()
    write(path, later)
    again = JournaldSource("gpu0", unit="vllm.service", file=path, saved=saved)
    try:
        got = collect(again, 25)
        got += again.poll()
        assert messages(later) == texts(got)
    finally:
        again.close()


def test_start_at_end_skips_what_the_journal_holds(tmp_path: Path) -> None:
    """`start_at=end`: none of the existing entries; the new ones from the first seen, in order."""
    path = tmp_path / "a.journal"
    journal = Journal()
    old = journal.unit(3)
    write(path, old)
    source = JournaldSource("gpu0", unit="vllm.service", file=path)
    written: list[Fields] = []
    got: list[LogLine] = []
    deadline = time.monotonic() + 10.0
    try:
        while not got and time.monotonic() < deadline:  # journalctl seeks to the end on its own time
            batch = journal.unit(1)
            write(path, batch)
            written += batch
            got += collect(source, 1, timeout=0.5)
        got += collect(source, 0)
        new = messages(written)
        assert got, "no line after start"
        assert new[new.index(got[0].text) :] == texts(got)
        assert set(messages(old)).isdisjoint(texts(got))
    finally:
        source.close()


def test_container_name_binary_message_and_partial_parts(tmp_path: Path) -> None:
    """CONTAINER_NAME match; MESSAGE as byte values decoded; docker's 16 KiB parts joined."""
    journal = Journal()
    cid = "c0ffee" * 10 + "abcd"
    docker = {"CONTAINER_NAME": "vllm", "CONTAINER_ID_FULL": cid, "CONTAINER_ID": cid[:12]}
    long = "non-default args: " + "a" * 40_000
    entries = [
        journal.entry("plain", **docker),
        journal.entry(b"bad \xff byte", **docker),
        journal.entry("other container", CONTAINER_NAME="redis", CONTAINER_ID_FULL="f" * 64),
        journal.entry(long[:16384], CONTAINER_PARTIAL_MESSAGE="true", **docker),
        journal.entry("error line", **{**docker, "PRIORITY": "3"}),
        journal.entry(long[16384:32768], CONTAINER_PARTIAL_MESSAGE="true", **docker),
        journal.entry(long[32768:], **docker),
    ]
    write(tmp_path / "a.journal", entries)
    source = JournaldSource("gpu0", container_name="vllm", file=tmp_path / "a.journal", start_at="beginning")
    try:
        got = collect(source, 4)
        assert ["plain", "bad \ufffd byte", "error line", long] == texts(got)
        assert (BASE + 4 * 1000) / 1e6 == got[3].time
        assert 0 == source.counters.malformed
    finally:
        source.close()


def test_cursor_not_advanced_past_a_waiting_part(tmp_path: Path) -> None:
    """Stopped while a cut line waits for its last part: the next run joins it whole."""
    path = tmp_path / "a.journal"
    journal = Journal()
    docker = {"CONTAINER_NAME": "vllm", "CONTAINER_ID_FULL": "1" * 64}
    long = "b" * 20_000
    write(
        path,
        [
            journal.entry("before", **docker),
            journal.entry(long[:16384], CONTAINER_PARTIAL_MESSAGE="true", **docker),
        ],
    )
    source = JournaldSource("gpu0", container_name="vllm", file=path, start_at="beginning")
    got = collect(source, 1)
    saved = source.position()
    source.close()
    write(path, [journal.entry(long[16384:], **docker), journal.entry("after", **docker)])
    again = JournaldSource("gpu0", container_name="vllm", file=path, saved=saved)
    try:
        got += collect(again, 2)
        assert ["before", long, "after"] == texts(got)
    finally:
        again.close()


def test_journalctl_failure_is_reported_and_retried_with_backoff(tmp_path: Path) -> None:
    """A journal file that does not exist: journalctl exits, `error` says why, it is started again."""
    now = [0.0]
    path = tmp_path / "late.journal"
    source = JournaldSource(
        "gpu0", unit="vllm.service", file=path, start_at="beginning", backoff=(1.0, 8.0), clock=lambda: now[0]
    )
    try:
        wait_for(lambda: source.error is not None, source)
        assert "journalctl exited (status 1): Failed to open files: No such file or directory" == source.error
        assert 0 == source.restarts
        assert [] == source.poll()  # not yet: the backoff is one second
        assert 0 == source.restarts
        journal = Journal()
        entries = journal.unit(2)
        write(path, entries)
        now[0] = 1.0
        source.poll()
        assert 1 == source.restarts
        assert messages(entries) == texts(collect(source, 2))
        assert None is source.error
    finally:
        source.close()


def test_killed_journalctl_restarts_from_the_last_cursor(tmp_path: Path) -> None:
    """journalctl killed: restarted after the backoff at the cursor; no line lost or repeated."""
    now = [0.0]
    path = tmp_path / "a.journal"
    journal = Journal()
    first = journal.unit(3)
    write(path, first)
    source = JournaldSource(
        "gpu0", unit="vllm.service", file=path, start_at="beginning", clock=lambda: now[0]
    )
    try:
        got = collect(source, 3)
        assert source.pid is not None
        os.kill(source.pid, signal.SIGKILL)
        got += wait_for(lambda: source.error is not None, source)
        assert source.error is not None and source.error.startswith("journalctl exited (status -9)")
        more = journal.unit(2)
        write(path, more)
        now[0] = 1.0
        got += collect(source, 2)
        assert messages(first + more) == texts(got)
        assert 1 == source.restarts
        assert "--after-cursor=" in " ".join(source.argv())
    finally:
        source.close()


def test_command_line() -> None:
    """The flags that matter: --all (long fields), --merge (all boots), absolute paths, start choice."""
    argv = journalctl_argv("journalctl", container_name="vllm", file="x.journal", start_at="end")
    assert [
        "journalctl",
        "--follow",
        "--output=json",
        "--no-pager",
        "--all",
        "--merge",
        "--output-fields=MESSAGE,CONTAINER_PARTIAL_MESSAGE,CONTAINER_ID_FULL,PRIORITY,SYSLOG_IDENTIFIER,_PID",
        f"--file={os.path.abspath('x.journal')}",
        "--lines=0",
        "CONTAINER_NAME=vllm",
    ] == argv
    assert "--since=@1.500000" == journalctl_argv("j", unit="u", since=1.5)[-1]
    assert "--after-cursor=s=1" == journalctl_argv("j", unit="u", cursor="s=1", since=1.5)[-1]


def test_saved_before_any_line_resumes_from_the_first_start(tmp_path: Path) -> None:
    """No cursor yet (start_at=end): the position keeps the start time and a new run reads from it."""
    path = tmp_path / "a.journal"
    journal = Journal()
    entries = journal.unit(4)
    write(path, entries[:2])
    started = (BASE + 2500) / 1e6  # between entries 2 and 3
    source = JournaldSource("gpu0", unit="vllm.service", file=path, wall=lambda: started)
    saved = source.position()
    source.close()
    assert started == saved["since"]
    write(path, entries[2:])
    again = JournaldSource("gpu0", unit="vllm.service", file=path, saved=saved)
    try:
        assert messages(entries[2:]) == texts(collect(again, 2))
    finally:
        again.close()


def test_opened_from_config_by_the_daemon_factory(tmp_path: Path) -> None:
    """A `[[source]]` of type journald, parsed and opened through the daemon's factory."""
    from kvwatch.config import parse_config
    from kvwatch.daemon.sources import open_source

    journal = Journal()
    entries = journal.unit(2)
    write(tmp_path / "a.journal", entries)
    source_table = {
        "name": "gpu0",
        "engine": "vllm",
        "type": "journald",
        "unit": "vllm.service",
        "directory": str(tmp_path),
        "start_at": "beginning",
    }
    config = parse_config({"source": [source_table]}, tmp_path)
    source = open_source(config.sources[0], None)
    assert isinstance(source, JournaldSource)
    try:
        source.wait(0.1)
        assert messages(entries) == texts(collect(source, 2))
    finally:
        source.close()
