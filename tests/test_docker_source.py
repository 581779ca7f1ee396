"""The docker source on a docker root laid out as dockerd writes it; polls with deadlines, no sleeps."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from kvwatch.model import LogLine
from kvwatch.sources.docker import DockerSource, find_container
from kvwatch.sources.positions import PositionStore
from kvwatch.times import parse_rfc3339

NAME = "vllm"


def go_json(text: str) -> str:
    """A JSON string the way moby's jsonlog escapes it (`<`, `>`, `&` as \\u00XX)."""
    quoted = json.dumps(text, ensure_ascii=False)
    return quoted.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def write_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write a JSON file the way dockerd does: a temporary file renamed over the target."""
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")))
    os.replace(tmp, path)


class Container:
    """A container directory under `<root>/containers/<id>` and the json-file logger writing its log."""

    def __init__(
        self, root: Path, name: str, created: str, driver: str = "json-file", logs: bool = True
    ) -> None:
        """Create the directory, config.v2.json and hostconfig.json; open the log like dockerd."""
        self.id = secrets.token_hex(32)
        self.dir = root / "containers" / self.id
        self.dir.mkdir(parents=True)
        self.log_path = self.dir / f"{self.id}-json.log"
        self.second = 0
        self.written: list[str] = []
        state = {
            "Running": True,
            "Paused": False,
            "Restarting": False,
            "OOMKilled": False,
            "RemovalInProgress": False,
            "Dead": False,
            "Pid": 4242,
            "ExitCode": 0,
            "Error": "",
            "StartedAt": created.replace("00.1", "00.2"),
            "FinishedAt": "0001-01-01T00:00:00Z",
            "Health": None,
        }
        config = {
            "StreamConfig": {},
            "State": state,
            "ID": self.id,
            "Created": created,
            "Managed": False,
            "Path": "python3",
            "Args": ["-m", "vllm.entrypoints.openai.api_server"],
            "Config": {"Hostname": self.id[:12], "Image": "vllm/vllm-openai:v0.11.0", "Tty": False},
            "Image": "sha256:" + "ab" * 32,
            "NetworkSettings": {"Bridge": "", "Networks": {}},
            "LogPath": str(self.log_path) if driver == "json-file" else "",
            "Name": "/" + name,
            "Driver": "overlay2",
            "OS": "linux",
            "RestartCount": 0,
            "HasBeenStartedBefore": True,
            "HasBeenManuallyStopped": False,
            "MountPoints": {},
            "SecretReferences": None,
            "ConfigReferences": None,
            "AppArmorProfile": "docker-default",
            "HostnamePath": str(self.dir / "hostname"),
            "HostsPath": str(self.dir / "hosts"),
            "ShmPath": "",
            "ResolvConfPath": str(self.dir / "resolv.conf"),
            "SeccompProfile": "",
            "NoNewPrivileges": False,
        }
        host = {
            "Binds": None,
            "ContainerIDFile": "",
            "LogConfig": {"Type": driver, "Config": {"max-file": "3", "max-size": "10m"}},
            "NetworkMode": "default",
            "RestartPolicy": {"Name": "no", "MaximumRetryCount": 0},
            "AutoRemove": False,
        }
        write_atomic(self.dir / "config.v2.json", config)
        write_atomic(self.dir / "hostconfig.json", host)
        self.fh: BinaryIO | None = None
        if logs and driver == "json-file":
            self.fh = open(self.log_path, "ab", buffering=0)  # noqa: SIM115 - held open like dockerd

    def stamp(self) -> str:
        """The next entry's time, RFC3339Nano with trailing zeros trimmed."""
        self.second += 1
        return f"2026-08-18T01:{self.second // 60:02d}:{self.second % 60:02d}.12345Z"

    def entry(self, log: str, stream: str = "stdout", stamp: str | None = None) -> None:
        """Write one json-file entry."""
        assert self.fh is not None
        stamp = stamp or self.stamp()
        self.fh.write(f'{{"log":{go_json(log)},"stream":"{stream}","time":"{stamp}"}}\n'.encode())

    def line(self, text: str, stream: str = "stdout") -> None:
        """Log one line; lines over 16 KiB become several entries, all but the last without `\\n`."""
        data = text.encode() + b"\n"
        stamp = self.stamp()
        for start in range(0, len(data), 16 * 1024):
            self.entry(data[start : start + 16 * 1024].decode(), stream, stamp)
        self.written.append(text)

    def lines(self, count: int, prefix: str = "line") -> None:
        """Log `count` numbered lines."""
        for _ in range(count):
            self.line(f"{prefix} {len(self.written)} {self.id[:6]}")

    def rotate(self) -> None:
        """Rotate like moby's LogFile (max-file 3): .1 to .2, the log to .1, a new empty log."""
        assert self.fh is not None
        self.fh.close()
        one, two = Path(f"{self.log_path}.1"), Path(f"{self.log_path}.2")
        if one.exists():
            os.replace(one, two)
        os.replace(self.log_path, one)
        self.fh = open(self.log_path, "wb", buffering=0)  # noqa: SIM115 - O_TRUNC|O_CREATE like moby

    def remove(self) -> None:
        """`docker rm`: close the log and delete the container directory."""
        if self.fh is not None:
            self.fh.close()
        shutil.rmtree(self.dir)


