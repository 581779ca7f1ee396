"""Docker's json-file log driver and `docker logs -t`: physical entries back into log lines.

json-file (moby `jsonlog`): `{"log":"<bytes incl. \\n>","stream":"stdout","time":"<RFC3339Nano>"}`, one
entry per line. The log copier cuts lines at 16 KiB; every entry but the last of a cut line lacks the
trailing `\\n`, and json-file stores no other marker, so entries are joined until one ends in `\\n`.
`docker logs -t` prefixes each *entry* with a 9-digit timestamp; a cut line therefore carries a second
timestamp glued in at each 16 KiB boundary, which is removed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kvwatch.sources.linecap import LINE_CAP, TextClip
from kvwatch.times import parse_rfc3339

DOCKER_SPLIT = 16 * 1024
_TS_PREFIX = re.compile(rb"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)) ")
_TS_GLUED = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z ")


@dataclass(frozen=True, slots=True)
class Entry:
    """One decoded json-file entry."""

    log: str
    stream: str
    time: float | None


def decode_entry(raw: bytes | str) -> Entry | None:
    """Decode one json-file line; None when it is not a docker entry (counted by the caller)."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    log, stream, stamp = obj.get("log"), obj.get("stream", ""), obj.get("time")
    if not isinstance(log, str) or not isinstance(stream, str) or not isinstance(stamp, str):
        return None
    return Entry(log=log, stream=stream, time=parse_rfc3339(stamp))


# The common entry: a log value and stamp with no escape (JSON strings hold no raw `"`, `\\` or control
# character) but ESC's (`\\u001b`: ANSI colour, vLLM 0.8-0.11's prefixes, LMCache's every record), ending
# in an escaped newline, from either stream.
# (The bytes but `"`, `\\` and controls as ranges: `re` reads a class of ranges twice as fast as the
# negated class, `[^"\\\x00-\x1f]`.)
_PLAIN_BYTE = rb"[\x20\x21\x23-\x5b\x5d-\xff]"
_SIMPLE = re.compile(
    rb'\{"log":"(' + _PLAIN_BYTE + rb"*(?:\\u001b" + _PLAIN_BYTE + rb'*)*)\\n","stream":"std(?:out|err)",'
    rb'"time":"(' + _PLAIN_BYTE + rb'*)"\}'
)


def simple_entry(data: bytes, start: int, end: int) -> tuple[str, float | None, int] | None:
    """A complete entry of the common shape in data[start:end], decoded without json.loads.

    The shape moby writes for nearly every line: `{"log":"<text>\\n","stream":"stdout|stderr",
    "time":"<stamp>"}` with no escape in text or stamp but `\\u001b` (ESC) in the text. Such a value,
    its ESCs put back, is its own JSON decoding: what json.loads would read. Returns (the line without
    its `\\n`, time, end offset of the log text in `data`), or None for any other shape (decode_entry
    then reads it).
    """
    match = _SIMPLE.fullmatch(data, start, end)
    if match is None:
        return None
    try:
        text = match.group(1).decode("utf-8")
        when = _docker_time(match.group(2))
    except UnicodeDecodeError:
        return None
    if "\\" in text:  # (only `\\u001b` can be there)
        text = text.replace("\\u001b", "\x1b")
    return text, when, match.end(1)


#: The last whole second _docker_time read (its text up to the fraction, and parse_rfc3339 of it), and
#: the last date (its text, and parse_rfc3339 of its midnight).
_LAST_SECOND: list[tuple[bytes, float | None]] = [(b"", None)]
_LAST_DAY: list[tuple[bytes, float | None]] = [(b"", None)]


def _docker_time(stamp: bytes) -> float | None:
    """parse_rfc3339() of a json-file entry's time (ASCII; UnicodeDecodeError otherwise); the form moby
    writes (`YYYY-MM-DDTHH:MM:SS.fffffffffZ`, nine digits, UTC) in fewer steps."""
    if len(stamp) != 30 or stamp[19] != 0x2E or stamp[29] != 0x5A or not stamp[20:29].isdigit():
        return parse_rfc3339(stamp.decode("ascii"))
    whole, base = _LAST_SECOND[0]
    if stamp[:19] != whole:
        whole = stamp[:19]
        if b"." in whole:  # (parse_rfc3339 would cut it there)
            return parse_rfc3339(stamp.decode("ascii"))
        base = _whole_second(whole)
        _LAST_SECOND[0] = (whole, base)
    # parse_rfc3339 reads `second - offset + fraction`: the same second (no fraction), no offset, then
    # the nine digits over 1e9.
    return None if base is None else base + int(stamp[20:29]) / 1e9


