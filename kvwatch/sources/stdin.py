"""The `stdin` source: `llama-server ... 2>&1 | kvwatch run --stdin --engine llamacpp`.

Plain text, or docker's framings read as replay reads them (`tail -F <id>-json.log | ...`, or
`docker logs -t -f vllm 2>&1 | ...`): told from the first lines read.

Same shape as FileSource: `poll()` is one non-blocking step returning the complete lines read so
far, `position()` what to save (nothing: a pipe cannot be resumed). At end of input the held
partial line is handed out as a line and `done` becomes true. `wait(timeout)` blocks until input is
readable, so the daemon's reader sleeps on the pipe instead of polling it.
"""

from __future__ import annotations

import os
import select
import sys
from typing import Any

from kvwatch.model import LogLine
from kvwatch.sources.fileframing import FileFraming, Framed, decoded
from kvwatch.sources.filetail import LINE_CAP, READ_BUDGET
from kvwatch.sources.openfile import FileCounters

CHUNK = 64 * 1024


class StdinSource:
    """Lines from a file descriptor (standard input by default) until end of input."""

    def __init__(
        self,
        name: str,
        fd: int | None = None,
        line_cap: int = LINE_CAP,
        markers: tuple[str, ...] | None = None,
    ) -> None:
        """Read `fd` (default: stdin) without blocking; `markers`: the parser's (see FileFraming)."""
        self.name = name
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.counters = FileCounters()
        self.bytes_behind = 0
        self.error: str | None = None
        self.done = False
        self._cap = line_cap
        self._buf = bytearray()
        self._dropping = False  # the held line passed the cap: discard until its newline
        self._framing = FileFraming(name, line_cap, self.counters, markers=markers)  # (docker's too)
        os.set_blocking(self.fd, False)

    def wait(self, timeout: float) -> None:
        """Block until input is readable (or closed) or `timeout` passes."""
        if not self.done:
            select.select([self.fd], [], [], timeout)

    def poll(self) -> list[LogLine]:
        """Read what is available now (up to READ_BUDGET bytes); never raises."""
        return decoded(self.name, self.poll_raw())

    def poll_raw(self) -> list[Framed]:
        """poll() as FileSource.poll_raw() gives it: plain lines undecoded, docker lines decoded."""
        raw: list[bytes] = []
        budget = READ_BUDGET
        while budget > 0 and not self.done:
            try:
                chunk = os.read(self.fd, CHUNK)
            except BlockingIOError:
                break
            except OSError as exc:
                self.error = f"stdin: {exc.strerror or exc}"
                break
            if not chunk:  # end of input: nothing will complete the held line
                self.done = True
                if self._buf:
                    raw.append(bytes(self._buf))
                self._buf.clear()
                break
            budget -= len(chunk)
            self.counters.bytes_read += len(chunk)
            self._split(chunk, raw)
        self.counters.lines += len(raw)
        framed = self._framing.frame(raw)
        if self.done:
            framed += self._framing.finish()  # (a line docker cut that nothing will complete)
        return framed

    def set_markers(self, markers: tuple[str, ...] | None) -> None:
        """The parser's markers, once known (an auto source chose its engine): see FileFraming."""
        self._framing.set_markers(markers)

    def position(self) -> dict[str, Any]:
        """Nothing to resume: a pipe is read once."""
        return {}

    def close(self) -> None:
        """Leave stdin to the process."""

    def _split(self, chunk: bytes, raw: list[bytes]) -> None:
        """Append complete lines of `chunk` to `raw`; keep the rest, capped at the line cap."""
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            if not self._dropping:
                self._buf += chunk[start:end]
                line = bytes(self._buf).rstrip(b"\r")
                if len(line) > self._cap:
                    line = line[: self._cap]
                    self.counters.truncated_long_lines += 1
                raw.append(line)
            self._buf.clear()
            self._dropping = False
            start = end + 1
        if not self._dropping:
            self._buf += chunk[start:]
            if len(self._buf) > self._cap:  # cut, counted, and the rest of the line skipped
                raw.append(bytes(self._buf[: self._cap]))
                self._buf.clear()
                self._dropping = True
                self.counters.truncated_long_lines += 1
