"""LMCache's commonest records as a docker json-file entry holds them, read from its bytes undecoded.

vLLM's container log holds LMCache's records on stderr, one json-file entry each:
`{"log":"<process tag>\\u001b[32;20m[<stamp>] LMCache INFO:\\u001b[0m <message> \\u001b[3m(<file:line:name>)
\\u001b[0m\\n","stream":"stderr","time":"<stamp>"}`. Where every character of the entry is printable ASCII
and stands for itself but the ESCs (`\\u001b`, what framing's `simple_entry` decodes by slicing), the
patterns below, read on the bytes, match exactly where the parser's fast patterns (`_F_STORED`,
`_F_RETRIEVED`, `_F_LOOKUP` in kvwatch.engines.lmcache.parser) match the decoded line, with the same
groups as bytes: each is the text pattern with ESC written `\\u001b`, and `\\S` or `[^\\]\\s]` narrowed to
printable ASCII other than `"` and `\\` (a narrower class only sends more entries the decoded way). They
also ask what makes the general reading (LmcacheLayer.record, which reads a source's first record)
give the same: no space after the file's `(` (record() cuts the message at the last ` (`), sizes and
costs of at most 9 whole digits (it reads them through a float). Any other entry (an escape, a quote, a
control or non-ASCII byte anywhere in it) is not matched: it is decoded and parsed as a line.
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo
from typing import Any

# A character of a JSON string that is itself: printable ASCII but `"` and `\`; then without the space
# (what `\S` reads of such a character), and without `]` as well.
_CHAR = rb"[\x20\x21\x23-\x5b\x5d-\x7e]"
_WORD = rb"[\x21\x23-\x5b\x5d-\x7e]"
_ID = rb"[\x21\x23-\x5b\x5e-\x7e]"
# A log value's stretch of such characters and ESCs; the same without a space, and at most one ESC (the
# file's: a narrower pattern only sends more entries the decoded way). Optional parts below are written
# `(?:...|)`, which `re` reads faster than `(?:...)?`: the same matches, tried in the same order.
_TEXT = _CHAR + rb"*(?:\\u001b" + _CHAR + rb"*)*"
_FILE = _WORD + rb"*(?:\\u001b" + _WORD + rb"*|)"
# A `%.4f` size or cost: its whole part and its four decimals (up to 9 digits: record() reads it through a
# float, exact below 2^53 units of 1e-4).
_DECIMAL = rb"(\d{1,9})\.(\d{4})"

#: The entry up to the record's stamp: `{"log":"` and the process tag (colour included), checked once
#: per tag.
TAG = re.compile(rb'\{"log":"' + _TEXT)

#: From the stamp's `[` to the entry's end: the stamp's second, then the groups of
#: `_F_STORED` or `_F_RETRIEVED` (request, tokens, asked, size and cost digits) or of `_F_LOOKUP`
#: (request, total, computed, hit, need), then the file, the newline, stream and time.
RECORD = re.compile(
    rb"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d{3}\] LMCache INFO:(?:\\u001b\[0m|) (?:"
    rb"(?:\[req_id=(" + _ID + rb"+)\] |)(?:"
    rb"Stored (\d+) out of total (\d+) tokens\. "
    rb"size: " + _DECIMAL + rb" (?:gb|GB), cost " + _DECIMAL + rb" ms, "
    rb"throughput: " + _WORD + rb"+ GB/s"
    rb"(?:; offload_time: " + _WORD + rb"+ ms, put_time: " + _WORD + rb"+ ms|)"
    rb"|Retrieved (\d+) out of (\d+) required tokens \(from \d+ total tokens\)\. "
    rb"size: " + _DECIMAL + rb" gb, "
    rb"cost " + _DECIMAL + rb" ms, throughput: " + _WORD + rb"+ GB/s;)"
    rb"|Reqid: (" + _WORD + rb"+?), Total tokens (\d+), (?:Inference Engine computed tokens: (\d+), |)"
    rb"LMCache hit tokens: (\d+), need to load: (-?\d+))"
    rb" (?:\\u001b\[3m|)\(" + _FILE + rb'\\n","stream":"std(?:out|err)","time":"' + _CHAR + rb'*"\}'
)

#: Where the record's `[stamp] LMCache INFO:` starts, before its `] LMCache ` marker.
STAMP_BEFORE = 24
#: RECORD's groups: a store's tokens (then offered, size and cost digits) where not None, else a load's
#: tokens (then required, size and cost digits) where not None, else a lookup's request (then total,
#: computed, hit, need); before them the stamp's second and the request of a store or load.
STORE, LOAD, LOOKUP = 2, 8, 14
_BRACKET = ord("]")  # (LMCache's marker's first byte)

#: What EntryMatcher makes of an entry: its head up to the stamp (TAG; one object per head), the stamp's
#: epoch second, then for a store or load: whether a load, the request (None: not printed), the tokens,
#: tokens offered or required, the size in 1e-4 GiB and the cost in 100 ns as printed (`%.4f`: the
#: digits without the point); for a lookup: None, the request, total, computed (None: not printed), hit,
#: need. Few objects, each small: it may cross a pipe.
Match = tuple[bytes, float, bool | None, str | None, int, int | None, int, int]

_UNSEEN: Any = object()  # (not remembered yet)

#: Heads and seconds remembered (each a pure function of its bytes).
_REMEMBERED = 4096


class EntryMatcher:
    """Reads LMCache's commonest records from json-file entries' bytes, with no state of the parse: run
    where the log is framed, while the parser (LmcacheLayer.take_entry) sums what it read."""

    def __init__(self, tz: tzinfo) -> None:
        self._tz = tz
        self._heads: dict[bytes, bytes | None] = {}  # head -> itself where of TAG's shape, else None
        self._seconds: dict[bytes, float | None] = {}  # stamp's second -> its epoch second (None: no date)

    def __call__(
        self, data: bytes, first: int, hits: list[tuple[int, int, int]], markers: int
    ) -> tuple[list[Match | None], list[tuple[int, tuple[int, int, int, int]]]]:
        """Each marker line among `hits` (Scanner.hits of data[first:], pattern indices from `markers` on
        not a marker's; as Scanner.lines finds the lines) read, when it is a store, a load that got what
        it required, or a lookup whose stamp is a date; else None in its place, and in the misses its
        place and (start, end, start of its first marker, end of it)."""
        # (Scanner.lines and the reading in one loop: a record costs a few microseconds, most of them
        # the interpreter's, and lines is a generator whose every line would cross a list and a zip)
        out: list[Match | None] = []
        misses: list[tuple[int, tuple[int, int, int, int]]] = []
        append, fullmatch = out.append, RECORD.fullmatch
        rfind, index = data.rfind, data.index
        heads, seconds = self._heads, self._seconds
        after = first  # the first offset past the last line read: later hits on it are skipped
        for which, begin, finish in hits:
            mark = begin + first
            if mark < after or which >= markers:
                continue
            before, end = rfind(b"\n", first, mark), index(b"\n", mark)
            start = before + 1 if before >= 0 else first
            after = end + 1
            match = fullmatch(data, mark - STAMP_BEFORE, end) if data[mark] == _BRACKET else None
            if match is None:  # (another marker's line, or not of RECORD's shape)
                misses.append((len(out), (start, end, mark, finish + first)))
                append(None)
                continue
            head = data[start : mark - STAMP_BEFORE]
            known = heads.get(head, _UNSEEN)
            if known is _UNSEEN:
                known = self._head(head)
            groups = match.groups()
            when = seconds.get(groups[0], _UNSEEN)
            if when is _UNSEEN:
                when = self._epoch(groups[0])
            if known is None or when is None:
                misses.append((len(out), (start, end, mark, finish + first)))
                append(None)
                continue
            request = groups[1]
            if groups[STORE] is not None:
                tokens, asked, size, size4, cost, cost4 = groups[STORE:LOAD]
                load = False
            elif groups[LOAD] is not None:
                tokens, asked, size, size4, cost, cost4 = groups[LOAD:LOOKUP]
                if int(tokens) < int(asked):
                    misses.append((len(out), (start, end, mark, finish + first)))
                    append(None)
                    continue
                load = True
            else:
                rid, total, local, hit, need = groups[LOOKUP:]
                append((
                    known, when, None, rid.decode("ascii"), int(total), None if local is None else int(local),
                    int(hit), int(need),
                ))  # fmt: skip
                continue
            append((
                known, when, load, None if request is None else request.decode("ascii"), int(tokens),
                int(asked), int(size + size4), int(cost + cost4),
            ))  # fmt: skip
        return out, misses

    def _head(self, head: bytes) -> bytes | None:
        """The head itself where it is of TAG's shape, else None (remembered)."""
        if len(self._heads) >= _REMEMBERED:
            self._heads.clear()
        known = self._heads[head] = head if TAG.fullmatch(head) is not None else None
        return known

    def _epoch(self, second: bytes) -> float | None:
        """The epoch second of `YYYY-MM-DD HH:MM:SS` in the zone (None: not a date), as the parser's own
        clock reads it (LmcacheLayer._when)."""
        text = second.decode("ascii")
        try:
            moment = datetime(
                int(text[:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]),
                int(text[17:19]), tzinfo=self._tz,
            )  # fmt: skip
            when: float | None = moment.timestamp()
        except ValueError:
            when = None
        if len(self._seconds) >= _REMEMBERED:
            self._seconds.clear()
        self._seconds[second] = when
        return when