def collect(source: DockerSource, count: int, timeout: float = 5.0) -> list[LogLine]:
    """Poll until `count` lines have arrived or the deadline passes; then one more poll for extras."""
    deadline = time.monotonic() + timeout
    got: list[LogLine] = []
    while len(got) < count and time.monotonic() < deadline:
        got.extend(source.poll())
    got.extend(source.poll())
    return got


def texts(lines: list[LogLine]) -> list[str]:
    """The text of each line."""
    return [line.text for line in lines]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty docker root."""
    (tmp_path / "docker" / "containers").mkdir(parents=True)
    return tmp_path / "docker"


def test_finds_container_by_name_and_reads_from_beginning(root: Path) -> None:
    """The container is found by name; lines keep the entry time; `start_at=beginning` reads all."""
    other = Container(root, "redis", "2026-08-18T00:00:00.1Z")
    other.lines(2)
    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    box.line("INFO 08-18 01:00:01 [loggers.py:123] Engine 000: <stats> & more")
    box.line("second", stream="stderr")
    source = DockerSource("gpu0", NAME, root, start_at="beginning")
    got = collect(source, 2)
    assert [box.written[0], "second"] == texts(got)
    assert {"gpu0"} == {line.source for line in got}
    assert parse_rfc3339("2026-08-18T01:00:01.12345Z") == got[0].time
    assert box.id == source.container_id
    assert None is source.error
    assert 2 == source.counters.lines
    assert box.id == find_container(root, "/" + NAME).id  # type: ignore[union-attr]


def test_start_at_end_reads_only_new_lines(root: Path) -> None:
    """`start_at=end` skips what the log already holds."""
    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    box.lines(5)
    source = DockerSource("gpu0", NAME, root)
    assert [] == source.poll()
    box.lines(3)
    assert box.written[5:] == texts(collect(source, 3))


def test_rotation_to_numbered_files(root: Path) -> None:
    """`-json.log` rotated to `.1` and `.2` (twice between polls too): every line exactly once."""
    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    source = DockerSource("gpu0", NAME, root, start_at="beginning")
    box.lines(10)
    got = collect(source, 10)
    box.lines(5)
    box.rotate()
    box.lines(5)
    got += collect(source, 10)
    box.lines(5)
    box.rotate()
    box.lines(5)
    box.rotate()
    box.lines(5)
    got += collect(source, 15)
    assert box.written == texts(got)
    # Three rotations, one of them a file rotated away twice between polls (caught up as a sibling).
    assert 3 == source.counters.rotations


def test_split_entries_are_joined(root: Path) -> None:
    """A 40 KB line cut into 16 KiB entries comes back whole, interleaved stderr lines apart."""
    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    source = DockerSource("gpu0", NAME, root, start_at="beginning")
    long = "non-default args: " + "x" * 40_000
    data = (long + "\n").encode()
    box.entry(data[:16384].decode(), stamp="2026-08-18T01:00:00Z")
    box.line("an stderr line", stream="stderr")
    box.entry(data[16384:32768].decode(), stamp="2026-08-18T01:00:00.5Z")
    box.entry(data[32768:].decode(), stamp="2026-08-18T01:00:01Z")
    got = collect(source, 2)
    assert ["an stderr line", long] == texts(got)
    assert parse_rfc3339("2026-08-18T01:00:00Z") == got[1].time
    assert 0 == source.counters.malformed


def test_cut_line_pending_at_a_restart_is_rejoined(root: Path, tmp_path: Path) -> None:
    """Saved while a cut line waits for its last entry: the restarted source returns it whole."""
    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    store = PositionStore(tmp_path / "state")
    source = DockerSource("gpu0", NAME, root, start_at="beginning")
    long = "y" * 20_000
    data = (long + "\n").encode()
    box.line("before")
    box.entry(data[:16384].decode())
    assert ["before"] == texts(collect(source, 1))
    store.save("gpu0", source.position())
    source.close()
    box.entry(data[16384:].decode())
    box.line("after")
    again = DockerSource("gpu0", NAME, root, start_at="end", saved=store.load("gpu0"))
    assert [long, "after"] == texts(collect(again, 2))


def test_malformed_lines_are_counted_not_returned(root: Path) -> None:
    """A physical line that is not a docker entry is counted in `malformed` and not returned."""
    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    source = DockerSource("gpu0", NAME, root, start_at="beginning")
    box.line("good 1")
    assert box.fh is not None
    box.fh.write(b'{"log":"torn entr\n')
    box.fh.write(b"plain text\n")
    box.line("good 2")
    assert ["good 1", "good 2"] == texts(collect(source, 2))
    assert 2 == source.counters.malformed


def test_container_recreated_under_a_new_id(root: Path) -> None:
    """`docker rm` + `docker run --name`: the old log is finished, the new read from its start."""
    old = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    source = DockerSource("gpu0", NAME, root)
    old.lines(3)
    got = collect(source, 3)
    old.lines(4)  # written before the container stopped, not yet read
    old_lines = list(old.written)
    old.remove()
    new = Container(root, NAME, "2026-08-18T02:00:00.1Z")
    new.lines(6, prefix="new")
    got += collect(source, 10)
    assert old_lines + new.written == texts(got)
    assert {"gpu0"} == {line.source for line in got}
    assert 1 == source.restarts
    assert new.id == source.container_id
    assert new.id == source.position()["id"]


def test_newest_of_several_containers_with_the_name(root: Path) -> None:
    """Two directories naming the container (one left over): the newest `Created` wins."""
    Container(root, NAME, "2026-08-17T00:00:00.1Z").lines(2)
    newest = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    newest.lines(2)
    Container(root, NAME, "2026-08-16T00:00:00.1Z").lines(2)
    source = DockerSource("gpu0", NAME, root, start_at="beginning")
    assert newest.written == texts(collect(source, 2))
    assert newest.id == source.container_id


def test_recreated_while_kvwatch_was_down(root: Path, tmp_path: Path) -> None:
    """Saved at the old id: the old log (rotated meanwhile) is finished, then the new one from its start."""
    store = PositionStore(tmp_path / "state")
    old = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    source = DockerSource("gpu0", NAME, root, start_at="beginning")
    old.lines(3)
    got = collect(source, 3)
    store.save("gpu0", source.position())
    source.close()
    old.lines(2)
    old.rotate()
    old.lines(2)
    new = Container(root, NAME, "2026-08-18T02:00:00.1Z")
    new.lines(3, prefix="new")
    again = DockerSource("gpu0", NAME, root, saved=store.load("gpu0"))
    got += collect(again, 7)
    assert old.written + new.written == texts(got)
    assert 1 == again.restarts


def test_log_driver_not_json_file(root: Path) -> None:
    """A container with the `local` driver: a clear error and no lines."""
    Container(root, NAME, "2026-08-18T00:00:00.1Z", driver="local")
    source = DockerSource("gpu0", NAME, root, start_at="beginning")
    assert [] == source.poll()
    assert source.error is not None
    assert "log driver 'local' is not readable; use json-file or journald" in source.error


def test_container_missing_then_appearing(root: Path) -> None:
    """Missing at start: reported; found by the next scan once it appears, and read from its start."""
    now = [0.0]
    source = DockerSource("gpu0", NAME, root, rescan_interval=5.0, clock=lambda: now[0])
    assert [] == source.poll()
    assert f"container '{NAME}' not found under {root / 'containers'}" == source.error
    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    box.lines(3)
    assert box.written == texts(collect(source, 3))  # the new directory triggered the scan
    assert None is source.error
    assert 0 == source.restarts


def test_rescan_interval_finds_a_config_written_late(root: Path) -> None:
    """A directory that had no config yet is looked at again once the rescan interval passes."""
    now = [0.0]
    source = DockerSource("gpu0", NAME, root, rescan_interval=5.0, clock=lambda: now[0])
    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    config = box.dir / "config.v2.json"
    hidden = box.dir / "hidden.json"
    os.replace(config, hidden)
    assert [] == source.poll()  # scanned (new directory), nothing named yet
    os.replace(hidden, config)
    box.lines(2)
    assert [] == source.poll()  # not due: same containers directory, clock unchanged
    now[0] = 5.0
    assert box.written == texts(collect(source, 2))


def test_resume_from_saved_position(root: Path, tmp_path: Path) -> None:
    """A restart resumes exactly after the last line returned (positions saved and loaded)."""
    store = PositionStore(tmp_path / "state")
    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    box.lines(3)
    source = DockerSource("gpu0", NAME, root, start_at="beginning")
    got = collect(source, 3)
    store.save("gpu0", source.position())
    source.close()
    box.lines(4)
    again = DockerSource("gpu0", NAME, root, start_at="beginning", saved=store.load("gpu0"))
    got += collect(again, 4)
    assert box.written == texts(got)
    assert 0 == again.restarts


def test_saved_while_missing_reads_the_container_from_its_start(root: Path, tmp_path: Path) -> None:
    """Position saved before the container ever existed: once it appears it is read whole."""
    store = PositionStore(tmp_path / "state")
    source = DockerSource("gpu0", NAME, root)
    store.save("gpu0", source.position())
    source.close()
    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    box.lines(3)
    again = DockerSource("gpu0", NAME, root, saved=store.load("gpu0"))
    assert box.written == texts(collect(again, 3))


def test_opened_from_config_by_the_daemon_factory(root: Path) -> None:
    """A `[[source]]` of type docker, parsed and opened through the daemon's factory."""
    from kvwatch.config import parse_config
    from kvwatch.daemon.sources import open_source

    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    box.lines(2)
    data = {
        "source": [
            {"name": "gpu0", "engine": "vllm", "type": "docker", "container": NAME, "docker_root": str(root)},
        ]
    }
    config = parse_config(data, root)
    source = open_source(config.sources[0], None)
    assert isinstance(source, DockerSource)
    box.lines(1)
    box.line("Engine 000: Avg prompt throughput: 1.0 tokens/s")
    got: list[object] = []
    deadline = time.monotonic() + 5.0
    while len(got) < 2 and time.monotonic() < deadline:
        got += source.poll_raw()
    # (the parser's markers reach the source: a line holding none is counted, not decoded)
    assert [1, box.written[3]] == [x if isinstance(x, int) else x.text for x in got]  # type: ignore[attr-defined]


