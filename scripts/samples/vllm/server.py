"""One simulated vLLM server: records rendered with each release's header, continuation and process prefix."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from scripts.samples.vllm.lines import COLOR_PREFIX, LINES, NS, vtuple

# Every format string, `file:line`, process prefix and colour rule here was read from the PyPI wheel of
# the version a sample claims (`pip download vllm==X --no-deps`; see samples/README.vllm.md).


@dataclass
class Chunk:
    """One write to a stream: a time, the stream and the (already decorated) text."""

    t: int
    stream: str
    text: str


@dataclass
class Server:
    """Collects the records of one simulated vLLM server and renders them exactly as `version` would."""

    version: str
    rng: random.Random
    events: list[tuple[int, int, Callable[[], Chunk]]] = field(default_factory=list)

    @property
    def v(self) -> tuple[int, ...]:
        """The version as a tuple."""
        return vtuple(self.version)

    def where(self, key: str) -> str:
        """`file:line` of a logging call in this version."""
        return LINES[self.version][key]

    def _prefix(self, proc: tuple[str, int] | None) -> str:
        """The decorate_logs() prefix (0.10.1-0.30) of a process, or ''."""
        if proc is None or self.v < (0, 10, 1) or self.v >= (0, 31):
            return ""
        name = f"({proc[0]} pid={proc[1]})"
        if self.v < (0, 12):
            return f"{COLOR_PREFIX[0]}{name}{COLOR_PREFIX[1]} "
        return f"{name} "

    def _decorate(self, proc: tuple[str, int] | None, text: str) -> str:
        """Prefix every physical line, as decorate_logs' write wrapper does (text ends in a newline)."""
        prefix = self._prefix(proc)
        if not prefix:
            return text
        return prefix + text[:-1].replace("\n", "\n" + prefix) + "\n"

    def _add(self, t: int, make: Callable[[], Chunk]) -> None:
        """Queue a chunk; chunks render in (time, insertion) order."""
        self.events.append((t, len(self.events), make))

    def log(
        self,
        t: int,
        proc: tuple[str, int] | None,
        key: str,
        msg: str,
        *,
        level: str = "INFO",
        where: str | None = None,
    ) -> None:
        """A vLLM logger record: header, NewLineFormatter continuation, process prefix."""
        loc = where or self.where(key)

        def make() -> Chunk:
            stamp = datetime.fromtimestamp(t // NS, tz=timezone.utc).strftime("%m-%d %H:%M:%S")
            head = f"{level} {stamp} " + (f"[{loc}] " if self.v >= (0, 8) else f"{loc}] ")
            if self.v >= (0, 31) and proc is not None:
                head = f"({proc[0]} pid={proc[1]}) " + head
            text = head + msg.replace("\n", "\r\n" + head) + "\n"
            return Chunk(t, "stdout", self._decorate(proc, text))

        self._add(t, make)

    def raw(self, t: int, proc: tuple[str, int] | None, text: str, stream: str = "stdout") -> None:
        """Bytes a process writes itself (uvicorn, tqdm, warnings): prefixed only by decorate_logs."""
        self._add(t, lambda: Chunk(t, stream, self._decorate(proc, text)))

    def render(self) -> list[Chunk]:
        """All chunks in time order."""
        return [make() for _, _, make in sorted(self.events, key=lambda e: (e[0], e[1]))]


def plain(chunks: list[Chunk]) -> bytes:
    """What `2>&1 > file` captures."""
    return "".join(c.text for c in chunks).encode("utf-8")


def at(day: str, rng: random.Random | None = None) -> int:
    """Nanoseconds since the epoch of 'YYYY-mm-ddTHH:MM:SS' UTC, plus optional sub-second jitter."""
    base = int(datetime.strptime(day, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp())
    return base * NS + (rng.randrange(NS) if rng else 0)


def fuuid(rng: random.Random) -> str:
    """A deterministic uuid4 string."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))