def _whole_second(whole: bytes) -> float | None:
    """parse_rfc3339 of `YYYY-MM-DDTHH:MM:SS` + `Z` (ASCII, no `.`): within a day seen last, its midnight
    plus the hours, minutes and seconds (what a UTC datetime's timestamp() is, exactly)."""
    day, midnight = _LAST_DAY[0]
    if (
        whole[:10] == day
        and midnight is not None
        and whole[10:11] == b"T"
        and whole[13:14] == whole[16:17] == b":"
    ):
        hh, mm, ss = whole[11:13], whole[14:16], whole[17:19]
        if hh.isdigit() and mm.isdigit() and ss.isdigit() and hh < b"24" and mm < b"60" and ss < b"60":
            return midnight + (int(hh) * 3600 + int(mm) * 60 + int(ss))
    second = parse_rfc3339(whole.decode("ascii") + "Z")
    if whole[:10] != day:
        _LAST_DAY[0] = (whole[:10], parse_rfc3339(whole[:10].decode("ascii") + "T00:00:00Z"))
    return second


class EntryJoiner:
    """Joins 16 KiB partial entries (per stream) into whole lines; past the size cap a line keeps its
    head and tail (see linecap.py)."""

    def __init__(self, max_line: int = LINE_CAP) -> None:
        self._parts: dict[str, TextClip] = {}
        self._times: dict[str, float | None] = {}
        self.max_line = max_line
        self.truncated = 0

    @property
    def busy(self) -> bool:
        """Whether a cut line is waiting for its next entry."""
        return bool(self._parts)

    def add(self, entry: Entry) -> tuple[str, float | None] | None:
        """Add an entry; return (line without its ending, time of its first entry) once complete."""
        stream = entry.stream
        if not entry.log.endswith("\n"):
            clip = self._parts.get(stream)
            if clip is None:
                clip = self._parts[stream] = TextClip(self.max_line)
                self._times[stream] = entry.time
            clip.add(entry.log)
            return None
        clip = self._parts.pop(stream, None)
        if clip is None:
            return entry.log[:-1].removesuffix("\r"), entry.time
        clip.add(entry.log[:-1])
        text, cut = clip.take()
        self.truncated += cut
        return text.removesuffix("\r"), self._times.pop(stream)

    def forget(self) -> None:
        """Drop the parts waiting (what was added since it was last idle is to be added again)."""
        self._parts.clear()
        self._times.clear()

    def pending(self) -> list[tuple[str, float | None]]:
        """Lines still waiting for their end (at end of input)."""
        out = []
        for stream, clip in self._parts.items():
            text, cut = clip.take()
            self.truncated += cut
            out.append((text, self._times[stream]))
        self._parts.clear()
        self._times.clear()
        return out


class SavedJoiner:
    """An EntryJoiner that also keeps the entries of each line not yet complete, for a saved position:
    a line docker cut at 16 KiB whose head was read before a restart is joined whole after it."""

    def __init__(self, line_cap: int, pending: Iterable[Entry] = ()) -> None:
        self.joiner = EntryJoiner(line_cap)
        self._parts: dict[str, list[Entry]] = {}
        self._cap = line_cap
        for entry in pending:
            self.add(entry)

    def add(self, entry: Entry) -> tuple[str, float | None] | None:
        """Join one entry: (line, time of its first entry) once complete; else keep it for pending()."""
        whole = self.joiner.add(entry)
        if whole is not None:
            self._parts.pop(entry.stream, None)
            return whole
        parts = self._parts.setdefault(entry.stream, [])
        if sum(len(p.log) for p in parts) < self._cap:  # beyond the cap the joiner drops them too
            parts.append(entry)
        return None

    def pending(self) -> list[Entry]:
        """The entries of the lines not yet complete, to save."""
        return [entry for parts in self._parts.values() for entry in parts]

    def finish(self) -> list[tuple[str, float | None]]:
        """The incomplete lines as they are (their log ended, or was replaced for good)."""
        self._parts.clear()
        return self.joiner.pending()


def entries_to_json(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """Pending entries in a saved position's form."""
    return [{"log": e.log, "stream": e.stream, "time": e.time} for e in entries]


def entries_from_json(saved: Iterable[Any]) -> list[Entry]:
    """entries_to_json() read back; KeyError, TypeError or ValueError when malformed."""
    return [
        Entry(str(e["log"]), str(e["stream"]), None if e.get("time") is None else float(e["time"]))
        for e in saved
    ]


def split_logs_t(text: bytes) -> tuple[bytes, float | None]:
    """Strip a `docker logs -t` timestamp and the ones glued in at 16 KiB (byte) boundaries."""
    match = _TS_PREFIX.match(text)
    if match is None:
        return text, None
    stamp = parse_rfc3339(match.group(1).decode("ascii"))
    rest = text[match.end() :]
    if len(rest) <= DOCKER_SPLIT:
        return rest, stamp
    pieces: list[bytes] = []
    pos = 0
    while len(rest) - pos > DOCKER_SPLIT:
        glued = _TS_GLUED.match(rest, pos + DOCKER_SPLIT)
        if glued is None:
            break
        pieces.append(rest[pos : pos + DOCKER_SPLIT])
        pos = glued.end()
    pieces.append(rest[pos:])
    return b"".join(pieces), stamp


def looks_like_logs_t(sample: bytes) -> bool:
    """Whether most of the first lines start with `docker logs -t` timestamps."""
    lines = [line for line in sample.splitlines()[:20] if line]
    return bool(lines) and sum(1 for line in lines if _TS_PREFIX.match(line)) * 2 > len(lines)
