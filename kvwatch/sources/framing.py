"""Raw bytes to LogLines for the ways a log reaches us: plain text, docker json-file, `docker logs -t`,
a Kubernetes container's log (CRI), `docker compose logs`.

A framer has two entry points that give the same answers: `feed(raw)` for one physical line (the live
tailers) and `chunk(data)` for a block of whole lines (replay). Both apply the parser's markers to the raw
bytes first, so lines that cannot matter cost a count, not a decode or an object. They yield `Batch`
items: an int (that many lines that cannot match), a LogLine (one line to parse), or Malformed; a
Block (a dense plain read), or Entries (a json-file read whose commonest lines go to the parser
undecoded, for it to read from their bytes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from kvwatch.model import LogLine
from kvwatch.sources.compose import compose_line, looks_like_compose
from kvwatch.sources.cri import CriFramer, looks_like_cri
from kvwatch.sources.docker_json import (
    EntryJoiner,
    decode_entry,
    looks_like_logs_t,
    simple_entry,
    split_logs_t,
)
from kvwatch.sources.scanner import Scanner

Framing = Literal["plain", "docker-json", "docker-t", "cri", "compose"]


@dataclass(frozen=True, slots=True)
class Malformed:
    """A physical line that should have been a docker entry and is not (counted as a parse error)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Block:
    """The decoded lines of a plain-text read, every one to be parsed (when nearly all hold a marker):
    one text, each line ending in `\\n` (without the `\\r` before it), not split until asked."""

    text: str

    @property
    def texts(self) -> list[str]:
        """The lines, without their `\\n`."""
        texts = self.text.split("\n")
        texts.pop()
        return texts


@dataclass(frozen=True, slots=True)
class Entries:
    """A docker json-file read whose every line is one complete entry, for a parser that reads some lines
    from their bytes (`Framer(raw_marker=...)`, `parse_entries`): its `lines`, and its marker lines in
    order as `items`: each decoded as the line-by-line framing decodes it (a LogLine or Malformed;
    nothing for a line it counts without parsing), and the lines whose first marker is the parser's raw
    one in runs of their bytes (`bytes`: each line after a `\\n`, and a `\\n` at the end; every one a
    `whole_entry`)."""

    lines: int
    items: list[LogLine | Malformed | bytes]


Batch = int | LogLine | Malformed | Block | Entries

#: How much of a file's head tells its framing (sniff) and its engine.
HEAD = 64 << 10

#: How much of the first read decides whether a plain file is dense (see Framer.every_line).
SAMPLE = 256 << 10

# json-file: a complete entry's log value ends in an escaped newline right before the stream key. An
# escaped backslash before `n` would fake it, so such chunks take the exact, per-line path.
_COMPLETE = b'\\n","stream":"'
_FAKE_COMPLETE = b'\\\\n","stream":"'
_NO_HIT = (0, 0, 0)  # (Scanner.hits' shape: the pattern's index first)
_BACKSLASH = ord("\\")
# A whole entry's middle, from its log value's escaped newline; then either stream's name and the time key.
_WHOLE_MIDDLE = b'\\n","stream":"std'
_WHOLE_STREAMS = (b'out","time":"', b'err","time":"')
_CLOSE_BRACE = ord("}")


def is_complete(raw: bytes) -> bool:
    """Whether a json-file line is certainly a complete entry (its log ends in an escaped newline)."""
    return _COMPLETE in raw and _FAKE_COMPLETE not in raw


def whole_entry(data: bytes, start: int, end: int) -> bool:
    """Whether the json-file line data[start:end] decodes, if at all, to one whole line with no joining:
    `{"log":"`, a log value with no quote that ends in an escaped newline (not an escaped backslash and
    `n`), `","stream":"stdout` or `stderr`, `","time":"`, a value with no quote, `"}`. Its quotes are the
    three keys' and their values' alone, so a line that decodes holds each key once, and its log is that
    value. (Each step a memchr or a compare: the scan is the framer's per raw line.)"""
    close = data.find(b'"', start + 8, end)
    return (
        close >= start + 10
        and data[close - 3] != _BACKSLASH
        and data.startswith(_WHOLE_MIDDLE, close - 2)
        and data.startswith(_WHOLE_STREAMS, close + 15)
        and data.find(b'"', close + 28, end) == end - 2
        and data[end - 1] == _CLOSE_BRACE
        and data.startswith(b'{"log":"', start)
    )


