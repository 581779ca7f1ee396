"""SGLang's log, 0.1.14 to 0.5.23: batch lines, request records, HiCache lines, startup facts.

Request records come from `--log-requests` lines when the server logs them (exact), otherwise from
prefill batches of one new sequence: a prompt longer than `chunked_prefill_size` arrives in chunks, one
batch line each, and is one request (its cached count is the first chunk's). With several sequences in
a batch the request is not recorded. Without the chunk size (no `server_args` line), a batch of a power
of two of at least 2048 new tokens is taken as a full chunk of that size (see `_derive`).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from kvwatch.engines import layer_parsers
from kvwatch.engines.sglang import facts as sglang_facts
from kvwatch.engines.sglang import lifecycle as life
from kvwatch.engines.sglang import lines, requests
from kvwatch.engines.sglang.events import SglangDecode, SglangHicacheError, SglangPrefill, SglangRequest
from kvwatch.model import CachePrefetch, EngineFact, Event, LogLine, ServerRestart
from kvwatch.parsers.base import ParseError, Parser, ParseResult, ParserSettings
from kvwatch.parsers.clock import LineClock
from kvwatch.parsers.drift import Drift, sanitise
from kvwatch.parsers.text import holds_any, segments, strip_ansi
from kvwatch.times import zone

#: Every line that can yield an event contains one of these.
MARKERS = (
    "Prefill batch",
    "Decode batch",
    "new fill batch",
    "#running-req: ",
    "server_args=",
    "Finish: ",
    "request.finished",
    " HTTP/1.",
    "HiCache ",
    "Prefetch",
    "Mooncake direct linker",
    "Write page to storage",
    "backup_thread_func",
    *life.MARKERS,
)
_RAY = re.compile(r"^\(\w+ pid=\d+(?:, ip=[\d.]+)?\) ")
_ACCESS = re.compile(r'INFO: +\S+ - "[A-Z]+ \S+ HTTP/[\d.]+" (\d{3})')
_PREFETCH = re.compile(r"^HiCache prefetch (success|dropped|declined) req=\S+((?: \w+=\S+)*)$")
_PREFETCH_REFILL = re.compile(r"^HiCache prefetch dropped (\d+)-token refill")
_KV = re.compile(r"(\w+)=(\S+)")
_DEBUG_DONE = re.compile(r"^Prefetch \S+ completed with (\d+) tokens")
_DEBUG_REVOKE = re.compile(r"^Revoking prefetch for request \S+ due to insufficient hits \((\d+)\)")
_LINKER_OFFLOAD = re.compile(r"^Mooncake direct linker offload: tokens=(\d+)")
_JSON_STAMP = re.compile(r'"timestamp": "(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)"')
# The commonest lines of 0.5.11+ with TP=1 (a plain prefill batch, a Finish line, an access line), in one
# match: _record makes the same of them in more steps.
_FAST = re.compile(
    r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\] "
    r"(?:(Finish: )|INFO: +\S+ - \"[A-Z]+ \S+ HTTP/[\d.]+\" \d{3} |"
    r"Prefill batch, #new-seq: (\d+), #new-token: (\d+), #cached-token: (\d+), token usage: (\d\.\d\d), "
    r"#running-req: (\d+), #queue-req: (\d+), #pending-token: (\d+), "
    r"(?:cuda|cpu|npu|musa) graph: (?:True|False), "
    r"input throughput \(token/s\): (\d+\.\d\d)\Z)"
)
_HALF_DAY = 43200.0
_DEFAULT_CHUNK = 2048  # the smallest chunked_prefill_size SGLang picks by itself (srt/server_args.py)


class _Chunked:
    """A request whose prefill goes on in the next batch line of its DP rank."""

    __slots__ = ("cached", "computed", "known", "time")

    def __init__(self, time: float, cached: int, computed: int, known: bool) -> None:
        self.time, self.cached, self.computed, self.known = time, cached, computed, known


class SglangParser:
    """Per-source SGLang state: the clock, chunk size, requests in chunks, the last batch per rank."""

    markers: tuple[str, ...] = MARKERS

    def __init__(self, source: str, settings: ParserSettings, layers: list[Parser] | None = None) -> None:
        self.source = source
        self._drift = Drift(source, "sglang")
        # The cache layers it carries (LMCache's SGLang adapter): a line holding their marker is theirs first.
        self._layers = layers or []
        for layer in self._layers:
            self.markers = self.markers + tuple(m for m in layer.markers if m not in self.markers)
        self._tz = zone(settings.tz)
        self._start = settings.start
        self._last: float | None = None
        self._days: dict[tuple[int, int, int], float] = {}
        self._chunk: int | None = None
        self._guess: int | None = None  # the chunk size a full first chunk showed, without server_args
        self._page = 1
        self._exact = False  # `--log-requests` lines seen (or switched on): no records from batches
        self._chunked: dict[str, _Chunked] = {}
        self._seen: dict[str, tuple[str, str, float]] = {}
        self._life = life.lifecycle(source)  # whether the server came up or died (engine_start_failed)
        self._fast_stamp: tuple[str, float] = ("", 0.0)  # rank -> (tags, message, time) of its last batch
        self._second: tuple[str, float, int] = ("", 0.0, 0)  # _stamp's last dated second: midnight, seconds

    def parse(self, line: LogLine) -> ParseResult:
        """Parse one physical line (tqdm's `\\r`-separated pieces each)."""
        if self._layers:
            return self._carried(line)
        return self._own(line)

    def _own(self, line: LogLine) -> ParseResult:
        """parse() of SGLang's own lines."""
        text = line.text
        if "\r" not in text and "\x1b" not in text:
            fast = _FAST.match(text)
            if fast is not None:
                return self._fast(fast, text)
            return self._record(text, line.time)
        events: list[Event] = []
        recognised, error = False, None
        for piece in segments(text):
            outcome = self._record(strip_ansi(piece), line.time)
            if isinstance(outcome, list):
                recognised = True
                events.extend(outcome)
            elif outcome is not None and error is None:
                error = outcome
        return events if recognised else error

    def _carried(self, line: LogLine) -> ParseResult:
        """parse() where cache layers ride along: their lines are theirs first, and the sums they hold
        back come before this parser's next events (their lines came first)."""
        if " LMCache" in line.text:
            for layer in self._layers:
                outcome = layer.parse(line)
                if outcome is not None:
                    return outcome
        result = self._own(line)
        if result and isinstance(result, list):
            held = self.drain()
            if held:
                result = [*held, *result]
        return result

    def drain(self) -> list[Event]:
        """The sums its layers hold back, handed on now (the daemon asks before it saves a position)."""
        return [e for layer in self._layers if getattr(layer, "held", False) for e in layer.drain()]  # type: ignore[attr-defined]

    def _fast(self, match: re.Match[str], text: str) -> ParseResult:
        """What _record makes of a line _FAST matched."""
        groups = match.groups()
        key = text[1:20]
        cached_key, when = self._fast_stamp
        if key != cached_key:
            midnight = self._midnight(int(groups[0]), int(groups[1]), int(groups[2]))
            if midnight is None:
                return ParseError("sglang: a line's timestamp is not a date")
            hh, mm, ss = int(groups[3]), int(groups[4]), int(groups[5])
            if not (hh < 24 and mm < 60 and ss < 60):
                return ParseError("sglang: a line's timestamp is not a date")
            when = midnight + hh * 3600 + mm * 60 + ss
            self._fast_stamp = (key, when)
        if groups[6] is not None:
            result = self._finished(text[match.end(6) - 8 :], when, text)
        elif groups[7] is None:
            result = []
        else:
            seqs, computed, cached = int(groups[7]), int(groups[8]), int(groups[9])
            batch = SglangPrefill(
                self.source, when, "0", "0.5.11+", seqs, computed, cached, int(groups[11]), int(groups[12]),
                int(groups[13]), (("full", float(groups[10])),), float(groups[14]),
            )  # fmt: skip
            derived = self._derive(batch) if (seqs == 1 and not self._exact) or self._chunked else []
            result = [batch, *derived]
        if isinstance(result, list):
            self._last = when
        return result

    def flush(self) -> list[Event]:
        """A request still in chunks at the end is dropped, not guessed; its layers' sums are handed on."""
        self._chunked.clear()
        return [event for layer in self._layers for event in layer.flush()]

    # -- time ---------------------------------------------------------------------------------

    def _midnight(self, year: int, month: int, day: int) -> float | None:
        key = (year, month, day)
        cached = self._days.get(key)
        if cached is None:
            try:
                cached = datetime(year, month, day, tzinfo=self._tz).timestamp()
            except ValueError:
                return None
            if len(self._days) > 4096:
                self._days.clear()
            self._days[key] = cached
        return cached

    def _stamp(self, match: re.Match[str], transport: float | None) -> float | None:
        year, month, day, hh, mm, ss, ms = match.group(1, 2, 3, 4, 5, 6, 7)
        if year is not None:  # (a dated second, read once: a busy server prints dozens of lines in each)
            second = match.string[match.start(1) : match.end(6)]
            cached, start, whole = self._second
            if second != cached:
                if not (int(hh) < 24 and int(mm) < 60 and int(ss) < 60):
                    return None
                day_start = self._midnight(int(year), int(month), int(day))
                if day_start is None:
                    return None
                start, whole = day_start, int(hh) * 3600 + int(mm) * 60 + int(ss)
                self._second = (second, start, whole)
            return start + (whole + (int(ms) / 1000 if ms else 0.0))
        hms = int(hh) * 3600 + int(mm) * 60 + int(ss) + (int(ms) / 1000 if ms else 0.0)
        if not (int(hh) < 24 and int(mm) < 60 and int(ss) < 60):
            return None
        # `%H:%M:%S` (0.2.14-0.3.2): the day is the transport's, else the last line's, rolling over
        base = transport if transport is not None else (self._last if self._last is not None else self._start)
        moment = datetime.fromtimestamp(base, self._tz)
        midnight = self._midnight(moment.year, moment.month, moment.day)
        if midnight is None:
            return None
        when = midnight + hms
        if when < base - _HALF_DAY:
            when += 86400.0
        return when

    def _record(self, text: str, transport: float | None) -> ParseResult:
        if not holds_any(text, MARKERS):
            return None
        prefix = lines.PREFIX.search(text)
        if prefix is not None:
            when = self._stamp(prefix, transport)
            ranks, message = prefix.group(8), text[prefix.end() :]
            if when is None:
                return ParseError("sglang: a line's timestamp is not a date")
        else:  # 0.1.x-0.2.9 log the message alone
            when = (
                transport
                if transport is not None
                else (self._last if self._last is not None else self._start)
            )
            ranks, message = "", _RAY.sub("", text, count=1)
        result = self._message(message, ranks, when, text)
        if isinstance(result, list):
            self._last = when
        return result

    # -- messages -----------------------------------------------------------------------------

    def _message(self, message: str, ranks: str, when: float, text: str) -> ParseResult:
        if "batch" in message:
            found = lines.batch(message)
            if found is not None:
                batch = self._batch(found, ranks, when, message)
                if not self._life.served and isinstance(batch, list):
                    # a batch proves it serves: a later death is a crash, and it is up after a failure
                    return [*self._life.serving(when), *batch]
                return batch
            old = lines.OLD_FILL.match(message)
            if old is not None:
                return self._old_fill(old, when)
            if message.startswith(("Prefill batch", "Decode batch", "new fill batch")):
                # a batch line of a shape no release printed: told (format_drift), not dropped silently
                return self._drift.seen(when, sanitise(message))
        if message.startswith("#running-req: "):
            decode = lines.OLD_DECODE.match(message)
            if decode is None:
                return None
            running, used, usage, queued = decode.groups()
            pools = (("full", float(usage)),)
            return [
                SglangDecode(
                    self.source, when, "0", "0.1.14", int(running), int(queued), int(used), pools, None
                )
            ]
        if message.startswith("Finish: ") or '"request.finished"' in message:
            return self._finished(message, when, text)
        if message.startswith("server_args="):
            return self._server_args(message, when)
        access = _ACCESS.search(message)
        if access is not None:
            return []  # (recognised: the server's requests; their numbers are in Finish lines)
        lived = self._life.line(message, when)
        if lived is not None:
            return lived
        if any(word in message for word in life.READY):
            return []  # (its batch lines said so first: the warmup request's)
        return self._hicache(message, when)

    def _batch(self, found: lines.Batch, ranks: str, when: float, message: str) -> ParseResult:
        engine = found.gpu if found.gpu is not None else lines.dp_rank(ranks)
        if "ATTN_CP" in ranks:
            # some builds print one batch once per context-parallel rank: same counts, other tags
            # (and throughputs: each rank times its own work)
            same = repr(lines.identity(found))
            last = self._seen.get(engine)
            self._seen[engine] = (ranks, same, when)
            if last is not None and last[1] == same and last[0] != ranks and when - last[2] <= 1.0:
                return []
        f = found.fields
        usage = tuple(
            (pool, value)
            for key, pool in lines.POOLS.items()
            if (value := lines.number(f.get(key))) is not None
        )
        extra = (f.keys() - {"(mixed)"}) - (
            lines.DECODE_KEYS if found.kind == "Decode" else lines.PREFILL_KEYS
        )
        # a key kvwatch does not know (a newer build's) is counted; the keys it knows are still read
        unread = self._drift.seen(when, lines.unknown_shape(found.kind, extra)) if extra else []
        if found.kind == "Decode":
            running = lines.integer(f.get("#running-req"))
            if running is None:
                return ParseError("sglang decode batch: no #running-req")
            tokens = lines.integer(f.get("#token", f.get("#token.full", f.get("#full token"))))
            throughput = lines.number(f.get("gen throughput (token/s)"))
            queued = lines.integer(f.get("#queue-req"))
            family = lines.decode_family(found)
            cached = lines.integer(f.get("#cached-token"))  # (a snapshot: see SglangDecode)
            return [
                SglangDecode(
                    self.source, when, engine, family, running, queued, tokens, usage, throughput, cached
                ),
                *unread,
            ]
        seqs, computed, cached = (
            lines.integer(f.get(k)) for k in ("#new-seq", "#new-token", "#cached-token")
        )
        if seqs is None or computed is None or cached is None:
            if unread and any(key not in f for key in ("#new-seq", "#new-token", "#cached-token")):
                return unread  # a key renamed (an unknown one in its place): told as drift, not an error
            return ParseError("sglang prefill batch: #new-seq, #new-token or #cached-token unreadable")
        family = lines.prefill_family(found)
        batch = SglangPrefill(
            self.source, when, engine, family, seqs, computed, cached,
            lines.integer(f.get("#running-req", f.get("(mixed)"))), lines.integer(f.get("#queue-req")),
            lines.integer(f.get("#pending-token")), usage, lines.number(f.get("input throughput (token/s)")),
        )  # fmt: skip
        return [batch, *self._derive(batch), *unread]

    def _old_fill(self, old: re.Match[str], when: float) -> ParseResult:
        seqs, cached, computed, remaining, running, _ = old.groups()
        queued = max(0, int(remaining))
        batch = SglangPrefill(
            self.source,
            when,
            "0",
            "0.1.14",
            int(seqs),
            int(computed),
            int(cached),
            int(running),
            queued,
            None,
            (),
            None,
        )
        return [batch, *self._derive(batch)]

    def _derive(self, batch: SglangPrefill) -> list[Event]:
        """The request a prefill batch completes, if it can tell (see the module's docstring)."""
        if self._exact:
            return []
        engine = batch.engine
        going = self._chunked.pop(engine, None)
        if going is not None:  # the chunked request is scheduled first in its rank's next batch
            if batch.seqs != 1:  # ... sharing it: its own chunk is not told apart, nor its end
                return []
            if self._chunk is None and batch.cached not in (0, going.cached + going.computed):
                # a guessed chunk followed by a batch that is no continuation (those print 0 cached,
                # or <= 0.4.1 the request's own earlier chunks): the guess was a whole prompt
                return [*self._request(going, batch.time), *self._derive(batch)]
            # A continuation's `#cached-token` is no reuse: its own earlier chunks (<= 0.4.1) or 0 (0.4.3+).
            going.computed += batch.computed
            if self._full_chunk(batch.computed):
                self._chunked[engine] = going
                return []
            return self._request(going, batch.time)
        if batch.seqs != 1:
            return []
        start = _Chunked(batch.time, batch.cached, batch.computed, True)
        if self._chunk is None and batch.computed >= _DEFAULT_CHUNK:
            # Without server_args the chunk size is guessed: SGLang's chunked_prefill_size is a power of
            # two it picks by GPU memory (2048 to 16384) or one the user sets (nearly always one too), and
            # a whole prompt lands exactly on one rarely. A power of two is taken as a full first chunk of
            # that size (its request ends at the next batch that is not full); any other size is a whole
            # prompt. (Before, neither was recorded, and all-miss prompts never reached prefix_reuse_broken.)
            if batch.computed & (batch.computed - 1) == 0:
                self._guess = batch.computed
                self._chunked[engine] = start
                return []
            return self._request(start, batch.time)
        if self._full_chunk(batch.computed):
            self._chunked[engine] = start
            return []
        return self._request(start, batch.time)

    def _full_chunk(self, computed: int) -> bool:
        chunk = self._chunk if self._chunk is not None else self._guess
        if chunk is None or chunk <= 0:
            return False
        return computed >= chunk // self._page * self._page

    def _request(self, done: _Chunked, when: float) -> list[Event]:
        if not done.known:
            return []
        prompt = done.cached + done.computed
        return [SglangRequest(self.source, when, prompt, done.cached, derived=True)]

    def _finished(self, message: str, when: float, text: str) -> ParseResult:
        json_line = '"request.finished"' in message
        if requests.health_check(text):
            return []  # (SGLang's own /health probe: a 1-token generate, no one's request)
        read = requests.numbers(text, json_line)
        if read is None:
            return ParseError("sglang --log-requests: prompt_tokens / cached_tokens unreadable")
        if not self._exact:
            self._exact = True
            self._chunked.clear()
        if json_line and lines.PREFIX.search(text) is None:
            stamp = _JSON_STAMP.search(text)
            if stamp is not None:
                naive = datetime.fromisoformat(stamp.group(1))
                when = naive.replace(tzinfo=self._tz).timestamp()
        prompt, cached, tiers = read
        return [SglangRequest(self.source, when, prompt, cached, tiers=tiers)]

    def _server_args(self, message: str, when: float) -> ParseResult:
        facts = sglang_facts.server_args(message)
        values = dict(facts)
        chunk = values.get("chunked_prefill_size", "")
        self._chunk = int(chunk) if chunk.lstrip("-").isdigit() else None
        page = values.get("page_size", "")
        self._page = max(1, int(page)) if page.isdigit() else 1
        self._exact = values.get("log_requests") == "True"
        self._chunked.clear()
        self._seen.clear()
        self._life.restart()
        events: list[Event] = [ServerRestart(self.source, when, "sglang")]
        events.extend(EngineFact(self.source, when, key, value) for key, value in facts)
        return events

    def _hicache(self, message: str, when: float) -> ParseResult:
        prefetch = _PREFETCH.match(message)
        if prefetch is not None:
            outcome, rest = prefetch.groups()
            values = dict(_KV.findall(rest))
            tokens = lines.integer(values.get("loaded", values.get("completed", "0"))) or 0
            benign = outcome == "declined" and values.get("reason") == "unservable_prefix"
            return [CachePrefetch(self.source, when, "storage", outcome, tokens, benign=benign)]
        refill = _PREFETCH_REFILL.match(message)
        if refill is not None:
            return [CachePrefetch(self.source, when, "storage", "dropped", int(refill.group(1)))]
        if message.startswith("HiCache prefetch fill committed "):
            return []
        done = _DEBUG_DONE.match(message)
        if done is not None:  # DEBUG up to 0.5.20 (srt/mem_cache/hiradix_cache.py)
            return [CachePrefetch(self.source, when, "storage", "success", int(done.group(1)))]
        revoke = _DEBUG_REVOKE.match(message)
        if revoke is not None:  # under the prefetch threshold: expected
            return [CachePrefetch(self.source, when, "storage", "revoked", int(revoke.group(1)), benign=True)]
        offload = _LINKER_OFFLOAD.match(message)
        if offload is not None:
            return [EngineFact(self.source, when, "cache_storage_written", offload.group(1))]
        if message.startswith("Mooncake direct linker stats: "):
            return [EngineFact(self.source, when, "cache_storage_stats", message.split(": ", 1)[1][:200])]
        if message.startswith("Write page to storage: ") and message.endswith("pages failed."):
            return [SglangHicacheError(self.source, when, "storage_write_failed")]
        if message.startswith("Prefetch operation ") and "failed to retrieve page" in message:
            return [SglangHicacheError(self.source, when, "prefetch_page_failed")]
        if message.startswith("Exception in thread ") and "backup_thread_func" in message:
            return [SglangHicacheError(self.source, when, "backup_thread_died")]
        return None


def looks_like(sample: str) -> bool:
    """Whether a file's first lines look like SGLang's log (for `--engine auto`)."""
    return (
        "server_args=ServerArgs(" in sample
        or "server_args={" in sample
        or "Prefill batch" in sample
        or "Decode batch" in sample
        or "new fill batch. #seq:" in sample
        or ("sglang" in sample.lower() and lines.PREFIX.search(sample) is not None)
    )


_LINE_TIME = re.compile(r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{3}))?")


def _read_line_time(m: re.Match[str]) -> float | None:
    year, month, day, hh, mm, ss = map(int, m.groups()[:6])
    try:
        moment = datetime(year, month, day, hh, mm, ss, tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None
    return moment + int(m.group(7) or 0) / 1000


def _write_line_time(when: float) -> str:
    moment = datetime.fromtimestamp(when, tz=timezone.utc)
    return "[" + moment.strftime("%Y-%m-%d %H:%M:%S") + f".{moment.microsecond // 1000:03d}"


#: The `[%Y-%m-%d %H:%M:%S.mmm` prefix SGLang's loggers print (UTC in the samples).
CLOCK = LineClock(_LINE_TIME, _read_line_time, _write_line_time, first_only=True)


def make_parser(source: str, settings: ParserSettings, options: Any) -> SglangParser:
    """The engine's parser of one source (kvwatch.engines.base.ParserFactory), its layers' parsers in it."""
    return SglangParser(source, settings, layer_parsers("sglang", source, settings))
