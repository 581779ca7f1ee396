"""The `journald` source: `journalctl --follow --output=json` as a child process, resumed by cursor.

The command: `journalctl --follow --output=json --no-pager --all --merge --output-fields=…`, then
`--unit=U` and/or the match `CONTAINER_NAME=N` (docker's journald log driver), `--directory`/`--file`
(made absolute: journalctl 252 cannot watch a relative `--file` and fails to follow), and where to
start: `--lines=all --after-cursor=C` to resume (journalctl 252 `--follow` prints only the last 10
entries after the cursor without `--lines=all`), `--since=@T` when a run saved no cursor yet,
`--lines=all` for `start_at = "beginning"`, `--lines=0` for `"end"`. Why the flags:
  - `--all`: without it the JSON output shows a field over 4096 bytes as null, and vLLM lines reach 20 kB;
  - `--merge`: journalctl 252 `--follow` otherwise keeps only the newest boot in the journal, so a
    resume after a reboot would skip the previous boot's last lines.
MESSAGE is a string, or an array of byte values when it is not valid UTF-8 (decoded with
replacement). Docker's journald driver cuts lines at 16 KiB and marks every part but the last with
CONTAINER_PARTIAL_MESSAGE=true: parts are joined per (CONTAINER_ID_FULL, PRIORITY). LogLine.time is
__REALTIME_TIMESTAMP / 1e6.

poll() reads the child's stdout without blocking (up to the read budget). position() is the
`__CURSOR` of the last entry that completed a returned line, so parts of a cut line are read again
after a restart and joined whole. When journalctl exits, `error` says why (its last stderr line) and
it is started again after a backoff (1 s doubling to 60 s, reset once a line arrives), from the
last cursor; `restarts` counts those starts.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import time
from collections.abc import Callable, Mapping
from typing import IO, Any

from kvwatch.model import LogLine
from kvwatch.sources.filetail import READ_BUDGET, StartAt
from kvwatch.sources.linecap import LINE_CAP, TextClip, clip_text
from kvwatch.sources.openfile import FileCounters
from kvwatch.sources.settings import JournaldSettings, SourceConfig

__all__ = ["JournaldSource", "journalctl_argv"]

log = logging.getLogger(__name__)

#: A JSON entry line longer than this is dropped (counted as malformed); MESSAGE is cut at line_cap.
RAW_CAP = 16 << 20
FIELDS = "MESSAGE,CONTAINER_PARTIAL_MESSAGE,CONTAINER_ID_FULL,PRIORITY"
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0


def journalctl_argv(
    journalctl: str,
    *,
    unit: str | None = None,
    container_name: str | None = None,
    directory: str | os.PathLike[str] | None = None,
    file: str | os.PathLike[str] | None = None,
    cursor: str | None = None,
    since: float | None = None,
    start_at: StartAt = "end",
) -> list[str]:
    """The journalctl command line for one start (see the module docstring)."""
    argv = [
        journalctl,
        "--follow",
        "--output=json",
        "--no-pager",
        "--all",
        "--merge",
        f"--output-fields={FIELDS}",
    ]
    if directory is not None:
        argv.append(f"--directory={os.path.abspath(directory)}")
    if file is not None:
        argv.append(f"--file={os.path.abspath(file)}")
    if unit is not None:
        argv.append(f"--unit={unit}")
    if cursor is not None:  # (--follow alone would print only the last 10 entries after the cursor)
        argv += ["--lines=all", f"--after-cursor={cursor}"]
    elif since is not None:
        argv.append(f"--since=@{since:.6f}")
    else:
        argv.append("--lines=all" if start_at == "beginning" else "--lines=0")
    if container_name is not None:
        argv.append(f"CONTAINER_NAME={container_name}")
    return argv


def message_text(value: Any) -> str | None:
    """MESSAGE as text: a string, or an array of byte values (not valid UTF-8); None otherwise."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, int) and 0 <= b < 256 for b in value):
        return bytes(value).decode("utf-8", "replace")
    return None


