"""LMCache's commonest records as a docker json-file entry holds them, read from its bytes undecoded.

vLLM's container log holds LMCache's records on stderr, one json-file entry each:
`{"log":"<process tag>\\u001b[32;20m[<stamp>] LMCache INFO:\\u001b[0m <message> \\u001b[3m(<file:line:name>)
\\u001b[0m\\n","stream":"stderr","time":"<stamp>"}`. Where every character of the entry is printable ASCII
and stands for itself but the ESCs (`\\u001b`, what framing's `simple_entry` decodes by slicing), the
patterns below, read on the bytes, match exactly where the parser's fast patterns (`_F_STORED`,
`_F_RETRIEVED`, `_F_LOOKUP` in kvwatch.engines.lmcache.parser) match the decoded line, with the same
groups as bytes: each is the text pattern with ESC written `\\u001b`, and `\\S` or `[^\\]\\s]` narrowed to
printable ASCII other than `"` and `\\` (a narrower class only sends more entries the decoded way). Any
other entry (an escape, a quote, a control or non-ASCII byte anywhere in it) is not matched: it is
decoded and parsed as a line.
"""

from __future__ import annotations

import re

# A character of a JSON string that is itself: printable ASCII but `"` and `\`; then without the space
# (what `\S` reads of such a character), and without `]` as well.
_CHAR = rb"[\x20\x21\x23-\x5b\x5d-\x7e]"
_WORD = rb"[\x21\x23-\x5b\x5d-\x7e]"
_ID = rb"[\x21\x23-\x5b\x5e-\x7e]"
# A log value's stretch of such characters and ESCs.
_TEXT = _CHAR + rb"*(?:\\u001b" + _CHAR + rb"*)*"

#: The entry up to the record's stamp: `{"log":"` and the process tag (colour included), checked once
#: per tag.
TAG = re.compile(rb'\{"log":"' + _TEXT)

#: From the stamp's `[` to the entry's end: the stamp's second, then the groups of
#: `_F_STORED` or `_F_RETRIEVED` (request, tokens, asked, size and cost digits) or of `_F_LOOKUP`
#: (request, total, computed, hit, need), then the file, the newline, stream and time.
RECORD = re.compile(
    rb"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d{3}\] LMCache INFO:(?:\\u001b\[0m)? (?:"
    rb"(?:\[req_id=(" + _ID + rb"+)\] )?(?:"
    rb"Stored (\d+) out of total (\d+) tokens\. size: (\d+)\.(\d{4}) (?:gb|GB), cost (\d+)\.(\d{4}) ms, "
    rb"throughput: " + _WORD + rb"+ GB/s"
    rb"(?:; offload_time: " + _WORD + rb"+ ms, put_time: " + _WORD + rb"+ ms)?"
    rb"|Retrieved (\d+) out of (\d+) required tokens \(from \d+ total tokens\)\. size: (\d+)\.(\d{4}) gb, "
    rb"cost (\d+)\.(\d{4}) ms, throughput: " + _WORD + rb"+ GB/s;)"
    rb"|Reqid: (" + _WORD + rb"+?), Total tokens (\d+), (?:Inference Engine computed tokens: (\d+), )?"
    rb"LMCache hit tokens: (\d+), need to load: (-?\d+))"
    rb" (?:\\u001b\[3m)?\(" + _TEXT + rb'\\n","stream":"std(?:out|err)","time":"' + _CHAR + rb'*"\}'
)

#: Where the record's `[stamp] LMCache INFO:` starts, before its `] LMCache ` marker.
STAMP_BEFORE = 24
