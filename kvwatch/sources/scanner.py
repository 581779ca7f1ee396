"""Finding the lines that hold one of a parser's markers in a block of bytes, in one vectorised pass.

The markers are literals, so they are searched with Aho-Corasick (the `aho-corasick` crate behind
ripgrep's literal search, through `ahocorasick_rs`): with leftmost-first matching it runs the SIMD
"Teddy" prefilter over the bytes and releases the GIL, several times faster than one `bytes.find`
pass per marker and an order of magnitude faster than `re` on an alternation. A line holds a marker
exactly when a match starts on it, so the lines found are exactly those holding a marker.
"""

from __future__ import annotations

from collections.abc import Iterator

from ahocorasick_rs import BytesAhoCorasick, MatchKind

#: A sample where at least this share of the lines hold a marker is "dense" (nearly every line of a
#: llama.cpp -lv 4 log): searching first would cost more than handing every line to the parser.
DENSE_SHARE = 0.25


class Scanner:
    """Finds the lines that hold a marker in one fast pass, however many markers there are."""

    def __init__(self, markers: tuple[str, ...], extra: tuple[bytes, ...] = ()) -> None:
        encoded = sorted({m.encode("ascii") for m in markers})
        if not encoded or any(not m or b"\n" in m for m in encoded):
            raise ValueError("markers must be non-empty and cannot span lines")
        self.markers = len(encoded)
        self.patterns = encoded  # (a hit's pattern index is its place here, the markers first)
        # `extra` patterns (the framer's own sentinels) come after the markers: a hit with an index
        # at or past `self.markers` is one of them.
        self._ac = BytesAhoCorasick([*encoded, *extra], matchkind=MatchKind.LeftmostFirst)

    def hits(self, data: bytes, start: int = 0, stop: int | None = None) -> list[tuple[int, int, int]]:
        """Every non-overlapping (pattern index, start, end) in data[start:stop], leftmost first; the
        offsets are relative to `start` (the range is searched in place, not copied)."""
        view = memoryview(data)[start:stop] if start or stop is not None else data
        return self._ac.find_matches_as_indexes(view)

    def lines(
        self,
        data: bytes,
        start: int = 0,
        stop: int | None = None,
        hits: list[tuple[int, int, int]] | None = None,
    ) -> Iterator[tuple[int, int, int, int]]:
        """(start, end) of each line of data[start:stop] (whole lines, each ending in `\\n`) holding a
        marker, and (start, end) of the first marker on it; `hits` from `hits()`, if already found."""
        after = start  # the first offset past the last line yielded: later hits on it are skipped
        rfind, index, markers = data.rfind, data.index, self.markers
        for which, begin, end in self.hits(data, start, stop) if hits is None else hits:
            at = begin + start
            if at < after or which >= markers:
                continue
            before, newline = rfind(b"\n", start, at), index(b"\n", at)
            yield (before + 1 if before >= 0 else start), newline, at, end + start
            after = newline + 1

    def dense(self, sample: bytes) -> bool:
        """Whether so many lines of the sample hold a marker that every line might as well be parsed."""
        lines = sample.count(b"\n")
        found = sum(1 for _ in self.lines(sample, 0, sample.rfind(b"\n") + 1))
        return lines > 0 and found >= DENSE_SHARE * lines


class LineFilter:
    """Which lines of a batch hold a marker, from one scan of the joined batch (the live file path)."""

    def __init__(self, markers: tuple[str, ...]) -> None:
        self._scanner = Scanner(markers) if markers else None

    def select(self, lines: list[bytes]) -> list[int]:
        """Ascending indices of the lines holding a marker (all of them when there are no markers)."""
        if self._scanner is None:
            return list(range(len(lines)))
        data = b"\n".join(lines) + b"\n"
        out, index, pos = [], 0, 0
        for start, end, _, _ in self._scanner.lines(data):
            index += data.count(b"\n", pos, start)
            out.append(index)
            index, pos = index + 1, end + 1
        return out