def test_a_new_container_is_read_from_its_oldest_rotated_file(root: Path) -> None:
    """A container that rotated before it was first read: `.2`, `.1`, then the log, all from 0."""
    source = DockerSource("gpu0", NAME, root)
    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    box.lines(2)
    box.rotate()
    box.lines(2)
    box.rotate()
    box.lines(2)
    got = collect(source, 6)
    assert box.written == texts(got)
    again = DockerSource("gpu1", NAME, root, start_at="beginning")
    assert box.written == texts(collect(again, 6))


def wakes(feeder: Any, box: Container) -> bool:
    """Whether a line written to the container's log wakes the feeder's watcher (within 10 s)."""
    watcher = feeder.watcher
    assert watcher is not None
    watcher.event.clear()
    box.lines(1)
    return bool(watcher.event.wait(timeout=10))


def test_the_reader_wakes_on_a_write_to_the_log_and_follows_a_recreated_container(root: Path) -> None:
    """The daemon's reader watches the container's log (a write wakes it at once, not at the next
    1 s poll) and, once the container is re-created, the new one's."""
    from kvwatch.config import parse_config
    from kvwatch.daemon.feed import Feeder

    old = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    data = {"source": [{"name": "gpu0", "type": "docker", "container": NAME, "docker_root": str(root)}]}
    feeder = Feeder(parse_config(data, root).sources[0], lambda: None, lambda item: None)
    assert feeder.open()
    source: Any = feeder.source
    try:
        assert [str(old.log_path), str(root / "containers" / "*")] == source.watched()
        assert wakes(feeder, old)
        old.remove()
        new = Container(root, NAME, "2026-08-18T02:00:00.1Z")
        deadline = time.monotonic() + 5.0
        while source.container_id != new.id and time.monotonic() < deadline:
            feeder.step()
        assert str(new.log_path) in source.watched()
        assert wakes(feeder, new)
        feeder.close()  # (a source that failed is opened again: it is watched again)
        assert feeder.open()
        assert wakes(feeder, new)
    finally:
        feeder.close()


