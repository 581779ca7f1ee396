"""LM Studio's server log -> `LmstudioRequest` per request, cache clears and trims, disk usage.

Each record's time and level come from its header (lines.py: the two-line and the one-line framing);
its message, and the continuation lines after it, are read for the cache lines of LM Studio's
runtimes: mlx-engine (`Prompt cache: using N/M`, `Prompt cache restore:`, `Trimmed`, the clears, disk
usage) and its llama.cpp runtime (`Cache reuse summary`). Requests are labelled with the model of
LM Studio's last ` [model-id] Running chat completion` line, at most `MAX_MODELS` distinct per source
(then "other"). A line before any record, or a two-line record's message line without its leading
space, is not recognised.

Blindness (`no_signal`, see blind.py): LM Studio shows its runtimes' lines as DEBUG records, which it
writes only with its Verbose Logging setting on. `BLIND_AFTER` chat completions with no DEBUG record and
no cache line since reading began set the fact `blind`; the first DEBUG record or cache line clears it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from kvwatch.engines.lmstudio import lines as ls
from kvwatch.engines.lmstudio.events import (
    LmstudioCacheEvent,
    LmstudioCompletion,
    LmstudioDiskUsage,
    LmstudioRequest,
)
from kvwatch.engines.lmstudio.lifecycle import CAUSED_BY, FAILED, lifecycle, load_line
from kvwatch.model import EngineFact, Event, LogLine
from kvwatch.parsers.base import BlockResult, ParseError, ParseResult, ParserSettings
from kvwatch.parsers.clock import LineClock
from kvwatch.parsers.drift import Drift
from kvwatch.parsers.text import strip_ansi
from kvwatch.sources.scanner import Scanner
from kvwatch.times import zone

MARKERS: tuple[str, ...] = (
    # (the levels without their brackets: full-width framing, `【DEBUG】`, holds them too; markers are ASCII)
    "DEBUG",
    "INFO",
    "WARN",
    "ERROR",
    "Prompt cache",
    "Cache reuse summary",
    "Total prompt tokens",
    "Prompt tokens to decode",
    "prompt cache disk usage",
    "Running chat completion",
    # the app's main.log: a failed model load and its root cause (lifecycle.py)
    "Error in channel handler",
    "Caused By",
)
#: What a message's body starts with when `load_line` reads it (main.log's failed loads).
LIFE_STARTS = (*FAILED, CAUSED_BY)
#: What a message must hold for `_body` to read anything in it (parse_block skips the others).
_READ = (
    "Prompt cache",
    "Cache reuse summary",
    "Total prompt tokens",
    "Prompt tokens to decode",
    "Trimmed ",
    "prompt cache disk usage",
    ls.GENERATION,
    *(start for start, _ in ls.CLEARS),
    *ls.SHAPES.markers,  # (a cache line reworded: told as format drift)
)
_WANTED = re.compile("|".join(map(re.escape, _READ)))


_STAMP_TEXT = "[0-9]{4}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]"
_LEVELS = "DEBUG|INFO|WARN|WARNING|ERROR"


def _runs(levels: str) -> re.Pattern[str]:
    """Two-line records of one second (the stamp, then `\\1`), each of a level in `levels`: in a
    stretch where no message holds anything to read, lines whose whole effect is the time."""
    record = rf" +\[(?:{levels})\]\n [^\n]*\n"
    return re.compile(rf"({_STAMP_TEXT}){record}(?:\1{record})*")


#: parse_block's runs, before the first DEBUG record (which may clear `blind`) and after.
_RUNS = (_runs("INFO|WARN|WARNING|ERROR"), _runs(_LEVELS))
#: A two-line record: its header's stamp and level, and its message (groups 1-3); for the commonest
#: two, also mlx-engine's cache line's numbers (4, 5), or LM Studio's model tag of a chat completion (6).
_RECORD = re.compile(
    rf"({_STAMP_TEXT}) +\[({_LEVELS})\]\n "
    r"((?:\[cache_wrapper\]\[INFO\]: Prompt cache: using ([0-9]+)/([0-9]+) tokens from cache"
    rf"|\[([^\[\]\n]{{1,200}})\] {ls.GENERATION})?[^\n]*)\n"
)
#: `_RECORD` and the run of its second after it (as `_RUNS`), before the first DEBUG record and after.
_RECORD_RUNS = tuple(
    re.compile(rf"{_RECORD.pattern}(?:\1 +\[(?:{levels})\]\n [^\n]*\n)*")
    for levels in ("INFO|WARN|WARNING|ERROR", _LEVELS)
)
_SCANNER = Scanner(_READ)


def _read_lines(text: str) -> list[int]:
    """Where runs must stop: the start of the line before each line of `text` holding something `_body`
    reads (its record's header, if it is a message), in order."""
    if text.isascii():  # (a character is a byte: the bytes' offsets are the text's)
        found: Iterable[int] = (at for _, at, _ in _SCANNER.hits(text.encode("ascii")))
    else:
        found = (match.start() for match in _WANTED.finditer(text))
    starts: list[int] = []
    line_end, rfind, find = -1, text.rfind, text.find
    for at in found:
        if at > line_end:
            before = rfind("\n", 0, at)  # (the end of the line before, if any)
            starts.append(rfind("\n", 0, before) + 1 if before > 0 else 0)
            line_end = find("\n", at)
    return starts


#: Distinct model labels per source; later models are counted as "other".
MAX_MODELS = 8
#: Chat completions without a DEBUG record or cache line before the source is judged blind.
BLIND_AFTER = 2
_STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")


def _read_time(match: re.Match[str]) -> float | None:
    try:
        year, month, day, hour, minute, second = (int(g) for g in match.groups())
        return datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def _write_time(when: float) -> str:
    return datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


#: The header's `YYYY-MM-DD HH:MM:SS` (`kvwatch demo` rewrites it; the samples are in UTC).
CLOCK = LineClock(_STAMP, _read_time, _write_time, first_only=True)


@lru_cache(maxsize=64)
def _model_tag(tag: str) -> str:
    """The model id of a chat completion's one tag (`model_of`, remembered: a log names few models)."""
    return ls.model_of([tag])


#: The llama.cpp runtime's lines (its `Cache reuse summary`, and what it decodes with or without one).
_RUNTIME_LINES = ("Cache reuse summary: ", "Prompt tokens to decode: ")


def looks_like(sample: str) -> bool:
    """True when a file's head reads like LM Studio's server log (its record headers, twice, in ASCII or
    full-width brackets), or holds one line only mlx-engine writes."""
    hits = 0
    previous = ""
    for text in ls.ascii_brackets(sample).splitlines()[:2000]:
        # (a record's message under its header, its leading space lost or not: a header is LM Studio's alone)
        framed = ls.ONE_LINE.match(text) or (ls.HEADER.match(previous) and not ls.HEADER.match(text))
        if ls.STANDALONE.match(text):
            hits += 2  # (a line only mlx-engine writes names the engine alone)
        elif framed or "[cache_wrapper][" in text or text.startswith(_RUNTIME_LINES):
            hits += 1
        if hits >= 2:
            return True
        previous = text
    return False


class LmstudioParser:
    """LM Studio's records and the cache lines of its runtimes."""

    def __init__(self, source: str, settings: ParserSettings) -> None:
        self.source = source
        self.markers = MARKERS
        self._tz = zone(settings.tz)
        self._utc = self._tz is timezone.utc
        self._start_time = settings.start
        self._days: dict[str, float] = {}  # (UTC) a day's `YYYY-MM-DD` -> its midnight's epoch seconds
        self._stamp: tuple[str, float] = ("", 0.0)
        self._open = False  # a record has begun
        self._last = 0.0  # the current record's time, never before an earlier record's
        self._header = False  # the last line was a two-line record's header
        self._model = ""
        self._labels: set[str] = set()
        self._generations = 0
        self._seen_debug = False
        self._records = 0
        self._blind = ""
        self._drift = Drift(source, "lmstudio", ls.SHAPES)  # cache lines reworded, keys of no release
        self._life = lifecycle(source)  # whether a model load failed (engine_start_failed)
        self._summary: int | None = None  # the last `Cache reuse summary`'s prompt, its totals to come
        self._total: int | None = None  # `Total prompt tokens`, its `Prompt tokens to decode` to come

    def parse(self, line: LogLine) -> ParseResult:
        """The events of one line; [] for a recognised line with none; None for a foreign line."""
        return self._parse_text(line.text)

    def parse_block(self, texts: list[str]) -> BlockResult:
        """`parse` over many lines of a plain file, without a LogLine per line."""
        return self.parse_text("".join(text + "\n" for text in texts))

    def parse_text(self, text: str) -> BlockResult:
        """`parse` over each line of `text` (whole lines, each ending in `\\n`), reading the block at
        once: one regex match takes a run of records of one second whose messages hold nothing to read
        (`_RUNS`: their only effect is the time), another a record's header with its message (`_RECORD`:
        the message is read as `parse` reads it, the two commonest from the match's own groups); the
        lines holding something to read are found first, in one pass (`_read_lines`), and no run goes
        past them. Any other line is parsed as `parse` parses it."""
        if "【" in text:
            text = ls.ascii_brackets(text)
        events: list[Event] = []
        recognized = errors = 0
        elsewhere = 0  # lines not in a run (every line of a run is recognised: counted at the end)
        parse, find = self._parse_text, text.index
        pos, end = 0, len(text)
        clean = "\x1b" not in text and "\r" not in text
        starts = _read_lines(text) if clean else []
        starts.append(end)
        index, ahead = 0, starts[0]  # where the next run must stop
        runs, record = _RUNS[self._seen_debug].match, _RECORD.match
        record_run = _RECORD_RUNS[self._seen_debug].match
        while pos < end:
            if clean:
                while ahead < pos:
                    index += 1
                    ahead = starts[index]
                run = runs(text, pos, ahead) if pos < ahead else None
                if run is not None:
                    stamp = run[1]  # (`_epoch`'s remembered stamp, looked at here: most runs have it)
                    when = self._stamp[1] if stamp == self._stamp[0] else self._epoch(stamp)
                    if when is not None:
                        self._last = max(when, self._last) if self._open else when
                        self._open, self._header = True, False
                        pos = run.end()
                        continue
                # (the run after the record stops where the next one would: at the first stop past it)
                after = ahead if ahead > pos else starts[index + 1] if index + 1 < len(starts) else end
                found = record_run(text, pos, after) or record(text, pos)
                if found is not None:
                    stamp, level, message, cached, prompt, model = found.groups()
                    when = (
                        None
                        if level == "DEBUG" and not self._seen_debug  # (the first DEBUG: `_start` reads it)
                        else self._stamp[1]
                        if stamp == self._stamp[0]
                        else self._epoch(stamp)
                    )
                    # what `_start` does with the header, then `_parse_text` with the message line
                    if when is not None:
                        self._last = max(when, self._last) if self._open else when
                        self._open, self._header = True, False
                        recognized += 1
                        elsewhere += 2  # (the run after it is counted with the others)
                        pos = found.end()
                        if cached is not None and found.end(3) - found.end(5) == 18:  # (nothing after it)
                            result: ParseResult = self._using(int(prompt), int(cached))
                        elif model is not None and "prompt cache disk usage" not in message:
                            self._model = _model_tag(model)
                            result = self._generation(self._last)
                        else:
                            result = self._message(message)
                        if isinstance(result, list):
                            recognized += 1
                            events += result
                        else:
                            errors += 1
                        continue
            stop = find("\n", pos)
            result = parse(text[pos:stop])
            pos = stop + 1
            elsewhere += 1
            if isinstance(result, list):
                recognized += 1
                events += result
                runs = _RUNS[self._seen_debug].match  # (it may have been the first DEBUG record)
                record_run = _RECORD_RUNS[self._seen_debug].match
            elif result is not None:
                errors += 1
        recognized += text.count("\n") - elsewhere
        return BlockResult(events, recognized, errors)

    def flush(self) -> list[Event]:
        """End of input: nothing is held across lines but the current record's time."""
        return []

    def _epoch(self, stamp: str) -> float | None:
        """Local `YYYY-MM-DD HH:MM:SS` in the configured zone; the last stamp is remembered."""
        if stamp == self._stamp[0]:
            return self._stamp[1]
        if self._utc:  # (no offset to look up: the day's midnight, remembered, and the time of day)
            midnight = self._days.get(stamp[:10])
            hour, minute, second = int(stamp[11:13]), int(stamp[14:16]), int(stamp[17:19])
            if midnight is not None and hour < 24 and minute < 60 and second < 60:
                when = midnight + hour * 3600 + minute * 60 + second
                self._stamp = (stamp, when)
                return when
        try:
            when = datetime(
                int(stamp[:4]), int(stamp[5:7]), int(stamp[8:10]),
                int(stamp[11:13]), int(stamp[14:16]), int(stamp[17:19]), tzinfo=self._tz,
            ).timestamp()  # fmt: skip
        except ValueError:
            return None
        self._stamp = (stamp, when)
        if self._utc and len(self._days) < 4096:
            self._days[stamp[:10]] = (
                when - int(stamp[11:13]) * 3600 - int(stamp[14:16]) * 60 - int(stamp[17:19])
            )
        return when

    def _parse_text(self, text: str) -> ParseResult:
        if "\x1b" in text:
            text = strip_ansi(text)
        if "【" in text:
            text = ls.ascii_brackets(text)
        text = text.rstrip("\r\n")
        header = ls.HEADER.match(text) if text[:1].isdigit() else None
        if header is not None:
            return self._start(text[:19], header[7], two_line=True)
        if text.startswith("[") and text[1:2].isdigit():
            one = ls.ONE_LINE.match(text)
            level = one[7] if one is not None else ""
            if one is None:  # (the app's main.log: milliseconds, a lower-case level)
                one = ls.MAIN.match(text)
                level = "" if one is None else ls.MAIN_LEVELS.get(one[7].lower(), "INFO")
            if one is not None:
                started = self._start(text[1:20], level, two_line=False)
                message = self._message(text[one.end() :])
                if not isinstance(started, list) or not isinstance(message, list):
                    return started if not isinstance(started, list) else message
                return started + message
        if not self._open:
            if not ls.STANDALONE.match(text):
                return None
            # one of mlx-engine's per-request lines pasted without LM Studio's record framing: the
            # message alone, at the start time (nothing earlier tells the time)
            self._open, self._last = True, self._start_time
        if self._header:
            # A two-line record's message: ` message`; a paste that lost its leading space (mlx-lm#480's
            # full-width one: `【cache_wrapper】【INFO】: Trimmed 74 ...` under `... 【DEBUG】`) reads the
            # same.
            self._header = False
            return self._message(text[1:] if text.startswith(" ") else text)
        return self._message(text)

    def _start(self, stamp: str, level: str, *, two_line: bool) -> ParseResult:
        """A record begins: its time (never before the last one) and level."""
        if level not in ls.LEVELS:
            return ParseError(f"lmstudio: level {level[:10]!r}")
        when = self._epoch(stamp)
        if when is None:
            return ParseError(f"lmstudio: no such time {stamp!r}")
        self._last = max(when, self._last) if self._open else when
        self._open = True
        self._header = two_line
        if level == "DEBUG" and not self._seen_debug:
            self._seen_debug = True
            if self._blind:
                return [self._set_blind("")]
        return []

    def _message(self, message: str) -> ParseResult:
        """The events of a record's message (or of one of its continuation lines)."""
        tags, body = ls.split_tags(message)
        if tags and body.startswith(ls.GENERATION):
            self._model = ls.model_of(tags)
        if body.startswith(LIFE_STARTS):  # (a model load that failed, and its root cause: main.log)
            return load_line(self._life, tags, body, self._last)
        try:
            return self._body(body)
        except ls.GarbledError as exc:
            return ParseError(f"lmstudio: {exc}")

    def _body(self, body: str) -> list[Event]:
        now = self._last
        if body.startswith("Prompt cache"):
            return self._prompt_cache(body, now)
        if body.startswith("Cache reuse summary"):
            match = ls.REUSE.match(body)
            if match is None:
                raise ls.GarbledError("a torn `Cache reuse summary` line")
            matched, total = int(match[1]), int(match[2])
            # A prompt reused whole still has its last token decoded again, for its logits (llama.cpp's
            # server: "we have to evaluate at least 1 token to generate logits", n_past - 1; the runtime
            # prints `939/939` then `Prompt tokens to decode: 1`): that token is computed, not cached.
            cached = matched - 1 if matched == total > 0 else matched
            self._summary = total  # (its `Total prompt tokens` / `Prompt tokens to decode` follow: no record)
            return self._record(total, cached, "llama.cpp", None)
        if body.startswith(("Total prompt tokens", "Prompt tokens to decode")):
            return self._totals(body, now)
        if body.startswith("Trimmed ") and not body.startswith("Trimmed tokens"):
            match = ls.TRIMMED.match(body)
            if match is None:
                raise ls.GarbledError("a torn `Trimmed` line")
            return [LmstudioCacheEvent(self.source, now, "trim", tokens=int(match[1]))]
        for start, reason in ls.CLEARS:
            if body.startswith(start):
                return [LmstudioCacheEvent(self.source, now, "clear", reason=reason)]
        if "prompt cache disk usage" in body:
            values = ls.pairs(body)
            unknown = self._drift.keys(now, "disk usage", values, ls.DISK_KEYS)
            if any(key not in values for key in ls.DISK_REQUIRED):
                if unknown:
                    return unknown  # a key renamed (an unknown one in its place): a line of no release
                raise ls.GarbledError("a torn `disk usage` line")
            used, cap = ls.decimal(values, "used_mib") * ls.MIB, ls.decimal(values, "cap_mib") * ls.MIB
            disk = LmstudioDiskUsage(self.source, now, used, cap, ls.integer(values, "records"))
            return [disk, *unknown]
        if body.startswith(ls.GENERATION):
            return self._generation(now)
        return self._drift.line(now, body) or []

    def _totals(self, body: str, now: float) -> list[Event]:
        """The llama.cpp runtime's `Total prompt tokens: N` (remembered) and `Prompt tokens to decode: M`:
        the record of a request whose `Cache reuse summary` was not printed (cached N - M); after a
        summary of the same prompt, nothing (it made the record)."""
        total = ls.TOTAL.match(body)
        if total is not None:
            self._total = int(total[1])
            return []
        decode = ls.TO_DECODE.match(body)
        if decode is None:
            return self._drift.line(now, body) or []
        prompt, summary = self._total, self._summary
        self._total = self._summary = None
        if prompt is None or prompt == summary:
            return []
        if int(decode[1]) > prompt:
            raise ls.GarbledError(f"{decode[1]} to decode of a {prompt}-token prompt")
        return self._record(prompt, prompt - int(decode[1]), "llama.cpp", None)

    def _using(self, prompt: int, cached: int) -> ParseResult:
        """`_message` of mlx-engine's `[cache_wrapper][INFO]: Prompt cache: using N/M tokens from cache`."""
        try:
            return self._record(prompt, cached, "mlx", None)
        except ls.GarbledError as exc:
            return ParseError(f"lmstudio: {exc}")

    def _prompt_cache(self, body: str, now: float) -> list[Event]:
        if body.startswith("Prompt cache: "):
            match = ls.USING.match(body)
            if match is None:
                raise ls.GarbledError("a torn `Prompt cache: using` line")
            return self._record(int(match[2]), int(match[1]), "mlx", None)
        if body.startswith("Prompt cache restore: "):
            values = ls.pairs(body)
            unknown = self._drift.keys(now, "restore", values, ls.RESTORE_KEYS)
            if any(key not in values for key in ls.RESTORE_KEYS):
                if unknown:
                    return unknown  # a key renamed (an unknown one in its place): a line of no release
                raise ls.GarbledError("a torn `restore` line")
            cached = ls.integer(values, "cached_tokens")
            uncached = ls.integer(values, "uncached_tokens", signed=True)
            efficiency = ls.decimal(values, "lifetime_efficiency", "%") / 100
            record = self._record(cached + uncached + 1, cached, "mlx-vision", efficiency)
            return [*record, *unknown]
        return self._drift.line(now, body) or []

    def _label(self) -> str:
        model = self._model
        if model in self._labels or not model:
            return model
        if len(self._labels) >= MAX_MODELS:
            return "other"
        self._labels.add(model)
        return model

    def _record(self, prompt: int, cached: int, runtime: str, efficiency: float | None) -> list[Event]:
        if cached > prompt:
            raise ls.GarbledError(f"{cached} cached of a {prompt}-token prompt")
        self._records += 1
        record = LmstudioRequest(
            self.source, self._last, prompt, cached, model=self._label(), runtime=runtime,
            lifetime_efficiency=efficiency,
        )  # fmt: skip
        events: list[Event] = [record] if self._life.served else [*self._life.serving(self._last), record]
        if self._blind:
            events.append(self._set_blind(""))
        return events

    def _generation(self, now: float) -> list[Event]:
        self._generations += 1
        events: list[Event] = [LmstudioCompletion(self.source, now, self._label())]
        if not self._life.served:  # (serving again: a failed load before it is over)
            events[:0] = self._life.serving(now)
        if (
            self._generations >= BLIND_AFTER
            and not self._records
            and not self._seen_debug
            and not self._blind
        ):
            events.append(self._set_blind("verbose_off"))
        return events

    def _set_blind(self, reason: str) -> EngineFact:
        self._blind = reason
        return EngineFact(self.source, self._last, "blind", reason)


def make_parser(source: str, settings: ParserSettings, options: Any) -> LmstudioParser:
    """The engine's parser of one source (kvwatch.engines.base.ParserFactory)."""
    return LmstudioParser(source, settings)
