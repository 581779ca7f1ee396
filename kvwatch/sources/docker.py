"""The `docker` source: a container by name, read from its json-file log under the docker root.

Finding the log: every `<root>/containers/<id>/config.v2.json` whose `Name` is `/<name>` is a
candidate; the newest (`Created`, then `State.StartedAt`) wins. Its log driver comes from
`hostconfig.json` beside it (`LogConfig.Type`; docker keeps HostConfig out of config.v2.json), and
must be `json-file`: anything else is reported in `error` and retried. The log is `LogPath`
(`<id>-json.log`, empty until the container first starts, when the default path is awaited).

Reading: a FileTail follows the log path (rename rotation to `-json.log.1`, `.2`…, and docker's
unlink-and-recreate when max-file is 1); its lines are framed as replay's Framer frames them
(kvwatch.sources.fileframing): a complete entry holding none of the parser's markers is counted
undecoded, the others decoded (`EntryJoiner` joins lines docker cut at 16 KiB), and LogLine.time is
the entry's time. A physical line that is not a docker entry is not returned: it is counted in
`counters.malformed` (the raw JSON of a torn entry fed to a parser could yield a wrong number).

Recreation: the containers are looked up again every `rescan_interval` seconds, at once when the
containers directory changes (a new container is a new directory) or the followed log is gone. When
the name belongs to a new id, the old log is read to its end, then the new one from its start under
the same source label, and `restarts` counts one. A container still missing is retried at the same
interval.

Positions: `{"container", "id", "files": [FilePosition...], "pending": [...]}`; `files` are the
tail's identities and offsets, `pending` the entries of a cut line not yet complete (their bytes
are behind the saved offsets), so a restart rejoins the line exactly. Saved for another id: that
container was recreated while kvwatch was down, so the old log is finished from its saved offset if
it still exists (with its rotated files), then the new one is read from its start.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvwatch.model import LogLine
from kvwatch.sources.docker_json import (
    Entry,
    entries_from_json,
    entries_to_json,
)
from kvwatch.sources.fileframing import FileFraming, Framed, decoded
from kvwatch.sources.filetail import DRAIN_TIMEOUT, READ_BUDGET, FileTail, StartAt
from kvwatch.sources.linecap import LINE_CAP
from kvwatch.sources.openfile import FileCounters, open_fd, siblings
from kvwatch.sources.positions import FilePosition, Identity
from kvwatch.sources.settings import DockerSettings, SourceConfig
from kvwatch.times import parse_rfc3339

__all__ = ["Container", "DockerSource", "find_container"]

log = logging.getLogger(__name__)

#: Physical (JSON) line cap, replay's too: a 16 KiB entry escapes to at most ~96 KiB, so a longer
#: line is not an entry.
RAW_CAP = LINE_CAP
RESCAN_INTERVAL = 5.0


@dataclass(frozen=True, slots=True)
class Container:
    """What kvwatch needs of one container directory."""

    id: str
    name: str
    log_path: str
    driver: str
    created: float
    started: float
    running: bool


def _read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from `path`, or None when missing or unreadable (docker rewrites it by rename)."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _driver(directory: Path, config: Mapping[str, Any]) -> str:
    """The log driver: hostconfig.json's LogConfig.Type (or a HostConfig inside config.v2.json)."""
    for host in (_read_json(directory / "hostconfig.json"), config.get("HostConfig")):
        if isinstance(host, dict):
            logcfg = host.get("LogConfig")
            if isinstance(logcfg, dict) and isinstance(logcfg.get("Type"), str) and logcfg["Type"]:
                return str(logcfg["Type"])
    return "json-file" if str(config.get("LogPath", "")).endswith("-json.log") else "unknown"


def load_container(directory: Path) -> Container | None:
    """Read one `containers/<id>` directory; None when it has no usable config.v2.json."""
    config = _read_json(directory / "config.v2.json")
    if config is None or not isinstance(config.get("ID"), str) or not isinstance(config.get("Name"), str):
        return None
    cid = str(config["ID"])
    state = config.get("State")
    state = state if isinstance(state, dict) else {}
    log_path = config.get("LogPath") or str(directory / f"{cid}-json.log")
    return Container(
        id=cid,
        name=str(config["Name"]).lstrip("/"),
        log_path=str(log_path),
        driver=_driver(directory, config),
        created=parse_rfc3339(str(config.get("Created", ""))) or 0.0,
        started=parse_rfc3339(str(state.get("StartedAt", ""))) or 0.0,
        running=bool(state.get("Running", False)),
    )


