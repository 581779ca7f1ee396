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
from kvwatch.sources.docker_json import (
    EntryJoiner,
    decode_entry,
    looks_like_logs_t,
    simple_entry,
    split_logs_t,
)
from kvwatch.sources.scanner import Scanner

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
        fast = None
        if self._pattern is not None:
            if self._scanner is None:
                self._scanner = Scanner(self._markers, data[: 256 << 10])
            fast = self._json_chunk(data) if self.framing == "docker-json" else self._text_chunk(data)
        if fast is None:
            for raw in data.split(b"\n")[:-1]:
                yield from self.feed(raw)
            return
        yield from fast

    def _text_chunk(self, data: bytes) -> Iterator[Batch]:
        # Plain and `docker logs -t` lines: the scanner found the marker, feed() need not look again.
        assert self._scanner is not None
        pos = 0
        for start, end, _, _ in self._scanner.lines(data):
            skipped = data.count(b"\n", pos, start)
            if skipped:
                yield skipped
            raw = data[start:end]
            if self.framing == "docker-t":
                body, stamp = split_logs_t(raw)
                yield LogLine(self.source, _decode(body), stamp)
            else:
                yield LogLine(self.source, _decode(raw), None)
            pos = end + 1
        rest = data.count(b"\n", pos)
        if rest:
            yield rest

    def _json_chunk(self, data: bytes) -> list[Batch] | None:
        # Lines without a marker are skipped undecoded only when every line of the chunk is a
        # complete entry (no cut line to join). Counting that takes a pass over the chunk; the
        # newline count comes from the gaps between candidates instead, so the items are collected
        # first and the chunk goes the exact way (None) when the counts disagree.
        if self._joiner.busy or _FAKE_COMPLETE in data:
            return None
        assert self._scanner is not None
        complete = data.count(_COMPLETE)
        items: list[Batch] = []
        pos = lines = 0
        checked = False
        for start, end, mark, mark_end in self._scanner.lines(data):
            skipped = data.count(b"\n", pos, start)
            if skipped:
                items.append(skipped)
            lines += skipped + 1
            pos = end + 1
            simple = simple_entry(data, start, end)
            # The common entry (no escape but its final `\\n`) decodes by slicing; its text holds
            # the marker when the marker lies inside the log value.
            if simple is not None and start + 8 <= mark and mark_end <= simple[2]:
                items.append(LogLine(self.source, simple[0], simple[1]))
                continue
            if not checked:  # the exact path may join entries: only once the chunk is known whole
                if data.count(b"\n") != complete:
                    return None
                checked = True
            items.extend(self._feed_json(data[start:end]))
        rest = data.count(b"\n", pos)
        if lines + rest != complete:
            return None
        if rest:
            items.append(rest)
        return items

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
