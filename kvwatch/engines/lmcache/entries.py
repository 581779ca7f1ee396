"""LMCache's commonest records as a docker json-file entry holds them, read from its bytes undecoded.

vLLM's container log holds LMCache's records on stderr, one json-file entry each:
`{"log":"<process tag>\\u001b[32;20m[<stamp>] LMCache INFO:\\u001b[0m <message> \\u001b[3m(<file:line:name>)
\\u001b[0m\\n","stream":"stderr","time":"<stamp>"}`. The framer hands the parser these lines undecoded, in
runs (kvwatch.sources.framing.Entries), and `LINE` reads a run's lines in one pass. Where every
character of the entry is printable ASCII and stands for itself but the ESCs (`\\u001b`, what framing's
`simple_entry` decodes by slicing), the patterns below, read on the bytes, match exactly where the
parser's fast patterns (`_F_STORED`, `_F_RETRIEVED`, `_F_LOOKUP` in kvwatch.engines.lmcache.parser) match
the decoded line, with the same groups as bytes: each is the text pattern with ESC written `\\u001b`, and
`\\S` or `[^\\]\\s]` narrowed to printable ASCII other than `"` and `\\` (a narrower class only sends more
entries the decoded way). They also ask what makes the general reading (LmcacheLayer.record, which reads a
source's first record) give the same: no space after the file's `(` (record() cuts the message at the
last ` (`), sizes and costs of at most 9 whole digits (it reads them through a float). Any other entry (an
escape, a quote, a control or non-ASCII byte anywhere in it) is not matched: it is decoded and parsed as
a line.
"""

from __future__ import annotations

import re
from typing import Any

from kvwatch.sources.scanner import count

__all__ = ["LINE", "RECORD", "Row", "read_rows"]

# A character of a JSON string that is itself: printable ASCII but `"` and `\`; then without the space
# (what `\S` reads of such a character), and without `]` as well; and a process tag's, without `[` and `]`
# (the record's `] LMCache INFO:` is then the line's first, where the text path looks).
_CHAR = rb"[\x20\x21\x23-\x5b\x5d-\x7e]"
_WORD = rb"[\x21\x23-\x5b\x5d-\x7e]"
_ID = rb"[\x21\x23-\x5b\x5e-\x7e]"
_TAG = rb"[\x20\x21\x23-\x5a\x5e-\x7e]"
# The file's stretch of such characters and at most one ESC (a narrower pattern only sends more entries
# the decoded way). Optional parts below are written `(?:...|)`, which `re` reads faster than `(?:...)?`:
# the same matches, tried in the same order.
_FILE = _WORD + rb"*(?:\\u001b" + _WORD + rb"*|)"
# A `%.4f` size or cost: its whole part and its four decimals (up to 9 digits: record() reads it through a
# float, exact below 2^53 units of 1e-4).
_DECIMAL = rb"(\d{1,9})\.(\d{4})"

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

#: A run's line, after the `\n` before it: the head (`{"log":"`, the process tag and its colours, with no
#: `[` but theirs and no `]`), then RECORD. No character it reads is a newline: a match is one whole line.
LINE = re.compile(
    rb'\n(\{"log":"' + _TAG + rb"*(?:\\u001b\[[0-9;]*m" + _TAG + rb"*)*)" + RECORD.pattern + rb"(?=\n)"
)

#: What LINE reads of a line: its head (bytes, up to the stamp), the stamp's second (bytes), the request
#: of a store or load (str); a store's tokens, tokens offered, size and cost (`%.4f` as printed, its digits
#: without the point: 1e-4 GiB, 100 ns); a load's tokens, tokens required, size and cost; a lookup's request
#: (str), total, computed, hit and need (ints); None where not printed (one kind's numbers are there).
Row = tuple[Any, ...]  # (16 fields, each kind's None where another's are: typed field by field above)


def read_rows(run: bytes) -> list[Row | bytes]:
    """Each line of a run (each after a `\\n`, and a `\\n` at the end) as LINE reads it, or its bytes
    (without the `\\n`) where LINE does not match it."""
    if run[:1] == b"\n" and len(found := LINE.findall(run)) == count(run, b"\n") - 1:
        return [_row(groups) for groups in found]  # (a match is one whole line: n matches, n lines)
    out: list[Row | bytes] = []
    match, find = LINE.match, run.find
    at = 0
    while (end := find(b"\n", at + 1)) >= 0:
        line = match(run, at)
        out.append(run[at + 1 : end] if line is None else _row(line.groups(b"")))
        at = end
    return out


def _row(groups: tuple[bytes, ...]) -> Row:
    """A Row of LINE's groups (b"" where a group took no part)."""
    head, second, request, stored, offered, size, size4, cost, cost4 = groups[:9]
    got, required, got_size, got_size4, got_cost, got_cost4, rid, total, local, hit, need = groups[9:]
    if rid:
        return (
            head, second, None, None, None, None, None, None, None, None, None, rid.decode("ascii"),
            int(total), int(local) if local else None, int(hit), int(need),
        )  # fmt: skip
    if stored:
        return (
            head, second, request.decode("ascii") if request else None, int(stored), int(offered),
            int(size + size4), int(cost + cost4), None, None, None, None, None, None, None, None, None,
        )  # fmt: skip
    return (
        head, second, request.decode("ascii") if request else None, None, None, None, None, int(got),
        int(required), int(got_size + got_size4), int(got_cost + got_cost4), None, None, None, None, None,
    )  # fmt: skip
