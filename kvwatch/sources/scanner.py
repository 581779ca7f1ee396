"""Finding the lines that hold one of a parser's markers in a block of bytes, at a few passes' cost.

`re` scans an alternation of literals byte by byte against the set of first bytes: ~60 MB/s with
markers that start with common letters. The Scanner anchors every marker at a pair of adjacent bytes,
chosen (from a sample of the data) so that pairs of this shape are rare; it translates the first
bytes of the pairs to \\x00 and the second bytes to \\x01, and searches `\\x00\\x01(?:tail|tail|...)`
in the translated copy. `re` scans for a literal prefix with a plain byte loop and tries the rest only
where both bytes line up. Translation only merges bytes, so every marker's anchor is a hit; a hit is
confirmed by comparing the markers anchored at that byte with the original data, so the lines found
are exactly those holding a marker.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from itertools import pairwise


def _pairs(encoded: list[bytes], sample: bytes) -> dict[bytes, int] | None:
    """Each marker's anchor offset i (the pair marker[i], marker[i+1]); None when no choice keeps
    the first and second bytes apart."""
    counts = Counter(pairwise(sample))
    freq = Counter(sample)
    firsts: set[int] = set()
    seconds: set[int] = set()
    chosen: dict[bytes, int] = {}
    # Rarest markers first: they have the fewest good pairs to choose from.
    for marker in sorted(encoded, key=lambda m: min((counts[p] for p in pairwise(m)), default=0)):
        options = []
        for i, (a, b) in enumerate(pairwise(marker)):
            if a == b or a in seconds or b in firsts or (i > len(marker) - 6 and i > 0):
                continue  # (a tail of 4+ bytes after the pair keeps a hit from matching by chance)
            new_a, new_b = firsts | {a}, seconds | {b}
            # Every first byte stops the scan; a pair also starts a match attempt.
            cost = sum(freq[x] for x in new_a) + 8 * sum(counts[(x, y)] for x in new_a for y in new_b)
            options.append((cost, i))
        if not options:
            return None
        i = min(options)[1]
        chosen[marker] = i
        firsts.add(marker[i])
        seconds.add(marker[i + 1])
    return chosen


class Scanner:
    """Finds the lines that hold a marker in one fast pass, however many markers there are."""

    def __init__(self, markers: tuple[str, ...], sample: bytes) -> None:
        encoded = sorted({m.encode("ascii") for m in markers})
        if any(b"\n" in marker for marker in encoded):
            raise ValueError("a marker cannot span lines")
        self.exact = re.compile(b"|".join(re.escape(marker) for marker in encoded))
        anchors = _pairs(encoded, sample) if all(len(m) > 1 for m in encoded) else None
        self.verify = anchors is not None
        if anchors is None:
            return
        table = bytearray(range(256))
        self.at_byte: dict[int, list[tuple[bytes, int]]] = {}
        for marker, at in anchors.items():
            table[marker[at]], table[marker[at + 1]] = 0, 1
            self.at_byte.setdefault(marker[at], []).append((marker, at))
        self.table = bytes(table)
        tails = sorted({re.escape(m[at + 2 :].translate(self.table)) for m, at in anchors.items()})
        self.pattern = re.compile(b"\\x00\\x01(?:" + b"|".join(tails) + b")")
        # The detour pays only when markers are rare; when they are dense (nearly every line of a
        # llama.cpp -lv 4 log) or the pairs common in this data, scan the plain pattern instead.
        found = sum(1 for _ in self.exact.finditer(sample))
        maybe = sum(1 for _ in self.pattern.finditer(sample.translate(self.table)))
        self.verify = found * 512 < len(sample) and maybe <= 2 * found + 16

    def lines(self, data: bytes) -> Iterator[tuple[int, int, int, int]]:
        """(start, end) of each line of `data` (whole lines, each ending in `\\n`) holding a marker,
        and (start, end) of one marker on it."""
        if not self.verify:
            search, pos = self.exact.search, 0
            while (match := search(data, pos)) is not None:
                at = match.start()
                end = data.index(b"\n", at)
                yield data.rfind(b"\n", 0, at) + 1, end, at, match.end()
                pos = end + 1  # the rest of the line does not matter
            return
        search, pos, at_byte = self.pattern.search, 0, self.at_byte
        hay = data.translate(self.table)
        while (match := search(hay, pos)) is not None:
            at = match.start()
            for marker, offset in at_byte.get(data[at], ()):
                if at >= offset and data.startswith(marker, at - offset):
                    end = data.index(b"\n", at)
                    yield data.rfind(b"\n", 0, at) + 1, end, at - offset, at - offset + len(marker)
                    pos = end + 1
                    break
            else:
                pos = at + 1  # not a marker after all; one may still start further on this line


class LineFilter:
    """Which lines of a batch hold a marker, from one scan of the joined batch (the live file path)."""

    def __init__(self, markers: tuple[str, ...]) -> None:
        self._markers = markers
        encoded = (re.escape(m.encode("ascii")) for m in markers)
        self._exact = re.compile(b"|".join(encoded)) if markers else None
        self._scanner: Scanner | None = None

    def select(self, lines: list[bytes]) -> list[int]:
        """Ascending indices of the lines holding a marker (all of them when there are no markers)."""
        if self._exact is None:
            return list(range(len(lines)))
        data = b"\n".join(lines) + b"\n"
        if self._scanner is None:
            if len(data) < 16 << 10:  # too little to choose anchors from: search each line
                return [i for i, line in enumerate(lines) if self._exact.search(line)]
            self._scanner = Scanner(self._markers, data[: 256 << 10])
        out, index, pos = [], 0, 0
        for start, end, _, _ in self._scanner.lines(data):
            index += data.count(b"\n", pos, start)
            out.append(index)
            index, pos = index + 1, end + 1
        return out
