"""Raw bytes to LogLines for the three ways a log reaches us: plain text, docker json-file, `docker logs -t`.

A framer has two entry points that give the same answers: `feed(raw)` for one physical line (the live
tailers) and `chunk(data)` for a block of whole lines (replay). Both apply the parser's markers to the raw
bytes first, so lines that cannot matter cost a count, not a decode or an object. They yield `Batch`
items: an int (that many lines that cannot match), a LogLine (one line to parse), or Malformed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from kvwatch.model import LogLine
from kvwatch.sources.docker_json import EntryJoiner, decode_entry, looks_like_logs_t, split_logs_t

Framing = Literal["plain", "docker-json", "docker-t"]


@dataclass(frozen=True, slots=True)
class Malformed:
    """A physical line that should have been a docker entry and is not (counted as a parse error)."""

    reason: str


Batch = int | LogLine | Malformed

# json-file: a complete entry's log value ends in an escaped newline right before the stream key. An
# escaped backslash before `n` would fake it, so such chunks take the exact, per-line path.
_COMPLETE = b'\\n","stream":"'
_FAKE_COMPLETE = b'\\\\n","stream":"'


def marker_pattern(markers: tuple[str, ...]) -> re.Pattern[bytes] | None:
    """One bytes regex for the parser's markers; None when every line must be parsed."""
    if not markers:
        return None
    return re.compile(b"|".join(re.escape(m.encode("ascii")) for m in sorted(set(markers))))


# `re` scans an alternation of literals byte by byte against the set of first bytes; with markers
# that start with common letters that runs at ~60 MB/s. The scanner anchors every marker at its
# rarest byte (counted in a sample of the data), translates all anchor bytes to one sentinel and
# searches `sentinel(tail|tail|...)` in the translated copy, which `re` does as a single-byte scan.
# Translation only merges bytes, so a line holding a marker always yields a candidate; the caller
# checks candidates with the exact pattern, so the batches are the same as with the plain scan.


class Scanner:
    """Finds the lines that may hold a marker in one fast pass, however many markers there are."""

    def __init__(self, markers: tuple[str, ...], sample: bytes) -> None:
        encoded = sorted({m.encode("ascii") for m in markers})
        if any(b"\n" in marker for marker in encoded):
            raise ValueError("a marker cannot span lines")
        freq = {byte: sample.count(byte) for byte in set(b"".join(encoded))}
        anchors: dict[bytes, int] = {}
        for marker in encoded:
            ranks = [(freq[byte], i) for i, byte in enumerate(marker)]
            anchors[marker] = min(ranks)[1]
        table = bytearray(range(256))
        for marker, at in anchors.items():
            table[marker[at]] = 0
        self.table = bytes(table)
        tails = sorted({re.escape(m[at + 1 :].translate(self.table)) for m, at in anchors.items()})
        self.pattern = re.compile(b"\\x00(?:" + b"|".join(tails) + b")")
        self.exact = re.compile(b"|".join(re.escape(marker) for marker in encoded))
        # The detour pays only when markers are rare and candidates mostly real; otherwise (every
        # line a candidate, or anchors that are common bytes in this data) scan the plain pattern.
        found = sum(1 for _ in self.exact.finditer(sample))
        maybe = sum(1 for _ in self.pattern.finditer(sample.translate(self.table)))
        self.verify = found * 512 < len(sample) and maybe <= 2 * found + 16

    def candidates(self, data: bytes) -> Iterator[int]:
        """Ascending offsets of a marker (or, when `verify`, maybe one) in `data`, never a `\\n`."""
        if not self.verify:
            for match in self.exact.finditer(data):
                yield match.start()
            return
        for match in self.pattern.finditer(data.translate(self.table)):
            yield match.start()


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").removesuffix("\r")


class Framer:
    """Frames one source's bytes; keeps the json-file joiner between calls."""

    def __init__(self, source: str, framing: Framing, markers: tuple[str, ...], max_line: int) -> None:
        self.source = source
        self.framing = framing
        self._pattern = marker_pattern(markers)
        self._joiner = EntryJoiner(max_line)
        self._cut = 0
        self._markers = markers
        self._scanner: Scanner | None = None

    @property
    def truncated(self) -> int:
        """Lines cut at the size cap (by the reader, or while joining docker entries)."""
        return self._joiner.truncated + self._cut

    def note_truncated(self) -> None:
        """Count a line the reader cut at the size cap."""
        self._cut += 1

    def _wanted(self, raw: bytes | str) -> bool:
        if self._pattern is None:
            return True
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "replace")
        return self._pattern.search(raw) is not None

    def feed(self, raw: bytes) -> Iterator[Batch]:
        """One physical line, without its `\\n`."""
        if self.framing == "docker-json":
            yield from self._feed_json(raw)
        elif not self._wanted(raw):
            yield 1
        elif self.framing == "docker-t":
            body, stamp = split_logs_t(raw)
            yield LogLine(self.source, _decode(body), stamp)
        else:
            yield LogLine(self.source, _decode(raw), None)

    def _feed_json(self, raw: bytes) -> Iterator[Batch]:
        certain = _COMPLETE in raw and _FAKE_COMPLETE not in raw and not self._joiner.busy
        if certain and not self._wanted(raw):
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

    def chunk(self, data: bytes) -> Iterator[Batch]:
        """A block of whole lines, each ending in `\\n`."""
        if self._pattern is None or not self._fast(data):
            for raw in data.split(b"\n")[:-1]:
                yield from self.feed(raw)
            return
        if self._scanner is None:
            self._scanner = Scanner(self._markers, data[: 256 << 10])
        exact, verify = self._pattern, self._scanner.verify
        pos = seen = 0
        for at in self._scanner.candidates(data):
            if at < seen:
                continue  # a second candidate on a line already taken or rejected
            start = data.rfind(b"\n", 0, at) + 1
            end = seen = data.index(b"\n", at)
            if verify and exact.search(data, start, end) is None:
                continue  # no marker after all: the line stays among the skipped ones
            skipped = data.count(b"\n", pos, start)
            if skipped:
                yield skipped
            yield from self.feed(data[start:end])
            pos = end + 1
        rest = data.count(b"\n", pos)
        if rest:
            yield rest

    def _fast(self, data: bytes) -> bool:
        if self.framing != "docker-json":
            return True
        if self._joiner.busy or _FAKE_COMPLETE in data:
            return False
        return data.count(_COMPLETE) == data.count(b"\n")

    def finish(self) -> Iterator[Batch]:
        """End of input: a line cut mid-way by the end of the file is still a line."""
        for text, stamp in self._joiner.pending():
            yield LogLine(self.source, text, stamp) if self._wanted(text) else 1


def sniff(head: bytes) -> Framing:
    """Tell the framing from the first bytes of a (decompressed) file."""
    first = head.lstrip()[:8]
    if first.startswith(b'{"log":'):
        return "docker-json"
    return "docker-t" if looks_like_logs_t(head) else "plain"
