"""LMCache's lines -> lookups, stores, loads and failures: the layer vLLM's parser hands them to.

One `LmcacheLayer` per source reads records in LMCache's own format (kvwatch.engines.lmcache.lines)
wherever they sit on a line (behind vLLM's process tag, a tqdm bar, ANSI colour). Lookups come from the
scheduler and repeat for one request while it waits: the first line with a number counts, per request
id, in a bounded set of recent ids that a store or load of the request leaves (looked up again after it
ran, e.g. preempted, it counts again, as LMCache defines it). Stores and loads come from each TP worker,
labelled by its rank. Time is the record's own stamp, to the second.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from kvwatch.engines.base import AS_LAYER
from kvwatch.engines.lmcache import lines as lm
from kvwatch.engines.lmcache.blind import SEEN
from kvwatch.engines.lmcache.events import LmcacheFailure, LmcachePrefetch, LmcacheTransfer
from kvwatch.engines.lmcache.sums import STRETCH, Sums
from kvwatch.model import EngineFact, Event, LogLine
from kvwatch.parsers.base import BlockResult, ParseError, ParseResult, ParserSettings, tally
from kvwatch.parsers.clock import LineClock
from kvwatch.parsers.drift import Drift
from kvwatch.parsers.text import segments, strip_ansi
from kvwatch.times import zone

if TYPE_CHECKING:
    from kvwatch.sources.framing import Malformed

#: Request ids kept to count a request's lookup once (oldest forgotten first).
MAX_IDS = 4096
#: Process tags remembered with their worker label.
MAX_TAGS = 256
_GIB = float(1 << 30)
_STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\Z")
_INFO = "] LMCache INFO:"
# The commonest INFO messages, each to its end (lines.py's STORED with a size, RETRIEVED, LOOKUP with a
# number), one regex per kind: an alternation of them costs three times as much per line.
_END = r" (?:\x1b\[3m)?\("
# From just after `INFO:`: the request id where printed, the numbers, sizes and costs as their printed
# digits (`%.4f`: 4 decimals, read as whole units of 1e-4 GiB and 100 ns without a float).
_HEAD = r"(?:\x1b\[0m)? (?:\[req_id=([^\]\s]+)\] )?"
_F_STORED = re.compile(
    _HEAD
    + r"Stored (\d+) out of total (\d+) tokens\. size: (\d+)\.(\d{4}) (?:gb|GB), cost (\d+)\.(\d{4}) ms, "
    r"throughput: \S+ GB/s(?:; offload_time: \S+ ms, put_time: \S+ ms)?" + _END
)
_F_RETRIEVED = re.compile(
    _HEAD
    + r"Retrieved (\d+) out of (\d+) required tokens \(from \d+ total tokens\)\. size: (\d+)\.(\d{4}) gb, "
    r"cost (\d+)\.(\d{4}) ms, throughput: \S+ GB/s;" + _END
)
_F_LOOKUP = re.compile(
    r"(?:\x1b\[0m)? Reqid: (\S+?), Total tokens (\d+), (?:Inference Engine computed tokens: (\d+), )?"
    r"LMCache hit tokens: (\d+), need to load: (-?\d+)" + _END
)
_OLD_STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d{3}\] -- \S+:\d+\Z")


def worker_of(tag: str) -> str:
    """The `worker` label of vLLM's process tag: `tp<rank>` (`dp<d>-tp<rank>` beyond DP rank 0);
    `tp0` without a tag (one process); `unknown` for a tag with no rank (Ray's)."""
    if "(" not in tag:
        return "tp0"
    rank = lm.TP_RANK.search(tag)
    dp = lm.DP_RANK.search(tag)
    if rank is None:
        return "tp0" if "EngineCore" in tag else "unknown"
    tp = f"tp{rank.group(1) or rank.group(2)}"
    return tp if dp is None or dp.group(1) == "0" else f"dp{dp.group(1)}-{tp}"


#: Every line the parser can make an event of holds one.
MARKERS: tuple[str, ...] = (lm.MARKER, lm.OLD_MARKER)


class LmcacheLayer:
    """One source's LMCache state: recent request ids, the workers' tags, a pending retrieve error, the
    sums held back. The parser of a log of LMCache's alone (its MP-mode server's, `engine = "lmcache"`)
    too."""

    markers = MARKERS
    #: The marker of the json-file lines a carrying parser hands take_run undecoded.
    RAW_MARKER = lm.MARKER

    def __init__(self, source: str, settings: ParserSettings, *, hold: bool = True) -> None:
        self.source = source
        self._hold = hold  # sums held for a stretch (False: handed on with each line)
        self._tz = zone(settings.tz)
        self._seen: dict[str, None] = {}  # request ids whose lookup counted (insertion order: oldest first)
        self._workers: dict[str, str] = {}
        self._stamp = ("", 0.0)
        self._day = ("", 0.0)  # (the date of the last stamp read, and its midnight: UTC only)
        # Per worker: the request of an ERROR `... less than the expected` waiting for its numbers.
        self._pending: dict[str, tuple[float, str]] = {}
        self._seen_any = False  # (the fact SEEN said once, with the first line read)
        self._looked = False  # a lookup line read (what makes a short load a failure in a log of its own)
        self._sums = Sums(source)
        self._drift = Drift(source, "lmcache", lm.SHAPES)  # records of shapes or keys no release printed
        # json-file lines' heads up to the stamp -> its worker; their stamps' seconds -> epoch (None: no date)
        self._tags: dict[bytes, str] = {}
        self._seconds: dict[bytes, float | None] = {}

    def parse(self, line: LogLine) -> ParseResult:
        """Every LMCache record of a physical line (None: none of LMCache's, or none known)."""
        result = self._parse(line)
        if self._hold or not self._sums.held or not isinstance(result, list):
            return result
        return [*result, *self._sums.drain()]

    def _parse(self, line: LogLine) -> ParseResult:
        """parse() but for the sums' hand-over."""
        text = line.text
        at = text.find(_INFO)
        if at >= 24 and self._seen_any and "\r" not in text and text[at - 24] == "[":
            quick = self._fast(text, at)
            if quick is not None:
                return quick
        if "\r" not in text:
            return self.record(text, line.time)
        events: list[Event] = []
        recognised, error = False, None
        for piece in segments(text):
            if lm.MARKER in piece or lm.OLD_MARKER in piece:
                outcome = self.record(piece, line.time)
                if isinstance(outcome, list):
                    recognised = True
                    events += outcome
                elif outcome is not None and error is None:
                    error = outcome
        return events if recognised else error

    def _fast(self, text: str, at: int) -> list[Event] | None:
        """What record() makes of the commonest INFO records, in fewer steps; None: read it the
        general way (another message, a short load, a new second whose stamp is bad)."""
        pos, load = at + 15, False
        # The message's first character picks the likely shape: `[req_id=...] Stored|Retrieved` (0.3.15+),
        # `Stored`, `Reqid` or `Retrieved` (up to 0.3.12).
        first = text[pos + 5 : pos + 6] if text.startswith("\x1b", pos) else text[pos + 1 : pos + 2]
        if first == "R":
            match = _F_LOOKUP.match(text, pos)
            if match is None:
                match, load = _F_RETRIEVED.match(text, pos), True
        else:
            match = _F_STORED.match(text, pos)
            if match is None:
                match, load = _F_RETRIEVED.match(text, pos), True
        if match is None:
            return None
        stamp = text[at - 23 : at]
        last, when = self._stamp
        if stamp[:19] != last:
            known = self._when(stamp)
            if known is None:
                return None
            when = known
        if match.re is _F_LOOKUP:
            rid, total, local, hit, need = match.groups()
            return self._counted(rid, when, (int(total), int(hit), int(need), local))
        request, tokens, asked, gib, gib4, ms, ms4 = match.groups()
        if request:
            self._seen.pop(request, None)  # (_ran: the request ran)
        got, required = int(tokens), int(asked)
        if load and got < required:
            return None  # (a short load: its own event, the general way)
        tag = text[: at - 24]
        worker = self._workers.get(tag) or self._worker(tag)
        return self._sums.transfer(when, worker, load, got, required, int(gib + gib4), int(ms + ms4))

    def take_run(self, run: bytes, other: Callable[[bytes], ParseResult | Malformed]) -> BlockResult:
        """What parse() makes of each line of a run of json-file entries (kvwatch.sources.framing.Entries:
        each line after a `\\n`, a `\\n` at the end), counted up. The compiled loop (_rows.c, replay's
        fast path, held to this by tests/test_replay_plain.py) reads the commonest records from their
        bytes, as _fast() reads them from the decoded line, and sums them; `other` (the carrying
        parser's) decodes and parses the rest, and every line where the loop was not built. Only for the
        carrying parser's layer (which holds its sums)."""
        if _take is None:
            return tally(other(line) for line in run[1:-1].split(b"\n"))
        events, taken, errors = _take(self, run, other, MAX_IDS, STRETCH, self._tz is timezone.utc)
        return BlockResult(events, taken, errors)

    def _cell(self, cells: dict[bytes, list[int]], head: bytes, load: bool) -> list[int]:
        """The sums of the worker of `head` in one direction, flagged, remembered in `cells` for the run."""
        worker = self._tags.get(head) or self._tag(head)
        found = self._sums.transfers.get((worker, load))
        if found is None:
            found = self._sums.transfers[worker, load] = [0] * 8
        found[3] = found[5] = found[7] = 1  # (asked, size and seconds printed)
        cells[head] = found
        return found

    def _epoch(self, second: bytes) -> float | None:
        """The epoch second of a stamp's `YYYY-MM-DD HH:MM:SS` read from the bytes, by the clock of the
        decoded lines (_when), remembered."""
        if len(self._seconds) >= MAX_TAGS:
            self._seconds.clear()
        when = self._seconds[second] = self._when(second.decode("ascii") + ",000")
        return when

    def _tag(self, head: bytes) -> str:
        """The worker of a json-file line's head up to the stamp (`{"log":"` and vLLM's process tag)."""
        if len(self._tags) >= MAX_TAGS:
            self._tags.clear()
        worker = self._tags[head] = self._worker(head[8:].decode("ascii").replace("\\u001b", "\x1b"))
        return worker

    def drain(self) -> list[Event]:
        """The sums held back (kvwatch.engines.lmcache.sums), as events: the carrying parser asks before
        it hands on an event of its own."""
        return self._sums.drain()

    @property
    def held(self) -> bool:
        """Whether sums are held back."""
        return self._sums.held

    def snapshot(self) -> dict[str, Any]:
        """Nothing a restart needs (the ids of recent lookups are not kept)."""
        return {"engine": "lmcache"}

    def restore(self, state: dict[str, Any]) -> None:
        """Go on from a `snapshot()`."""
        if state.get("engine") != "lmcache":
            raise ValueError(f"a state of engine {state.get('engine')!r}")

    def record(self, text: str, transport: float | None) -> ParseResult:
        """One record (behind whatever prefix): its events, a ParseError, or None (not a known one)."""
        at = text.find(lm.MARKER)
        if at < 24 or text[at - 24] != "[":
            return self._old(text)
        stamp = text[at - 23 : at]
        rest = text[at + 10 :]
        colon = rest.find(":")
        if colon < 0 or rest[:colon] not in lm.LEVELS:
            return None
        message = rest[colon + 1 :]
        if message.startswith("\x1b[0m"):
            message = message[4:]
        end = message.rfind(" \x1b[3m(")
        if end < 0:
            end = message.rfind(" (")
        message = message[1:end] if end > 0 else message[1:]
        when = self._when(stamp)
        if when is None:
            return ParseError("lmcache: bad time stamp")
        tag = text[: at - 24]
        result = self._message(message, tag, when)
        if result is None:  # a lookup, store or load of a shape no release printed: told, not dropped
            result = self._drift.line(when, message)
        if not self._seen_any:
            return self._first(result, when)
        return result

    def _first(self, result: ParseResult, when: float) -> ParseResult:
        """The first LMCache record of the source: its events and the fact that LMCache lines are read."""
        if not isinstance(result, list):
            return result
        self._seen_any = True
        return [*self._sums.drain(), *result, EngineFact(self.source, when, SEEN, "yes")]

    def _old(self, text: str) -> ParseResult:
        """The 2024 `lmcache_vllm` record: `LEVEL LMCache: message [stamp] -- path:line`."""
        at = text.find(lm.OLD_MARKER)
        if at < 0:
            return None
        clean = strip_ansi(text)
        at = clean.find(lm.OLD_MARKER)
        head = clean[:at]
        if not head.endswith(lm.LEVELS):
            return None
        tail = _OLD_STAMP.search(clean)
        if tail is None:
            return None
        when = self._when(tail.group(1) + ",000")
        if when is None:
            return ParseError("lmcache: bad time stamp")
        message = clean[at + len(lm.OLD_MARKER) : tail.start()].rstrip()
        level = max(head.rfind(level) for level in lm.LEVELS)
        if not self._seen_any:
            return self._first(self._message(message, head[:level], when), when)
        return self._message(message, head[:level], when)

    def _when(self, stamp: str) -> float | None:
        """Epoch seconds of `YYYY-MM-DD HH:MM:SS,mmm` in the configured zone, to the second."""
        second = stamp[:19]
        last, when = self._stamp
        if second == last:
            return when
        if _STAMP.match(stamp) is None:
            return None
        hh, mm, ss = int(second[11:13]), int(second[14:16]), int(second[17:19])
        hms = hh * 3600 + mm * 60 + ss
        day, midnight = self._day
        if self._tz is timezone.utc and second[:10] == day and hh < 24 and mm < 60 and ss < 60:
            when = midnight + hms  # (UTC: a day is 86,400 s; a zone's may not be)
        else:
            try:
                moment = datetime(
                    int(second[:4]), int(second[5:7]), int(second[8:10]), hh, mm, ss, tzinfo=self._tz
                )
            except ValueError:
                return None
            when = moment.timestamp()
            self._day = (second[:10], when - hms)
        self._stamp = (second, when)
        return when

    def _worker(self, tag: str) -> str:
        worker = self._workers.get(tag)
        if worker is None:
            if len(self._workers) >= MAX_TAGS:
                self._workers.clear()
            worker = self._workers[tag] = worker_of(strip_ansi(tag))
        return worker

    def _message(self, message: str, tag: str, when: float) -> ParseResult:
        first = message[:4]
        if first == "Reqi":
            return self._lookup(message, when)
        if first == "[req":
            close = message.find("] ")
            request, body = message[8:close], message[close + 2 :]
        else:
            request, body = "", message
        head = body[:5]
        if head == "Store":
            return self._stored(body, request, tag, when)
        if head == "Retri":
            return self._retrieved(body, request, tag, when)
        return self._other(message, tag, when)

    def _lookup(self, message: str, when: float) -> ParseResult:
        match = lm.LOOKUP.match(message)
        if match is None:
            if lm.CAPPED.match(message):
                return []
            # read by key: its parts reordered, a key of no release among them (counted)
            read = lm.lookup_by_key(message)
            if read is None:
                return None
            (request, total, local, hit, need), unknown = read
            counted = self._counted(request, when, (int(total), int(hit), int(need), local))
            return [*counted, *self._drift.keys(when, "lookup", unknown, frozenset())]
        request, total, local, hit, need, skipped, pending = match.groups()
        if pending is not None:
            return []
        # A min_retrieve skip loads nothing: its need is not added.
        return self._counted(
            request, when, (int(total), int(hit), int(need) if skipped is None else 0, local)
        )

    def _counted(
        self, request: str, when: float, numbers: tuple[int, int, int, str | bytes | None]
    ) -> list[Event]:
        """A lookup with a number (total, hit, need, computed): summed the first time its request id
        comes (since it last ran)."""
        self._looked = True
        seen = self._seen
        if request in seen:
            return []
        if len(seen) >= MAX_IDS:
            del seen[next(iter(seen))]
        seen[request] = None
        total, hit, need, local = numbers
        # Up to 0.3.12 the need can be negative (LMCache #2703): added as max(n, 0), what 0.3.15+ prints.
        return self._sums.lookup(when, total, hit, max(need, 0), None if local is None else int(local))

    def _ran(self, request: str) -> None:
        """The request was scheduled: a later lookup of it counts again."""
        if request:
            self._seen.pop(request, None)

    def _stored(self, body: str, request: str, tag: str, when: float) -> ParseResult:
        match = lm.STORED.match(body)
        if match is not None:
            self._ran(match.group(1) or request)
            _, stored, offered, size, cost = match.groups()
            return self._sums.transfer(
                when, self._worker(tag), False, int(stored), int(offered),
                None if size is None else round(float(size) * 1e4),
                None if cost is None else round(float(cost) * 1e4),
            )  # fmt: skip
        mp = lm.MP_STORED.match(body)
        if mp is not None:
            units = round(float(mp.group(2)) * 1e7)
            return self._sums.transfer(when, self._worker(tag), False, int(mp.group(1)), None, None, units)
        skips = lm.STORE_SKIPS.match(body)
        if skips is not None:  # (the skipped prefix is already stored: offered is what it writes)
            stored = int(skips.group(2))
            return self._sums.transfer(when, self._worker(tag), False, stored, stored, None, None)
        return [] if lm.LEGACY_STORED.match(body) else None

    def _retrieved(self, body: str, request: str, tag: str, when: float) -> ParseResult:
        match = lm.RETRIEVED.match(body)
        if match is not None:
            _, got, required, size, cost = match.groups()
            return self._load(request or (match.group(1) or ""), tag, when, (got, required, size, cost))
        match = lm.RETRIEVED_SHORT_FORM.match(body)
        if match is not None:
            return self._load(request or (match.group(1) or ""), tag, when, (match[2], match[3], None, None))
        match = lm.RETRIEVED_036.match(body)
        if match is not None:
            got, required, size, cost = match.groups()
            return self._load(request, tag, when, (got, required, size, cost))
        mp = lm.MP_RETRIEVED.match(body)
        if mp is not None:
            units = round(float(mp[2]) * 1e7)
            return self._sums.transfer(when, self._worker(tag), True, int(mp[1]), None, None, units)
        if lm.RETRIEVED_LAYERWISE.match(body):
            return []
        legacy = lm.LEGACY_RETRIEVED.match(body)
        if legacy is not None:
            tokens = int(legacy.group(1) or 0)
            return self._sums.transfer(when, self._worker(tag), True, tokens, None, None, None)
        return None

    def _load(
        self, request: str, tag: str, when: float, numbers: tuple[str, str, str | None, str | None]
    ) -> ParseResult:
        """A load: tokens got and required, size (GiB) and cost (ms) where printed."""
        got, required, size, cost = numbers
        self._ran(request)
        tokens, asked = int(got), int(required)
        # Inside vLLM (a layer: held sums) the adapter loads only what its lookup found: short is a failure.
        # The cache engine run alone (LMCache's own API, no adapter's lookup lines) is asked for whole
        # prompts: a short load there is a partial hit or a miss (`Retrieved 0 out of 484 required`).
        if tokens >= asked or not (self._hold or self._looked):
            size_units = None if size is None else round(float(size) * 1e4)
            units = None if cost is None else round(float(cost) * 1e4)
            return self._sums.transfer(when, self._worker(tag), True, tokens, asked, size_units, units)
        size_bytes = None if size is None else round(round(float(size) * 1e4) * _GIB / 1e4)
        seconds = None if cost is None else round(float(cost) * 1e4) / 1e7
        short = LmcacheTransfer(
            self.source, when, self._worker(tag), True, tokens, asked, size_bytes, seconds
        )
        short.short, short.request = 1, request
        return [*self._sums.drain(), short]

    def _other(self, message: str, tag: str, when: float) -> ParseResult:
        """Storing lines, failures, MP mode's prefetch and resume lines."""
        match = lm.STORING.match(message)
        if match is not None:
            self._ran(match.group(3))
            worker = self._worker(tag)
            return self._sums.storing(when, worker, int(match.group(1)), int(match.group(2)))
        prefetch = lm.PREFETCH.match(message)
        if prefetch is not None:
            hit, asked, ms = prefetch.groups()
            return [
                *self._sums.drain(),
                LmcachePrefetch(self.source, when, int(hit), int(asked), float(ms) / 1000.0),
            ]
        if lm.RESUME_LOAD.match(message):
            return []
        if (
            lm.MP_WINDOW.match(message)
            or lm.MP_CUMULATIVE.match(message)
            or lm.BYTES_OFFLOADED.match(message)
            or lm.SGLANG_STORE_KV.match(message)
        ):
            # (recognised, not summed: they repeat the per-operation INFO lines, `Stored %d tokens in %.3f
            # seconds` / `Stored N out of total M`, which LMCache prints beside them; SGLang's store_kv)
            return []
        injected = lm.INJECTED.match(message)
        if injected is not None:  # 2024's retrieve: what it loaded, not what it was asked for
            tokens = int(injected.group(1))
            return self._sums.transfer(when, self._worker(tag), True, tokens, None, None, None)
        sglang = lm.SGLANG_RETRIEVE.match(message)
        if sglang is not None:
            return self._sglang(sglang, tag, when)
        return self._failure(message, tag, when)

    def _sglang(self, match: re.Match[str], tag: str, when: float) -> list[Event]:
        """SGLang's adapter's retrieve line: a lookup (hit: the prefix LMCache holds, need: the new tokens
        past the radix cache's), as vLLM's `LMCache hit tokens: H, need to load: N` counts, and the load
        of those new tokens (started); skipped, the radix cache holds all LMCache found: none loaded. The
        request's tokens are not printed (query 0), nor its id: every line is a lookup."""
        self._looked = True
        hit, count = match.group(1) or match.group(5), match.group(3) or match.group(4)
        tokens = int(count or 0)
        done = self._sums.lookup(when, 0, int(hit), tokens, None)
        if count is None:
            return done
        return [*done, *self._sums.transfer(when, self._worker(tag), True, tokens, tokens, None, None)]

    def _failure(self, message: str, tag: str, when: float) -> ParseResult:
        worker = self._worker(tag)
        error = lm.RETRIEVE_ERROR.match(message)
        if error is not None:
            # Its numbers follow on the next line of the same worker; a second error before them
            # reports the first without.
            held = self._pending.pop(worker, None)
            self._pending[worker] = (when, error.group(1) or "")
            return [] if held is None else [*self._sums.drain(), self._failed(worker, *held, None)]
        numbers = lm.RETRIEVE_ERROR_NUMBERS.match(message)
        if numbers is not None:
            held = self._pending.pop(worker, None)
            lost = max(int(numbers.group(2)) - int(numbers.group(1)), 0)
            start, request = held if held is not None else (when, "")
            return [*self._sums.drain(), self._failed(worker, start, request, lost)]
        for text, kind, load in lm.FAILURES:
            if text in message:
                return [*self._sums.drain(), LmcacheFailure(self.source, when, worker, kind, retrieve=load)]
        return None

    def _failed(self, worker: str, when: float, request: str, lost: int | None) -> LmcacheFailure:
        return LmcacheFailure(self.source, when, worker, "retrieve_error", request, lost)

    def flush(self) -> list[Event]:
        """The sums held back, and a retrieve error whose numbers never came."""
        held, self._pending = self._pending, {}
        failed = [self._failed(worker, when, request, None) for worker, (when, request) in held.items()]
        return [*self._sums.drain(), *failed]


try:  # (the loop in C: built where pip found a C compiler, see setup.py)
    from kvwatch.engines.lmcache._rows import take as _take
except ImportError:  # pragma: no cover (CI builds it: tests/test_replay_plain.py)
    _take = None  # type: ignore[assignment]


def looks_like(sample: str) -> bool:
    """Whether a file's first lines are LMCache's own records (an MP-mode server's log)."""
    return (
        lm.MARKER in sample
        and re.search(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] LMCache ", sample) is not None
    )


#: A record's `[YYYY-MM-DD HH:MM:SS,mmm] LMCache ` stamp, read in this (leap) year whatever its own: on the
#: basis of vLLM's year-less headers (kvwatch.engines.vllm.parser.CLOCK_YEAR), the log that carries them.
CLOCK_YEAR = 2000
_CLOCK_STAMP = re.compile(r"\[\d{4}-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d),(\d{3})\] LMCache ")


def _read_clock(match: re.Match[str]) -> float | None:
    month, day, hh, mm, ss, ms = map(int, match.groups())
    try:
        return datetime(CLOCK_YEAR, month, day, hh, mm, ss, ms * 1000, tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def _write_clock(when: float) -> str:
    moment = datetime.fromtimestamp(when, tz=timezone.utc)
    return moment.strftime("[%Y-%m-%d %H:%M:%S,") + f"{moment.microsecond // 1000:03d}] LMCache "


#: Where LMCache's records carry their time (`kvwatch demo` rewrites it; UTC).
CLOCK = LineClock(_CLOCK_STAMP, _read_clock, _write_clock)


def make_parser(source: str, settings: ParserSettings, options: Any) -> LmcacheLayer:
    """The layer's parser of one source (kvwatch.engines.base.ParserFactory). Inside vLLM's log
    (`options` AS_LAYER) the sums are held for a stretch (vLLM's next line hands them on); alone, in an
    MP-mode server's log that may fall silent, each line's are handed on at once."""
    return LmcacheLayer(source, settings, hold=options == AS_LAYER)