class JournaldSource:
    """One configured `journald` source; poll() returns the entries journalctl printed since."""

    def __init__(
        self,
        name: str,
        *,
        unit: str | None = None,
        container_name: str | None = None,
        directory: str | os.PathLike[str] | None = None,
        file: str | os.PathLike[str] | None = None,
        start_at: StartAt = "end",
        saved: Mapping[str, Any] | None = None,
        journalctl: str = "journalctl",
        line_cap: int = LINE_CAP,
        read_budget: int = READ_BUDGET,
        backoff: tuple[float, float] = (BACKOFF_FIRST, BACKOFF_MAX),
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """Start journalctl now, resuming from `saved` (an earlier position()) when it matches."""
        self.name = name
        self.counters = FileCounters()  # (rotations and truncations stay 0)
        self.bytes_behind = 0  # unknown for a journal
        self.error: str | None = None
        self.restarts = 0
        self._match: dict[str, str | None] = {
            "unit": unit,
            "container_name": container_name,
            "directory": None if directory is None else os.path.abspath(directory),
            "file": None if file is None else os.path.abspath(file),
        }
        self._journalctl, self._start_at = journalctl, start_at
        self._cap, self._budget = line_cap, read_budget
        self._backoff_first, self._backoff_max = backoff
        self._backoff = self._backoff_first
        self._clock = clock
        self._cursor: str | None = None
        # Where a start without a cursor begins once this source has run: `--since` this wall time
        # for start_at "end" (when it first started), from the beginning for "beginning".
        self._since: float | None = wall() if start_at == "end" else None
        self._resumed = False
        if saved is not None and saved.get("match") == self._match:
            cursor, since = saved.get("cursor"), saved.get("since")
            self._cursor = cursor if isinstance(cursor, str) and cursor else None
            self._since = float(since) if isinstance(since, (int, float)) else None
            self._resumed = True
        self._starts = 0
        self._started_at = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = bytearray()
        self._skip = False  # dropping the rest of an over-long output line
        self._stderr = bytearray()
        self._last_err = ""
        self._parts: dict[tuple[str, str], tuple[TextClip, float | None]] = {}
        self._next_start = clock()
        self._start()

    @classmethod
    def from_config(
        cls, config: SourceConfig, saved: Mapping[str, Any] | None, markers: tuple[str, ...] | None = None
    ) -> JournaldSource:
        """The source a `[[source]]` of type journald describes (the daemon's factory; journalctl
        decodes every entry, so the parser's `markers` are not used here)."""
        s = config.settings
        if not isinstance(s, JournaldSettings):
            raise TypeError(f"source {config.name!r} is not a journald source")
        return cls(
            config.name,
            unit=s.unit,
            container_name=s.container_name,
            directory=s.directory,
            file=s.file,
            start_at=s.start_at,
            saved=saved,
        )

    # ------------------------------------------------------------------ interface

    def wait(self, timeout: float) -> None:
        """Block until journalctl has output (or exits) or `timeout` passes; sleep while it is down."""
        proc = self._proc
        if proc is not None and proc.stdout is not None:
            select.select([proc.stdout.fileno()], [], [], timeout)
        else:
            time.sleep(max(0.0, min(timeout, self._next_start - self._clock())))

    def poll(self) -> list[LogLine]:
        """One step: read what journalctl printed; restart it (after the backoff) if it exited."""
        lines: list[LogLine] = []
        try:
            if self._proc is None:
                if self._clock() >= self._next_start:
                    self._start()
                return lines
            eof = self._read(lines)
            self._read_stderr()
            if eof:
                self._exited()
            elif self._clock() - self._started_at >= self._backoff_first:
                self.error = None  # running steadily: up again, and the next failure backs off anew
                self._backoff = self._backoff_first
        except OSError as exc:  # the pipe or the process failed under us: start over later
            self.error = f"journalctl: {exc.strerror or exc}"
            self._stop()
            self._schedule()
        self.counters.lines += len(lines)
        return lines

    def position(self) -> dict[str, Any]:
        """The JSON object to save once the returned lines are processed."""
        if self._cursor is not None:
            return {"match": self._match, "cursor": self._cursor}
        return {"match": self._match, "since": self._since}

    def close(self) -> None:
        """Stop journalctl."""
        self._stop()

    @property
    def pid(self) -> int | None:
        """The running journalctl's process id."""
        return self._proc.pid if self._proc is not None else None

    # ------------------------------------------------------------------ the child

    def argv(self) -> list[str]:
        """The command line the next start uses: after the cursor, else as the module docstring says."""
        match = self._match
        start_at: StartAt = self._start_at
        since = None
        if self._cursor is None and self._resumed:
            since, start_at = self._since, "beginning"
        return journalctl_argv(
            self._journalctl,
            unit=match["unit"],
            container_name=match["container_name"],
            directory=match["directory"],
            file=match["file"],
            cursor=self._cursor,
            since=since,
            start_at=start_at,
        )

    def _start(self) -> None:
        """Start journalctl with non-blocking pipes."""
        argv = self.argv()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**os.environ, "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0", "LC_ALL": "C.UTF-8"},
            )
        except OSError as exc:
            self.error = f"cannot run {argv[0]}: {exc.strerror or exc}"
            self._schedule()
            return
        assert proc.stdout is not None and proc.stderr is not None
        os.set_blocking(proc.stdout.fileno(), False)
        os.set_blocking(proc.stderr.fileno(), False)
        self.restarts += self._starts > 0
        self._starts += 1
        self._started_at = self._clock()
        self._proc = proc
        self._buf.clear()
        self._skip = False
        self._parts.clear()
        self._resumed = True  # from now on a start without a cursor resumes at `since`

    def _stop(self) -> None:
        """Terminate and reap journalctl."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()

    def _schedule(self) -> None:
        """Start again after the backoff, doubling it."""
        self._next_start = self._clock() + self._backoff
        self._backoff = min(self._backoff * 2, self._backoff_max)

    def _exited(self) -> None:
        """journalctl closed its output: record why, reap it, plan the restart."""
        assert self._proc is not None
        proc = self._proc
        try:
            code = proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            code = None
        self._read_stderr()
        status = f"status {code}" if code is not None else "closed its output"
        self.error = f"journalctl exited ({status}): {self._last_err or 'no message'}"
        log.warning("%s: %s; restarting in %.0f s", self.name, self.error, self._backoff)
        self._stop()
        self._schedule()

    # ------------------------------------------------------------------ reading

    def _chunks(self, pipe: IO[bytes] | None, budget: int) -> tuple[list[bytes], bool]:
        """Read what is available from a non-blocking pipe (up to `budget`); whether it hit EOF."""
        if pipe is None:
            return [], True
        chunks: list[bytes] = []
        used = 0
        while used < budget:
            try:
                data = os.read(pipe.fileno(), min(1 << 16, budget - used))
            except BlockingIOError:
                return chunks, False
            if not data:
                return chunks, True
            chunks.append(data)
            used += len(data)
        return chunks, False

    def _read(self, out: list[LogLine]) -> bool:
        """Decode the complete output lines available now into `out`; whether stdout is at EOF."""
        assert self._proc is not None
        chunks, eof = self._chunks(self._proc.stdout, self._budget)
        for data in chunks:
            self.counters.bytes_read += len(data)
            start = 0
            while (nl := data.find(b"\n", start)) != -1:
                self._hold(data[start:nl])
                if self._skip:
                    self._skip = False
                    self.counters.malformed += 1
                else:
                    self._entry(bytes(self._buf), out)
                self._buf.clear()
                start = nl + 1
            self._hold(data[start:])
        if out:
            self.error = None
        return eof

    def _hold(self, piece: bytes) -> None:
        """Keep a partial output line, dropping it (to be counted) once it passes RAW_CAP."""
        if self._skip:
            return
        if len(self._buf) + len(piece) > RAW_CAP:
            self._buf.clear()
            self._skip = True
            return
        self._buf += piece

    def _entry(self, raw: bytes, out: list[LogLine]) -> None:
        """One JSON entry: join the parts of a cut line, else return its MESSAGE as a line."""
        if not raw.strip():
            return
        try:
            obj = json.loads(raw)
            cursor = obj["__CURSOR"]
            stamp = int(obj["__REALTIME_TIMESTAMP"]) / 1e6
        except (ValueError, KeyError, TypeError):
            self.counters.malformed += 1
            return
        text = message_text(obj.get("MESSAGE"))
        if text is None or not isinstance(cursor, str):
            self.counters.malformed += 1
            return
        key = (str(obj.get("CONTAINER_ID_FULL") or ""), str(obj.get("PRIORITY") or ""))
        if obj.get("CONTAINER_PARTIAL_MESSAGE") == "true":
            clip, first = self._parts.get(key) or (TextClip(self._cap), stamp)
            clip.add(text)
            self._parts[key] = (clip, first)
            return
        held = self._parts.pop(key, None)
        if held is not None:
            clip, first = held
            clip.add(text)
            text, cut = clip.take()
            stamp = first if first is not None else stamp
        else:
            cut = len(text) > self._cap
            text = clip_text(text, self._cap)
        self.counters.truncated_long_lines += cut
        out.append(LogLine(self.name, text.removesuffix("\n"), stamp))
        if not self._parts:  # no cut line waits: this entry is a safe place to resume after
            self._cursor = cursor

    def _read_stderr(self) -> None:
        """Keep journalctl's last stderr line for `error`; log each new one."""
        assert self._proc is not None
        chunks, _ = self._chunks(self._proc.stderr, 1 << 16)
        for data in chunks:
            self._stderr += data
        *done, rest = bytes(self._stderr).split(b"\n")
        self._stderr = bytearray(rest[-4096:])
        for raw in done:
            text = raw.decode("utf-8", "replace").strip()
            if text and text != self._last_err:
                log.warning("%s: journalctl: %s", self.name, text)
            if text:
                self._last_err = text