def stepped(feeder: Any, items: list[Any]) -> list[Any]:
    """Step the feeder until it queues lines (5 s at most); the items of its queued Lines."""
    from kvwatch.daemon.feed import Lines

    deadline = time.monotonic() + 5.0
    while not any(isinstance(item, Lines) for item in items) and time.monotonic() < deadline:
        feeder.step()
    lines = [x for item in items if isinstance(item, Lines) for x in item.lines]
    items.clear()
    return lines


def test_an_auto_source_counts_the_lines_without_a_marker_once_its_engine_is_chosen(root: Path) -> None:
    """engine = auto: every entry decoded until the pipeline chose the engine; from then on the
    source is handed the parser's markers and counts the entries that hold none undecoded."""
    from kvwatch.config import parse_config
    from kvwatch.daemon.feed import Feeder
    from kvwatch.engines.vllm.parser import VllmParser

    box = Container(root, NAME, "2026-08-18T00:00:00.1Z")
    data = {"source": [{"name": "gpu0", "type": "docker", "container": NAME, "docker_root": str(root)}]}
    items: list[Any] = []
    feeder = Feeder(parse_config(data, root).sources[0], lambda: None, items.append)
    assert feeder.open()
    try:
        box.lines(2)
        assert box.written == [line.text for line in stepped(feeder, items)]
        feeder.markers = VllmParser.markers  # (what the pipeline thread does once the engine is chosen)
        box.lines(3)
        assert [3] == stepped(feeder, items)
    finally:
        feeder.close()


def test_a_missing_docker_root_is_not_watched_from_the_filesystem_root() -> None:
    """A path under directories that do not exist is watched from its nearest existing ancestor,
    recursively, but never the whole filesystem."""
    from kvwatch.sources.watch import watched_dir

    assert ("/", False) == watched_dir("/nonexistent-kvwatch/containers/*")