def read_entry_lines(
    data: bytes, first: int, hits: list[tuple[int, int, int]], markers: int, raw: int
) -> list[bytes | tuple[int, int, int, int]]:
    """Each line of data[first:] holding a marker among `hits` (Scanner.hits from `first`; pattern
    indices from `markers` on are not markers'), once and in order: the whole entries (whole_entry) whose
    first marker is pattern `raw` joined into runs (a `\\n`, then each line with its `\\n`), every other
    line as (start, end at its `\\n`, start and end of its first marker)."""
    out: list[bytes | tuple[int, int, int, int]] = []
    run = [b"\n"]  # (the raw lines met since the last other one, each after a `\n`)
    rfind, index = data.rfind, data.index
    after = first  # the first offset past the last line taken: later hits on it are skipped
    # (Scanner.lines written out: a line costs a few steps here, and a generator would add one)
    for which, begin, finish in hits:
        mark = begin + first
        if mark < after or which >= markers:
            continue
        before, end = rfind(b"\n", first, mark), index(b"\n", mark)
        start = before + 1 if before >= 0 else first
        after = end + 1
        if which == raw and whole_entry(data, start, end):
            run.append(data[start:after])
            continue
        if len(run) > 1:
            out.append(b"".join(run))
            run = [b"\n"]
        out.append((start, end, mark, finish + first))
    if len(run) > 1:
        out.append(b"".join(run))
    return out


try:  # (the same in C, several times faster: built where pip found a C compiler, see setup.py)
    from kvwatch.sources._spans import entry_lines
except ImportError:  # pragma: no cover (CI builds it: tests/test_replay_plain.py holds it to the plain path)
    entry_lines = read_entry_lines


def _sliced(source: str, line: bytes, mark: int, end: int) -> LogLine | None:
    """A json-file line of the common shape (no escape but its final `\\n`) decoded by slicing, when its
    first marker, line[mark:end], lies inside its log value (its text then holds it; as _json_chunk
    decodes in place); else None."""
    simple = simple_entry(line, 0, len(line))
    if simple is not None and 8 <= mark and end <= simple[2]:
        return LogLine(source, simple[0], simple[1])
    return None


def decode_whole(
    source: str, raw: bytes, marker: bytes, markers: re.Pattern[bytes]
) -> LogLine | Malformed | None:
    """A `whole_entry` line whose first marker is `marker`, decoded as Framer.chunk decodes it: a LogLine,
    Malformed, or None (its text holds none of the `markers`: counted, not parsed). With no joining to
    do, it needs no framer (a parser reads its runs of such lines where the log is not framed)."""
    mark = raw.find(marker)
    sliced = _sliced(source, raw, mark, mark + len(marker))
    if sliced is not None:
        return sliced
    entry = decode_entry(raw)
    if entry is None:
        return Malformed("not a docker json-file entry")
    text = entry.log[:-1].removesuffix("\r")  # (whole: its log ends in `\n`)
    return LogLine(source, text, entry.time) if markers.search(text.encode("utf-8", "replace")) else None


def marker_pattern(markers: tuple[str, ...]) -> re.Pattern[bytes] | None:
    """One bytes regex for the parser's markers; None when every line must be parsed."""
    if not markers:
        return None
    return re.compile(b"|".join(re.escape(m.encode("ascii")) for m in sorted(set(markers))))


def escaped_markers(markers: tuple[str, ...]) -> tuple[str, ...]:
    """The markers and their forms inside a json-file line's raw bytes (`"` and `\\` escaped, and
    `<>&` as moby writes them), so a raw search misses no line whose decoded text holds one."""
    out = set(markers)
    for marker in markers:
        escaped = json.dumps(marker)[1:-1]
        out.add(escaped.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))
    return tuple(sorted(out))


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").removesuffix("\r")


