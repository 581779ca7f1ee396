"""Kubernetes container logs as the kubelet's runtimes write them (CRI): `<time> <stream> <P|F> <message>`.

The kubelet reads them back with `parseCRILog`; Fluent Bit's `cri` parser, Vector's `kubernetes_logs`
(`auto_partial_merge`) and Alloy's `stage.cri` read the same shape. containerd writes the time in UTC
with `Z` and the fraction's trailing zeros trimmed (`2025-01-02T03:04:05.1Z`), CRI-O a numeric offset
(`2025-01-02T03:04:05.123456789+00:00`); either drops the line's `\\n` (containerd also a `\\r` before
it). A line longer than 16 KiB is written as `P` (partial) pieces ended by an `F` (full) one, of the
same stream: the pieces are joined per stream as bytes (a cut may fall inside a UTF-8 character), and
a joined line longer than the cap keeps its head and tail (linecap.Clip). A line's time is its first
piece's. The tag may carry more tags after a `:` (the CRI spec's `F:...`); only the first is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from kvwatch.model import LogLine
from kvwatch.sources.docker_json import Entry
from kvwatch.sources.linecap import LINE_CAP, Clip
from kvwatch.sources.sniffing import most_lines_match
from kvwatch.times import parse_rfc3339

#: What the sniffer takes for a CRI line (strict: a `docker logs -t` line starts with a time too).
_STRICT = re.compile(
    rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) (?:stdout|stderr) [PF](?::\S*)? "
)
#: What a framed line is split into: time, stream, first tag, message (an empty message may lose its
#: space).
_LINE = re.compile(rb"(\S+) (stdout|stderr) ([PF])(?::\S*)?(?: |$)")
#: containerd's line, nearly every line of a node, split the same in one match: the whole second, the
#: fraction, stream, first tag (the time read from the second's cached value, not parsed again).
_CONTAINERD = re.compile(
    rb"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z (stdout|stderr) ([PF])(?::\S*)?(?: |$)"
)
#: The whole seconds read so far (None: not a date), for containerd's lines.
_SECONDS: dict[bytes, float | None] = {}
#: The stream a saved piece is kept under (see SavedCriJoiner): not a stream docker writes.
PENDING = "cri"


class Piece(NamedTuple):
    """One physical line of a CRI log: its time, stream, whether more pieces follow, its message (a named
    tuple: one is made per line, in a fifth of a frozen dataclass's time)."""

    time: float | None
    stream: str
    partial: bool
    message: bytes


def split_cri(raw: bytes) -> Piece | None:
    """One physical line (without its `\\n`) read; None when it is not a CRI log line."""
    fast = _CONTAINERD.match(raw)
    if fast is not None:
        second, fraction, stream, tag = fast.groups()
        base = _SECONDS.get(second, 0.0)
        if base == 0.0:  # (not seen yet: 0.0 is no second of a pod's life)
            if len(_SECONDS) >= 4096:
                _SECONDS.clear()
            base = _SECONDS[second] = parse_rfc3339(second.decode("ascii") + "Z")
        if base is None:
            return None
        if fraction is not None:  # (as parse_rfc3339 adds it: the same float)
            base += int(fraction.ljust(9, b"0")) / 1e9
        return Piece(base, "stdout" if stream == b"stdout" else "stderr", tag == b"P", raw[fast.end() :])
    found = _LINE.match(raw)
    if found is None:
        return None
    stamp = parse_rfc3339(found.group(1).decode("ascii", "replace"))
    if stamp is None:
        return None
    stream = "stdout" if found.group(2) == b"stdout" else "stderr"
    return Piece(stamp, stream, found.group(3) == b"P", raw[found.end() :])


def looks_like_cri(head: bytes) -> bool:
    """Whether most of the first lines of a file are CRI log lines."""
    return most_lines_match(head, _STRICT)


def head_text(lines: Iterable[bytes]) -> str:
    """The messages of a head's lines, joined as read (for engine detection)."""
    out = []
    for line in lines:
        piece = split_cri(line)
        if piece is not None:
            out.append(piece.message.decode("utf-8", "replace") + ("" if piece.partial else "\n"))
    return "".join(out)


def _text(line: bytes) -> str:
    return line.decode("utf-8", "replace").removesuffix("\r")


class CriJoiner:
    """Joins each stream's `P` pieces with the `F` that ends them; past the cap a line keeps its head
    and tail (see linecap.py)."""

    def __init__(self, max_line: int = LINE_CAP) -> None:
        self.max_line = max_line
        self.truncated = 0
        self._parts: dict[str, tuple[Clip, float | None]] = {}

    @property
    def busy(self) -> bool:
        """Whether a split line is waiting for its next piece."""
        return bool(self._parts)

    def waiting(self, stream: str) -> bool:
        """Whether a split line of `stream` is waiting."""
        return stream in self._parts

    def add(self, piece: Piece) -> tuple[str, float | None] | None:
        """Add a piece; return (line, time of its first piece) once it is full."""
        held = self._parts.get(piece.stream)
        if held is None:
            if not piece.partial:
                return _text(piece.message), piece.time
            held = self._parts[piece.stream] = (Clip(self.max_line), piece.time)
        clip, first = held
        clip.add(piece.message)
        if piece.partial:
            return None
        del self._parts[piece.stream]
        line, cut = clip.take()
        self.truncated += cut
        return _text(line), first

    def pending(self) -> list[tuple[str, float | None]]:
        """The lines still waiting for their end, as they are (at the end of input)."""
        out = []
        for clip, first in self._parts.values():
            line, cut = clip.take()
            self.truncated += cut
            out.append((_text(line), first))
        self._parts.clear()
        return out


class CriFramer:
    """Replay's framing of a CRI log (kvwatch.sources.framing.Framer hands its lines here): each
    physical line to a LogLine, a count of lines holding no marker, or a malformed line's reason."""

    def __init__(self, source: str, markers: re.Pattern[bytes] | None, max_line: int) -> None:
        """`markers`: the parser's, as one pattern (None: every line may matter)."""
        self.source = source
        self.joiner = CriJoiner(max_line)
        self._markers = markers

    def feed(self, raw: bytes) -> LogLine | int | str | None:
        """One physical line (without its `\\n`): a LogLine, 1 (a line holding none of the markers), None
        (a piece kept for the rest of its line), or why the line is malformed."""
        piece = split_cri(raw)
        if piece is None:
            return "not a CRI log line"
        if (
            not piece.partial
            and not self.joiner.waiting(piece.stream)
            and self._markers is not None
            and self._markers.search(piece.message) is None
        ):
            return 1
        whole = self.joiner.add(piece)
        return None if whole is None else self.line(*whole)

    def every_line(self) -> None:
        """Hand every line on, whatever it holds (a log where nearly every line holds a marker, as
        Framer.every_line decides for plain text)."""
        self._markers = None

    def line(self, text: str, stamp: float | None) -> LogLine | int:
        """A joined line: a LogLine, or 1 when it holds none of the markers."""
        if self._markers is not None and self._markers.search(text.encode("utf-8", "replace")) is None:
            return 1
        return LogLine(self.source, text, stamp)

    def finish(self) -> list[LogLine | int]:
        """End of input: a line whose `F` never came is still a line."""
        return [self.line(text, stamp) for text, stamp in self.joiner.pending()]


class SavedCriJoiner:
    """A CriJoiner that also keeps the physical lines of each line not yet full, for a saved position
    (as docker_json.SavedJoiner keeps entries): a line split into pieces whose head was read before a
    restart is joined whole after it. Its `pending()` are Entries of stream PENDING whose log is a
    physical line (its bytes as surrogate escapes), saved with the position as docker's entries are."""

    def __init__(self, line_cap: int, pending: Iterable[Entry] = ()) -> None:
        self.joiner = CriJoiner(line_cap)
        self._raw: dict[str, list[bytes]] = {}
        self._cap = line_cap
        for entry in pending:
            raw = entry.log.encode("utf-8", "surrogateescape")
            piece = split_cri(raw)
            if entry.stream == PENDING and piece is not None:
                self.add(piece, raw)

    def add(self, piece: Piece, raw: bytes) -> tuple[str, float | None] | None:
        """Join one piece (`raw`: its physical line); (line, time) once full."""
        whole = self.joiner.add(piece)
        if whole is not None:
            self._raw.pop(piece.stream, None)
            return whole
        kept = self._raw.setdefault(piece.stream, [])
        if sum(map(len, kept)) < self._cap:  # (beyond the cap the joiner keeps only the tail anyway)
            kept.append(raw)
        return None

    def pending(self) -> list[Entry]:
        """The physical lines of the lines not yet full, to save."""
        return [
            Entry(raw.decode("utf-8", "surrogateescape"), PENDING, None)
            for kept in self._raw.values()
            for raw in kept
        ]

    def finish(self) -> list[tuple[str, float | None]]:
        """The lines not yet full, as they are (their file ended for good)."""
        self._raw.clear()
        return self.joiner.pending()


def is_saved_cri(pending: Iterable[Entry]) -> bool:
    """Whether saved pending entries are a CRI log's pieces (see SavedCriJoiner)."""
    return any(entry.stream == PENDING for entry in pending)
