"""One followed file's framing, told from its head as replay tells it (kvwatch.sources.framing.sniff).

A `file` source may point at a container's own log (`/var/lib/docker/containers/ID/ID-json.log`) or at
`docker logs -t` output saved to a file, and `--stdin` may be fed either through a pipe. Read as plain
text, their stats lines would be the raw JSON (a parse error each) and their KV Transfer lines would
lose their last key, while `kvwatch replay` of the same file decodes them: the daemon must read the
file as replay does. Plain lines pass through as bytes (the pipeline decodes only those it parses);
docker entries are decoded here into LogLines that carry docker's time, a line docker cut at 16 KiB
joined whole, even across a restart (its entries are kept in the saved position).
"""

from __future__ import annotations

from collections.abc import Iterable

from kvwatch.model import LogLine
from kvwatch.sources.compose import compose_line
from kvwatch.sources.cri import SavedCriJoiner, is_saved_cri, split_cri
from kvwatch.sources.docker_json import Entry, SavedJoiner, decode_entry, simple_entry, split_logs_t
from kvwatch.sources.framing import HEAD, Framing, escaped_markers, is_complete, sniff
from kvwatch.sources.openfile import FileCounters
from kvwatch.sources.scanner import LineFilter

#: What a poll hands the pipeline: a plain line undecoded, a decoded line, or a count of lines that
#: hold none of the parser's markers (docker's framings: skipped undecoded, as replay skips them).
Framed = bytes | LogLine | int


