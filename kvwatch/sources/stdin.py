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
from kvwatch.sources.filetail import READ_BUDGET
from kvwatch.sources.linecap import LINE_CAP, Clip
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
        self._held = Clip(line_cap)  # the partial line (bounded: its head and tail past the cap)
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
                if self._held:
                    line, cut = self._held.take()
                    self.counters.truncated_long_lines += cut
                    raw.append(line)
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
        """Append complete lines of `chunk` to `raw`; keep the rest (past the cap, its head and tail)."""
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            if not self._held and end - start <= self._held.cap:
                raw.append(chunk[start:end].removesuffix(b"\r"))
            else:
                self._held.add(memoryview(chunk)[start:end])
                line, cut = self._held.take()
                self.counters.truncated_long_lines += cut
                raw.append(line.removesuffix(b"\r"))
            start = end + 1
        self._held.add(memoryview(chunk)[start:])