class ContainerIndex:
    """The containers under a docker root, re-reading only config files that changed."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        """Index `<root>/containers`."""
        self.directory = Path(root) / "containers"
        self._cache: dict[str, tuple[tuple[int, ...], Container | None]] = {}

    def stamp(self) -> int | None:
        """The containers directory's mtime (changes when a container is created or removed)."""
        try:
            return os.stat(self.directory).st_mtime_ns
        except OSError:
            return None

    def find(self, name: str) -> Container | None:
        """The newest container named `name`; raises OSError when the root cannot be listed."""
        name = name.lstrip("/")
        seen: dict[str, tuple[tuple[int, ...], Container | None]] = {}
        for entry in os.scandir(self.directory):
            key = _stat_key(Path(entry.path))
            cached = self._cache.get(entry.name)
            if cached is not None and cached[0] == key:
                seen[entry.name] = cached
            else:
                seen[entry.name] = (key, load_container(Path(entry.path)) if key else None)
        self._cache = seen
        named = [c for _, c in seen.values() if c is not None and c.name == name]
        return max(named, key=lambda c: (c.created, c.started, c.id), default=None)


def _stat_key(directory: Path) -> tuple[int, ...]:
    """What tells a changed container directory: its config files' inode, size and mtime."""
    key: list[int] = []
    for name in ("config.v2.json", "hostconfig.json"):
        try:
            st = os.stat(directory / name)
        except OSError:
            key.extend((0, 0, 0))
            continue
        key.extend((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(key) if any(key) else ()


def find_container(docker_root: str | os.PathLike[str], name: str) -> Container | None:
    """The newest container named `name` under `docker_root` (one-off lookup)."""
    return ContainerIndex(docker_root).find(name)


@dataclass(slots=True)
class _Saved:
    """A decoded saved position."""

    id: str | None
    files: list[FilePosition]
    pending: list[Entry]


class _Reader:
    """One container's log: a FileTail, and the framing that decodes and joins its entries."""

    def __init__(self, container: Container, tail: FileTail, framing: FileFraming) -> None:
        self.container = container
        self.tail = tail
        self.framing = framing


class DockerSource:
    """One configured `docker` source; poll() returns the container's new log lines."""

    def __init__(
        self,
        name: str,
        container: str,
        docker_root: str | os.PathLike[str] = "/var/lib/docker",
        start_at: StartAt = "end",
        saved: Mapping[str, Any] | None = None,
        *,
        line_cap: int = LINE_CAP,
        read_budget: int = READ_BUDGET,
        drain_timeout: float = DRAIN_TIMEOUT,
        rescan_interval: float = RESCAN_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        markers: tuple[str, ...] | None = None,
    ) -> None:
        """Find the container now (or keep looking), resuming from `saved` (an earlier position());
        `markers`: the parser's, to count the entries holding none undecoded (see FileFraming)."""
        self.name = name
        self._markers = markers
        self.container = container.lstrip("/")
        self.docker_root = Path(docker_root)
        self.counters = FileCounters()  # (lines: logical lines returned)
        self.bytes_behind = 0
        self.error: str | None = None
        self.restarts = 0
        self._raw = FileCounters()  # the tails' and framings' counters (_sync copies them)
        self._index = ContainerIndex(docker_root)
        self._start_at = start_at
        self._cap, self._budget, self._drain = line_cap, read_budget, drain_timeout
        self._interval, self._clock = rescan_interval, clock
        self._saved = _decode(saved, self.container)
        self._reader: _Reader | None = None
        self._finishing: _Reader | None = None
        self._next_scan = clock()
        self._stamp: int | None = None
        self._scan_error: str | None = None
        self._held: list[Framed] = []  # lines of a replaced log closed during a scan
        self._gone = False  # whether the followed log was missing at the last poll
        self._started = False
        self._scan()
        self._sync()
        self._started = True

    @classmethod
    def from_config(
        cls, config: SourceConfig, saved: Mapping[str, Any] | None, markers: tuple[str, ...] | None = None
    ) -> DockerSource:
        """The source a `[[source]]` of type docker describes (the daemon's factory); `markers`: its
        parser's."""
        settings = config.settings
        if not isinstance(settings, DockerSettings):
            raise TypeError(f"source {config.name!r} is not a docker source")
        return cls(
            config.name,
            settings.container,
            settings.docker_root,
            settings.start_at,
            saved,
            markers=markers,
        )

    # ------------------------------------------------------------------ interface

    def poll(self) -> list[LogLine]:
        """One step: look for the container when due, finish a replaced log, read the current one."""
        return decoded(self.name, self.poll_raw())

    def poll_raw(self) -> list[Framed]:
        """poll() with the lines that hold no marker counted, not decoded (see FileFraming)."""
        if self._due():
            self._scan()
        lines, self._held = self._held, []
        if self._finishing is not None:
            reader = self._finishing
            got = self._read(reader, lines)
            if not got and reader.tail.bytes_behind == 0:
                self._close(reader, lines)
                self._finishing = None
        if self._finishing is None and self._reader is not None:
            self._read(self._reader, lines)
        self._sync()
        self.counters.lines += sum(line if type(line) is int else 1 for line in lines)
        return lines

    def set_markers(self, markers: tuple[str, ...] | None) -> None:
        """The parser's markers, once known (an auto source chose its engine): see FileFraming."""
        self._markers = markers
        for reader in (self._finishing, self._reader):
            if reader is not None:
                reader.framing.set_markers(markers)

    def watched(self) -> list[str]:
        """What to watch for changes: the directory of each log being read (written at every line),
        and the containers directory (a container created)."""
        readers = [r for r in (self._finishing, self._reader) if r is not None]
        return [*(r.tail.path for r in readers), str(self.docker_root / "containers" / "*")]

    def position(self) -> dict[str, Any]:
        """The JSON object to save once the returned lines are processed."""
        reader = self._finishing or self._reader
        if reader is None:
            if self._saved is not None:
                return _encode(self.container, self._saved)
            return {"container": self.container, "id": None, "files": [], "pending": []}
        saved = _Saved(reader.container.id, reader.tail.position(), reader.framing.lines.pending())
        return _encode(self.container, saved)

    def close(self) -> None:
        """Close the open log files."""
        for reader in (self._finishing, self._reader):
            if reader is not None:
                reader.tail.close()
        self._finishing = self._reader = None

    @property
    def container_id(self) -> str | None:
        """The id of the container being read (the old one while its log is finished)."""
        reader = self._finishing or self._reader
        return reader.container.id if reader else None

    # ------------------------------------------------------------------ reading

    def _read(self, reader: _Reader, out: list[Framed]) -> bool:
        """Poll one tail and frame its entries into `out`; whether it returned any physical line."""
        raw = reader.tail.poll_raw()
        out += reader.framing.frame(raw)
        return bool(raw)

    def _close(self, reader: _Reader, out: list[Framed]) -> None:
        """A replaced log read to its end: hand out a line left cut, close the files."""
        out += reader.framing.finish()
        reader.tail.close()

    def _sync(self) -> None:
        """Copy the tails' and framings' counters (lines are counted as returned); gather the errors."""
        c, raw = self.counters, self._raw
        c.bytes_read, c.rotations, c.truncations = raw.bytes_read, raw.rotations, raw.truncations
        c.partial_lines_dropped, c.malformed = raw.partial_lines_dropped, raw.malformed
        c.truncated_long_lines = raw.truncated_long_lines  # (the tails' cuts and the joiners')
        readers = [r for r in (self._finishing, self._reader) if r is not None]
        self.bytes_behind = sum(r.tail.bytes_behind for r in readers)
        errors = [self._scan_error] if self._scan_error else []
        errors += [r.tail.error for r in readers if r.tail.error]
        self.error = "; ".join(errors) or None

    # ------------------------------------------------------------------ finding the container

    def _due(self) -> bool:
        """Whether to look the container up: interval passed, a directory came or went, the log vanished."""
        gone = self._reader is not None and not os.path.exists(self._reader.container.log_path)
        vanished, self._gone = gone and not self._gone, gone
        return vanished or self._clock() >= self._next_scan or self._index.stamp() != self._stamp

    def _scan(self) -> None:
        """Look the container up; switch logs when its id changed."""
        self._next_scan = self._clock() + self._interval
        self._stamp = self._index.stamp()
        try:
            found = self._index.find(self.container)
        except OSError as exc:
            self._scan_error = f"{self._index.directory}: {exc.strerror or exc}"
            return
        if found is None:
            self._scan_error = f"container {self.container!r} not found under {self._index.directory}"
            return
        if found.driver != "json-file":
            self._scan_error = (
                f"container {self.container!r} ({found.id[:12]}): log driver {found.driver!r} is not "
                "readable; use json-file or journald"
            )
            return
        self._scan_error = None
        current = self._reader
        if current is None:
            self._first(found)
        elif current.container.id != found.id:
            log.info("%s: container %s recreated as %s", self.name, current.container.id[:12], found.id[:12])
            self.restarts += 1
            if self._finishing is not None:  # recreated twice before the first old log was finished
                self._close(self._finishing, self._held)
            self._finishing = current
            self._reader = self._open(found, [], [])

    def _first(self, found: Container) -> None:
        """The container found for the first time in this process: resume or start it."""
        saved, self._saved = self._saved, None
        if saved is None:  # first start: start_at when found at once, else it is new: from its start
            self._reader = self._open(found, [] if self._started else None, [], self._start_at)
        elif saved.id == found.id:
            self._reader = self._open(found, saved.files, saved.pending)
        else:  # saved while missing (id None), or recreated while kvwatch was down
            if saved.id is not None:
                self.restarts += 1
                self._finishing = self._old(saved)
            self._reader = self._open(found, [], [])

    def _old(self, saved: _Saved) -> _Reader | None:
        """The reader of a replaced container's log at its saved offset, if its directory remains."""
        assert saved.id is not None
        directory = self._index.directory / saved.id
        old = load_container(directory)
        if old is None or not saved.files:
            log.warning(
                "%s: container %s was removed; lines it logged after the saved offset are lost",
                self.name,
                saved.id[:12],
            )
            return None
        return self._open(old, saved.files, saved.pending)

    def _open(
        self,
        found: Container,
        files: list[FilePosition] | None,
        pending: list[Entry],
        start_at: StartAt = "end",
    ) -> _Reader:
        """A reader on `found`'s log: `files` None = never seen (start_at), [] = from its start."""
        if files == [] or (files is None and start_at == "beginning"):
            files = whole_log(found.log_path)
        tail = FileTail(
            found.log_path,
            self.name,
            start_at=start_at,
            saved=files,
            counters=self._raw,
            line_cap=RAW_CAP,
            read_budget=self._budget,
            drain_timeout=self._drain,
            clock=self._clock,
        )
        framing = FileFraming(
            self.name, self._cap, self._raw, pending=pending, framing="docker-json", markers=self._markers
        )
        return _Reader(found, tail, framing)


def whole_log(log_path: str) -> list[FilePosition]:
    """Offset 0 in each of the log's files, oldest first: `-json.log.N` … `.1`, then the log itself.

    Given to FileTail as saved positions, this reads a container's log from its very start, rotated
    files included (as `docker logs` does); compressed ones (`.N.gz`) are not read.
    """
    numbered = []
    try:
        rotated = siblings(log_path)
    except OSError:  # the container directory went away meanwhile
        return []
    for path, _ in rotated:
        suffix = path[len(log_path) + 1 :]
        if path.startswith(log_path + ".") and suffix.isdigit():
            numbered.append((int(suffix), path))
    found = []
    for _, path in [*sorted(numbered, reverse=True), (0, log_path)]:
        fd = open_fd(path)
        if fd is None:
            continue
        try:
            found.append(FilePosition(Identity.of(fd), 0))
        finally:
            os.close(fd)
    return found


def _encode(container: str, saved: _Saved) -> dict[str, Any]:
    """The saved form of a position."""
    return {
        "container": container,
        "id": saved.id,
        "files": [p.to_json() for p in saved.files],
        "pending": entries_to_json(saved.pending),
    }


def _decode(saved: Mapping[str, Any] | None, container: str) -> _Saved | None:
    """A saved position, or None for a first start (none saved, or saved for another container)."""
    if saved is None or saved.get("container") != container:
        return None
    try:
        cid = saved.get("id")
        files = [FilePosition.from_json(e) for e in saved.get("files", [])]
        pending = entries_from_json(saved.get("pending", []))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("ignoring malformed saved position for container %s: %r", container, exc)
        return None
    return _Saved(str(cid) if cid else None, files, pending)