class Framer:
    """Frames one source's bytes; keeps the json-file joiner between calls."""

    def __init__(
        self,
        source: str,
        framing: Framing,
        markers: tuple[str, ...],
        max_line: int,
        *,
        raw_marker: str | None = None,
        blocks: bool = True,
    ) -> None:
        """`raw_marker`: one of the markers, whose json-file lines the parser reads from their bytes (it has
        `parse_entries`): given, a json-file read of complete entries comes as one Entries, where the
        lines on which it is the first marker come undecoded, in runs. `blocks`: a plain read where nearly
        every line holds a marker comes as one Block (False: each of its lines as a LogLine)."""
        self.source = source
        self.framing = framing
        self._pattern = marker_pattern(markers)
        raw = escaped_markers(markers) if framing == "docker-json" else markers
        self._raw_pattern = marker_pattern(raw)
        self._joiner = EntryJoiner(max_line)
        self._cut = 0
        self._scanner: Scanner | None = None
        # json-file chunks look for the escaped-backslash sentinel in the same pass, unless a marker
        # holds a backslash (its match could then overlap the sentinel's and hide it).
        self._sentinel = framing == "docker-json" and not any("\\" in m for m in raw)
        if markers:
            self._scanner = Scanner(raw, (_FAKE_COMPLETE,) if self._sentinel else ())
        # The raw marker's pattern index in the scanner (None: every marker line is decoded).
        self._raw: int | None = None
        if raw_marker is not None and self._scanner is not None and framing == "docker-json":
            self._raw = self._scanner.patterns.index(raw_marker.encode("ascii"))
        self._dense: bool | None = None  # decided on the first chunk
        self._blocks = blocks
        # A Kubernetes container's log (kvwatch.sources.cri) is framed line by line there.
        self._cri = CriFramer(source, self._pattern, max_line) if framing == "cri" else None

    @property
    def truncated(self) -> int:
        """Lines cut at the size cap (by the reader, or while joining docker entries or CRI pieces)."""
        joined = self._cri.joiner.truncated if self._cri is not None else 0
        return self._joiner.truncated + self._cut + joined

    def note_truncated(self) -> None:
        """Count a line the reader cut at the size cap."""
        self._cut += 1

    def _wanted(self, text: str) -> bool:
        return self._pattern is None or self._pattern.search(text.encode("utf-8", "replace")) is not None

    def _wanted_raw(self, raw: bytes) -> bool:
        return self._raw_pattern is None or self._raw_pattern.search(raw) is not None

    def feed(self, raw: bytes) -> Iterator[Batch]:
        """One physical line, without its `\\n`."""
        if self.framing == "docker-json":
            yield from self._feed_json(raw)
        elif self._cri is not None:
            framed = self._cri.feed(raw)
            if framed is not None:
                yield Malformed(framed) if isinstance(framed, str) else framed
        elif self.framing == "compose":  # (every line to the parser where a plain log's would go)
            yield compose_line(self.source, raw) if self._dense or self._wanted_raw(raw) else 1
        elif not self._wanted_raw(raw):
            yield 1
        elif self.framing == "docker-t":
            body, stamp = split_logs_t(raw)
            yield LogLine(self.source, _decode(body), stamp)
        else:
            yield LogLine(self.source, _decode(raw), None)

    def _feed_json(self, raw: bytes) -> Iterator[Batch]:
        certain = is_complete(raw) and not self._joiner.busy
        if certain and not self._wanted_raw(raw):
            yield 1
            return
        entry = decode_entry(raw)
        if entry is None:
            yield Malformed("not a docker json-file entry")
            return
        whole = self._joiner.add(entry)
        if whole is None:
            return
        text, stamp = whole
        yield LogLine(self.source, text, stamp) if self._wanted(text) else 1

    def every_line(self, data: bytes, start: int = 0, stop: int | None = None) -> bool:
        """Whether every line goes to the parser (plain text where most lines hold a marker), decided
        once, on the first SAMPLE bytes of data[start:stop] seen."""
        if self._scanner is not None and self._dense is None:
            end = start + SAMPLE if stop is None else min(stop, start + SAMPLE)
            self._dense = self._scanner.dense(data[start:end])
        return self.framing == "plain" and (self._scanner is None or bool(self._dense))

    def chunk(self, data: bytes, start: int = 0, stop: int | None = None) -> list[Batch]:
        """The whole lines in data[start:stop], each ending in `\\n` (framed in place, not copied)."""
        stop = len(data) if stop is None else stop
        scanner = self._scanner
        if self.every_line(data, start, stop):
            # Nearly every line matters: decode the read once; the parser turns away the rest.
            # (`\\n` is never part of a UTF-8 sequence, so this decodes each line as feed() would.)
            text = str(memoryview(data)[start:stop], "utf-8", "replace")
            carriage = data.find(b"\r\n", start, stop) >= 0
            block = Block(text.replace("\r\n", "\n") if carriage else text)
            return [block] if self._blocks else [LogLine(self.source, each, None) for each in block.texts]
        if self._dense and self.framing == "compose":
            return [compose_line(self.source, raw) for raw in data[start:stop].split(b"\n")[:-1]]
        if self._cri is not None:
            if self._dense:  # (as a dense plain log's: every line to the parser)
                self._cri.every_line()
            return [batch for raw in data[start:stop].split(b"\n")[:-1] for batch in self.feed(raw)]
        fast: list[Batch] | None = None
        if scanner is not None:
            whole_json = self.framing == "docker-json"
            frame = self._json_chunk if whole_json else self._text_chunk
            fast = frame(data, start, stop, scanner)
        if fast is None:
            return [batch for raw in data[start:stop].split(b"\n")[:-1] for batch in self.feed(raw)]
        return fast

    def _text_chunk(self, data: bytes, first: int, stop: int, scanner: Scanner) -> list[Batch]:
        # Plain, `docker logs -t` and compose lines: the scanner found the marker, feed() need not look
        # again.
        items: list[Batch] = []
        pos = first
        plain, stamped = self.framing == "plain", self.framing == "docker-t"
        for start, end, _, _ in scanner.lines(data, first, stop):
            skipped = data.count(b"\n", pos, start)
            if skipped:
                items.append(skipped)
            raw = data[start:end]
            if plain:
                items.append(LogLine(self.source, _decode(raw), None))
            elif stamped:
                body, stamp = split_logs_t(raw)
                items.append(LogLine(self.source, _decode(body), stamp))
            else:
                items.append(compose_line(self.source, raw))
            pos = end + 1
        rest = data.count(b"\n", pos, stop)
        if rest:
            items.append(rest)
        return items

    def _json_chunk(self, data: bytes, first: int, stop: int, scanner: Scanner) -> list[Batch] | None:
        # Lines without a marker are skipped undecoded only when every line of the chunk is a
        # complete entry (no cut line to join). Counting that takes a pass over the chunk; the
        # newline count comes from the gaps between candidates instead, so the items are collected
        # first and the chunk goes the exact way (None) when the counts disagree.
        if self._joiner.busy:
            return None
        hits = scanner.hits(data, first, stop)
        if self._sentinel:
            if max(hits, default=_NO_HIT)[0] >= scanner.markers:  # (C-speed: a tuple orders by index first)
                return None  # an escaped backslash before `n` (a _FAKE_COMPLETE)
        elif data.find(_FAKE_COMPLETE, first, stop) >= 0:
            return None
        complete = data.count(_COMPLETE, first, stop)
        if self._raw is not None:
            return self._entries(data, first, stop, hits, complete)
        items: list[Batch] = []
        append, source = items.append, self.source
        pos, lines = first, 0
        checked = False
        for start, end, mark, mark_end in scanner.lines(data, first, stop, hits):
            skipped = data.count(b"\n", pos, start)
            if skipped:
                append(skipped)
            lines += skipped + 1
            pos = end + 1
            simple = simple_entry(data, start, end)
            # The common entry (no escape but its final `\\n`) decodes by slicing; its text holds
            # the marker when the marker lies inside the log value.
            if simple is not None and start + 8 <= mark and mark_end <= simple[2]:
                append(LogLine(source, simple[0], simple[1]))
                continue
            if not checked:  # the exact path may join entries: only once the chunk is known whole
                if data.count(b"\n", first, stop) != complete:
                    return None
                checked = True
            items.extend(self._feed_json(data[start:end]))
        rest = data.count(b"\n", pos, stop)
        if lines + rest != complete:
            return None
        if rest:
            append(rest)
        return items

    def _entries(
        self, data: bytes, first: int, stop: int, hits: list[tuple[int, int, int]], lines: int
    ) -> list[Batch] | None:
        """_json_chunk's items as one Entries: the lines whose first marker is the raw one in runs of their
        bytes where they are whole entries, the rest decoded; None when a decoded line leaves part of an
        entry waiting for the next (the read then goes the exact way, which joins them)."""
        if data.count(b"\n", first, stop) != lines:
            return None
        assert self._scanner is not None and self._raw is not None
        items: list[LogLine | Malformed | bytes] = []
        for each in entry_lines(data, first, hits, self._scanner.markers, self._raw):
            if type(each) is bytes:
                items.append(each)
                continue
            start, end, mark, mark_end = each
            if not self._add_decoded(items, data[start:end], mark - start, mark_end - start):
                return None
        return [Entries(lines, items)]

    def _add_decoded(
        self, items: list[LogLine | Malformed | bytes], line: bytes, mark: int, end: int
    ) -> bool:
        """Add what feed() makes of a marker line whose first marker is line[mark:end]; False (the joiner as
        it was) when the line is part of an entry, to be joined with the next."""
        sliced = _sliced(self.source, line, mark, end)
        if sliced is not None:
            items.append(sliced)
            return True
        items.extend(each for each in self._feed_json(line) if isinstance(each, (LogLine, Malformed)))
        if self._joiner.busy:  # (the raw runs after it may hold the rest of it)
            self._joiner.forget()
            return False
        return True

    def finish(self) -> list[Batch]:
        """End of input: a line cut mid-way by the end of the file is still a line."""
        if self._cri is not None:
            return [*self._cri.finish()]
        return [
            LogLine(self.source, text, stamp) if self._wanted(text) else 1
            for text, stamp in self._joiner.pending()
        ]


def sniff(head: bytes) -> Framing:
    """Tell the framing from the first bytes of a (decompressed) file."""
    first = head.lstrip()[:8]
    if first.startswith(b'{"log":'):
        return "docker-json"
    if looks_like_cri(head):  # (before `docker logs -t`: a CRI line starts with a time too)
        return "cri"
    if looks_like_compose(head):
        return "compose"
    return "docker-t" if looks_like_logs_t(head) else "plain"