class FileFraming:
    """Turns one file's physical lines into what the pipeline reads; decided on the first lines."""

    def __init__(
        self,
        source: str,
        line_cap: int,
        counters: FileCounters,
        *,
        pending: Iterable[Entry] = (),
        framing: Framing | None = None,
        markers: tuple[str, ...] | None = None,
    ) -> None:
        """`framing`: known beforehand (a container's log), else told from the file's head. `markers`:
        the parser's (None: every line may matter); a docker line holding none is counted, not decoded.
        `counters` get the malformed lines and the lines cut at `line_cap` while joining."""
        self.source = source
        self.counters = counters
        self._markers = markers
        self._filter: LineFilter | None = None
        # (saved entries of a cut line: the file was docker json-file, or CRI, when they were saved)
        pending = list(pending)
        self.lines: SavedJoiner | SavedCriJoiner
        self.framing: Framing | None
        if framing == "cri" or (framing is None and is_saved_cri(pending)):
            self.framing, self.lines = "cri", SavedCriJoiner(line_cap, pending)
        else:
            self.lines = SavedJoiner(line_cap, pending)
            self.framing = framing or ("docker-json" if self.lines.pending() else None)

    def set_markers(self, markers: tuple[str, ...] | None) -> None:
        """The parser's markers, once known (an auto source chose its engine)."""
        self._markers, self._filter = markers, None

    def frame(self, raw: list[bytes], path: str | None = None) -> list[Framed]:
        """The pipeline's items for these physical lines (in order) of the file at `path`, whose head
        tells the framing (none, a pipe: the first lines read tell it)."""
        if not raw:
            return []
        if self.framing is None:
            head = _head(path) if path is not None else b""
            self.framing = sniff(head or b"\n".join(raw[:20]) + b"\n")
            if self.framing == "cri":
                self.lines = SavedCriJoiner(self.lines.joiner.max_line)
        if self.framing == "plain":
            return list(raw)
        wanted = self._wanted(raw)
        if isinstance(self.lines, SavedCriJoiner):
            return self._cri(raw, wanted, self.lines)
        if self.framing in ("docker-t", "compose"):
            return self._prefixed(raw, wanted)
        return self._json(raw, wanted)

    def _wanted(self, raw: list[bytes]) -> set[int] | None:
        """The indices of the lines holding a marker (in a json-file line, in its escaped form); None
        when every line may matter."""
        if self._filter is None and self._markers:
            found = escaped_markers(self._markers) if self.framing == "docker-json" else self._markers
            self._filter = LineFilter(found)
        return None if self._filter is None else set(self._filter.select(raw))

    def _prefixed(self, raw: list[bytes], wanted: set[int] | None) -> list[Framed]:
        """`docker logs -t` lines (the stamp is the time) or `docker compose logs` ones (the service is the
        line's origin, a `-t` stamp its time: kvwatch.sources.compose); a line without a marker is
        counted."""
        out: list[Framed] = []
        skipped = 0
        compose = self.framing == "compose"
        for index, line in enumerate(raw):
            if wanted is not None and index not in wanted:
                skipped += 1
                continue
            if skipped:
                out.append(skipped)
                skipped = 0
            if compose:
                out.append(compose_line(self.source, line))
                continue
            body, stamp = split_logs_t(line)
            out.append(LogLine(self.source, body.decode("utf-8", "replace").removesuffix("\r"), stamp))
        return [*out, skipped] if skipped else out

    def _cri(self, raw: list[bytes], wanted: set[int] | None, lines: SavedCriJoiner) -> list[Framed]:
        """A Kubernetes container's log (kvwatch.sources.cri): pieces joined, a full line without a
        marker counted."""
        out: list[Framed] = []
        skipped = 0
        joiner = lines.joiner
        cut = joiner.truncated
        for index, line in enumerate(raw):
            piece = split_cri(line)
            if piece is None:
                self.counters.malformed += 1
                continue
            quiet = wanted is not None and index not in wanted  # (holds no marker)
            if quiet and not piece.partial and not joiner.waiting(piece.stream):
                skipped += 1
                continue
            whole = lines.add(piece, line)
            if whole is None:
                continue
            if skipped:
                out.append(skipped)
                skipped = 0
            out.append(LogLine(self.source, *whole))
        self.counters.truncated_long_lines += joiner.truncated - cut
        return [*out, skipped] if skipped else out

    def _json(self, raw: list[bytes], wanted: set[int] | None) -> list[Framed]:
        """json-file entries, decoded and joined; a complete one without a marker is counted."""
        out: list[Framed] = []
        skipped = 0
        assert isinstance(self.lines, SavedJoiner)
        joiner = self.lines.joiner
        cut = joiner.truncated
        for index, line in enumerate(raw):
            busy = joiner.busy
            # A complete entry without a marker (in its escaped form) cannot matter: counted undecoded,
            # as replay's Framer counts it. Not while a cut line waits: the entry may be its end.
            if wanted is not None and index not in wanted and not busy and is_complete(line):
                skipped += 1
                continue
            if skipped:
                out.append(skipped)
                skipped = 0
            # The common entry decodes by slicing; a cut line waiting for its end takes the exact way.
            simple = None if busy else simple_entry(line, 0, len(line))
            if simple is not None:
                out.append(LogLine(self.source, simple[0], simple[1]))
                continue
            entry = decode_entry(line)
            if entry is None:  # (torn, or not docker's: its JSON parsed as a line could give a wrong number)
                self.counters.malformed += 1
                continue
            whole = self.lines.add(entry)
            if whole is not None:
                out.append(LogLine(self.source, *whole))
        self.counters.truncated_long_lines += joiner.truncated - cut
        return [*out, skipped] if skipped else out

    def finish(self) -> list[Framed]:
        """The file is gone for good: a line docker cut and never completed, as it is."""
        return [LogLine(self.source, text, stamp) for text, stamp in self.lines.finish()]


def decoded(source: str, items: list[Framed]) -> list[LogLine]:
    """The lines of framed items, each a LogLine (counts of skipped lines left out)."""
    return [
        item if isinstance(item, LogLine) else LogLine(source, item.decode("utf-8", "replace"))
        for item in items
        if not isinstance(item, int)
    ]


def _head(path: str) -> bytes:
    """The file's first bytes (b"" when it cannot be read now: the lines read are sniffed instead)."""
    try:
        with open(path, "rb") as stream:
            return stream.read(HEAD)
    except OSError:
        return b""
