"""Ollama's log -> `OllamaRequest` per request, cache events, `[GIN]` access records, restarts.

Ollama's own lines are Go slog text records (`time=... level=... source=... msg=... k=v`), under
systemd behind journald's `Mon DD HH:MM:SS host ollama[PID]: `. What each release logs per request
(ollama/ollama):
- the MLX runner (x/mlxrunner/prefix_cache.go), INFO: `cache hit` / `cache miss` with total, matched,
  cached, left; WARN `failed to restore cache, freeing all caches`;
- the Go runners up to 0.29 (runner/ollamarunner/cache.go, runner/llamarunner/cache.go), DEBUG only
  (OLLAMA_DEBUG=1): `loading cache slot` (id, cache, prompt, used, remaining), `evicting cache slot`,
  `forking cache slot`, `context limit hit - shifting`, `kv cache removal unsupported/not supported` and
  `kv cache cannot shift` (the slot's cache is cleared and its inputs re-processed);
- from 0.30, one bundled llama-server per loaded model, whose output Ollama copies into its own log
  unchanged (llm/llama_server.go: `--log-verbosity 4 --no-log-prefix --no-log-timestamps`), and 0.1.x's
  embedded 2024 server (llm/ext_server): read by the reused engine's parser (llama.cpp), one parser per
  runner (`starting llama-server` / `starting runner` / `starting llama server` with its `--port`,
  `starting mlx runner subprocess` with its port). Runner lines carry no tag of their runner: a slot line
  goes to the runner whose tasks on that slot explain its task id (see `_owner`), any other line to the
  runner that started last; time is the journald prefix's, else the last slog record's.
Records are labelled with the runner's model (`--model` blob, or the MLX runner's model name), at most
`MAX_MODELS` distinct per source (then "other"). `Listening on ... (version V)` is a server (re)start.

Blindness (`no_signal`, see `blindness`): generation requests in `[GIN]` lines with no per-request
cache line since the start set the fact `blind`; the first cache record clears it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timezone
from functools import partial
from typing import Any, Literal, Protocol

from kvwatch.engines import markers_of, reused_parser
from kvwatch.engines.llamacpp.events import LlamaCutOff, LlamaRequest
from kvwatch.engines.ollama import lines as ol
from kvwatch.engines.ollama.events import OllamaAccess, OllamaCacheEvent, OllamaCutOff, OllamaRequest
from kvwatch.engines.ollama.lifecycle import lifecycle
from kvwatch.model import EngineFact, Event, LogLine, ServerRestart, UnreadFields
from kvwatch.parsers.base import BlockResult, ParseError, Parser, ParseResult, ParserSettings, tally
from kvwatch.parsers.clock import LineClock, YearlessClock
from kvwatch.parsers.drift import Drift, is_fact
from kvwatch.parsers.text import strip_ansi
from kvwatch.times import parse_rfc3339

#: Ollama's own markers; its parser adds those of the engine it reuses.
MARKERS = ("time=", "[GIN] ", "cache hit ", "cache miss ", "llama runner", "Listening on ")
#: Distinct model labels per source; later models are counted as "other".
MAX_MODELS = 8
_SLOT = re.compile(r"slot +\S*: id +(\S+) \| task (\S+) \|")
#: How the paths of requests whose `[GIN]` line counts as a generation end (each should have a cache line).
GENERATION = (
    "/api/chat",
    "/api/generate",
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/messages",
    "/v1/responses",
)
#: Generation requests without any cache line before the source is judged blind.
BLIND_AFTER = 2
#: A slot line's (slot, task), the runner it went to, and how many runners there were after it.
_Routed = tuple[tuple[str, str], str, int] | None


class _Run(Protocol):
    """A reused parser's `untagged_run` (see the llama.cpp parser)."""

    def __call__(
        self,
        lines: list[str],
        start: int,
        prefix: str,
        wall: float,
        *,
        mine: Callable[[str], bool],
        srv: bool,
        mine_task: Callable[[int, int], bool],
    ) -> tuple[list[Event], int, int, int] | None: ...


EventKind = Literal["clear", "failed_restore", "context_shift", "eviction", "fork"]
_STARTS = ("starting llama-server", "starting runner", "starting llama server")
_CLEARS = ("kv cache removal unsupported", "kv cache removal not supported", "kv cache cannot shift")
_EVENTS: dict[str, EventKind] = {
    "failed to restore cache, freeing all caches": "failed_restore",
    "context limit hit - shifting": "context_shift",
    "evicting cache slot": "eviction",
    "forking cache slot": "fork",
}


#: Patterns of `_train`, per runner parser's `request_pattern`.
_TRAINS: dict[str, re.Pattern[str]] = {}
#: A pick as `untagged_run` tests for it (one space before `selected`), and as its request pattern reads it.
_PICK, _PICK_READ = r"\| task -1 \| selected slot by ", r"\| task -1 \| +selected slot by "


def _train_pattern(parser: Parser | None) -> Callable[[str, int], re.Match[str] | None] | None:
    """`_train`'s match: a runner's request read whole (its parser's `request_pattern`), then the srv
    lines after it and its `[GIN]` line under the same prefix; None for a parser without one."""
    pattern: str | None = getattr(parser, "request_pattern", None)
    if pattern is None or _PICK_READ not in pattern:
        return None
    train = _TRAINS.get(pattern)
    if train is None:
        tail = r"(?P<srv>(?:(?P=p)srv [^\n]*\n)*)(?:(?P=p)(?P<gin>\[GIN\] [^\n]*)\n)?"
        train = _TRAINS[pattern] = re.compile(pattern.replace(_PICK_READ, _PICK, 1) + tail)
    return train.match


def _next_second(text: str, held: str, end: int) -> bool:
    """Whether `text[:end]` is the held journald prefix (`Mon DD HH:MM:SS `, as JOURNAL read it to its
    end) with only the time of day's digits changed."""
    return (
        end == len(held)
        and text[15:end] == held[15:]
        and text[:7] == held[:7]
        and text[6] == " " == text[15]
        and text[9] == ":" == text[12]
        and (text[7:9] + text[10:12] + text[13:15]).isdecimal()
    )


def _read_time(match: re.Match[str]) -> float | None:
    return parse_rfc3339(match[1])


def _write_time(when: float) -> str:
    stamp = datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return f"time={stamp[:-3]}Z"


#: slog's `time=` at the start of Ollama's own records (`kvwatch demo` rewrites it; `[GIN]` lines keep
#: theirs, which the parser never lets go back before the records around them).
CLOCK = LineClock(re.compile(r"(?<![^\s])time=(\S+)"), _read_time, _write_time, first_only=True)


#: Messages only Ollama writes: one of them names the engine (a one-line excerpt is enough).
_OWN_MESSAGES = frozenset(
    {"cache hit", "cache miss", "loading cache slot", "failed to restore cache, freeing all caches"}
)


def looks_like(sample: str) -> bool:
    """True when a file's head reads like Ollama's log: two slog records with Ollama's sources or gin
    lines, or one line only Ollama writes (a cache record, a gin line of Ollama's `/api/`, the MLX
    runner's bare `cache hit total=...`), or journald lines mostly from a program named ollama."""
    hits = ours = theirs = 0
    for line in sample.splitlines()[:2000]:
        text = line
        if text.startswith('{"level":') and (carried := ol.unwrap_pino(text)) is not None:
            text = carried[0]  # (Msty's pino records)
        journal = ol.JOURNAL.match(text)
        if journal is not None:
            if journal[6] == "ollama":
                ours += 1
            else:
                theirs += 1  # (systemd's own lines, or another program's journal)
            text = text[journal.end() :]
        if text.startswith("[GIN] ") and (gin := ol.GIN.match(text)) is not None:
            hits += 2 if gin[11].startswith("/api/") else 1
        elif "time=" in text:
            record = ol.read_slog(text)
            if record is not None and "source" in record.attrs:
                hits += 2 if record.msg in _OWN_MESSAGES else 1
        elif ol.BARE_CACHE.match(text):
            hits += 2
        if hits >= 2:
            return True
    return ours > theirs


def model_label(cmd: str) -> str:
    """The model a runner's command line loads: its blob's `sha256-` and 12 hex digits, or its file."""
    match = ol.MODEL.search(cmd)
    if match is None:
        return ""
    name = match[1].strip('"').replace("\\", "/").rsplit("/", 1)[-1]
    return name[:19] if name.startswith("sha256-") else name[:64]


class OllamaParser:
    """Ollama's slog and gin lines, and its runners' lines through one reused parser per runner."""

    def __init__(
        self, source: str, settings: ParserSettings, reused: Callable[[], Parser], markers: tuple[str, ...]
    ) -> None:
        self.source = source
        self.markers = markers
        self._reused = reused
        self._clock = YearlessClock(settings.year or settings.now_year, settings.tz)
        # gin and Go's log print local time without a zone; slog's `time=` carries the zone's offset.
        # With no `tz` configured, the last offset slog printed places them (0 until one is seen).
        self._learn = settings.tz == "UTC"
        self._local = 0.0
        self._life = lifecycle(source)  # whether its model runner came up or died (engine_start_failed)
        self._drift = Drift(source, "ollama", ol.SHAPES)  # records of shapes or keys no release printed
        self._runners: dict[str, Parser] = {}
        self._runner = ""  # the runner that started last
        self._models: dict[str, str] = {}  # runner -> its model label
        self._labels: set[str] = set()
        self._conversations: dict[tuple[str, int], int] = {}
        self._last: float | None = None
        self._start = settings.start
        self._version = ""
        self._generations = 0  # generation requests since the start
        self._records = 0  # cache records since the start
        self._exact = 0
        self._blind = ""
        self._prefix: tuple[str, float | None] = ("", None)  # the last journald prefix and its time
        self._fast = settings.fast_paths  # (whether `_journal` reads a prefix from the last one's)

    def parse(self, line: LogLine) -> ParseResult:
        """The events of one line; [] for a recognised line with none; None for a foreign line."""
        return self._parse_text(line.text, line.time)

    def parse_block(self, texts: list[str]) -> BlockResult:
        """`parse` over many lines of a plain file (no transport time), without a LogLine per line."""
        parse = self._parse_text
        return tally([parse(text, None) for text in texts])

    def parse_text(self, text: str) -> BlockResult:
        """`parse` over each line of `text` (whole lines, each ending in `\\n`; no transport time). A line
        with the journald prefix `_journal` remembers (the lines of one second share it) is read from
        after it. A runner's line goes to the runner `parse` would send it to (`_route`), with the
        lines after it of the same prefix that go there too (its `untagged_run`: slot lines `_owner`
        gives it, those of a task in progress there without asking; its srv lines when it started
        last). Any other line is parsed as `parse` parses it."""
        lines = text.split("\n")
        lines.pop()
        if "\x1b" in text or "\r" in text:
            return self.parse_block(lines)
        events: list[Event] = []
        recognized = errors = 0
        body_of, runners = self._body, self._runners
        routed: _Routed = None
        index, count = 0, len(lines)
        synced = at = 0  # a line index and where its line starts in `text` (see _train)
        while index < count:
            line = lines[index]
            prefix, wall = self._prefix
            end = line.find("]: ", 16, 200)
            if end > 0 and line[: end + 3] == prefix:  # (what _journal does with the prefix it holds)
                body = line[end + 3 :]
            elif line[:1].isupper():
                body, wall = self._journal(line, None)
                prefix = self._prefix[0] if len(body) < len(line) else ""
            else:
                body, wall, prefix = line, None, ""
            result: ParseResult = None
            head = body[:5]
            if head == "slot " and prefix and "| task -1 | selected slot by " in body:
                at += sum(map(len, lines[synced:index])) + index - synced
                synced = index
                taken, stop, wrong = self._train(text, at)
                if stop > at:
                    read = text.count("\n", at, stop)
                    recognized += read - wrong
                    errors += wrong
                    events += taken
                    index = synced = index + read
                    at, routed = stop, None
                    continue
            if prefix and (head == "slot " or head[:4] == "srv "):
                runner, tag = self._route(body, routed) if head == "slot " else (self._runner, None)
                parser = runners.get(runner)
                if parser is None:
                    parser = self._new_runner(runner)
                run: _Run | None = getattr(parser, "untagged_run", None)
                when = wall if wall is not None else self._last
                # (`prefix` is what the `]: ` test above finds in a line that starts with it)
                if run is not None and when is not None and prefix.find("]: ", 16, 200) == len(prefix) - 3:
                    # The runner takes the lines after this one that _owner would give it. Those of this
                    # line's task while it is in progress there it takes without asking: _owner gives
                    # it this line knowing every runner, or there is no other (a runner made for this
                    # line has no stream yet: the run does not start), and only its state changes.
                    mine, srv = partial(self._owns, runner), runner == self._runner
                    task = partial(self._owns_task, runner)
                    got = run(lines, index, prefix, when, mine=mine, srv=srv, mine_task=task)
                    if got is not None:
                        found, more, wrong, index = got
                        recognized += more
                        errors += wrong
                        for event in found:
                            if isinstance(event, LlamaRequest):
                                events += self._from_llama(event, runner)
                        routed = None
                        continue
                try:
                    result = self._runner_line(body, wall, runner)
                except ol.GarbledError as exc:
                    result = ParseError(f"ollama: {exc}")
                routed = (tag, runner, len(runners)) if tag is not None else None
            else:
                result, routed = body_of(body, wall), None
            index += 1
            if isinstance(result, list):
                recognized += 1
                if result:
                    events += result
            elif result is not None:
                errors += 1
        return BlockResult(events, recognized, errors)

    def _train(self, text: str, at: int) -> tuple[list[Event], int, int]:
        """What `parse_text`'s loop makes of the lines of `text` from `at` (a pick's line start under a
        journald prefix) for as long as they come as requests b9452 writes, one prefix a request:
        each request's pick to `stop processing` read by the runner that started last in one match (its
        `untagged_request`, as its `untagged_run` reads them), the srv lines after it that its run
        takes, then its `[GIN]` line. Returns the events, where the lines read end (`at`: none), and
        how many of them were in error. A line it does not read so ends it, before any change."""
        events: list[Event] = []
        errors = 0
        runners, body_of = self._runners, self._body
        match = _train_pattern(runners.get(self._runner))
        while match is not None and (found := match(text, at)) is not None:
            prefix = found["p"]
            if prefix.find("]: ", 16, 200) != len(prefix) - 3 or not prefix[:1].isupper():
                break  # (parse_text would not hand the pick to the runner's run)
            held, wall = self._prefix
            if prefix != held:
                body, wall = self._journal(prefix, None)  # (what parse_text does first with the pick)
                if body:
                    break
            runner = self._runner  # (`_route` of a pick: its task is not a number)
            parser = runners.get(runner)
            request = getattr(parser, "untagged_request", None)
            if wall is None or request is None:
                break
            record = request(found, wall, self._owns_last)
            if record is None:
                break
            events += self._from_llama(record, runner)
            srv = found["srv"]
            if srv:
                quiet = parser.quiet_srv  # type: ignore[union-attr]  # (a parser with untagged_request)
                skip = len(prefix)
                for line in srv.split("\n")[:-1]:
                    if not quiet(line[skip:]):
                        at = found.end("late")  # (the srv lines are read as parse_text reads them)
                        return events, at, errors
            gin = found["gin"]
            if gin is None:
                at = found.end("srv")
                continue
            result = body_of(gin, wall)
            if isinstance(result, list):
                events += result
            elif result is not None:
                errors += 1
            at = found.end()
        return events, at, errors

    def _new_runner(self, name: str) -> Parser:
        """A runner's parser, made on its first line."""
        parser = self._runners[name] = self._reused()
        return parser

    def _owns(self, runner: str, text: str) -> bool:
        """Whether `_owner` gives a line to this runner."""
        return self._owner(text) == runner

    def _owns_last(self, slot: int, task: int) -> bool:
        """`_owns_task` of the runner that started last (the runner then, not when a run began)."""
        return self._owns_task(self._runner, slot, task)

    def _owns_task(self, runner: str, slot: int, task: int) -> bool:
        """Whether `_owner` gives a slot line of this slot and task (ASCII digits) to this runner."""
        return (self._owner_of(slot, task) if len(self._runners) >= 2 else self._runner) == runner

    def _route(self, text: str, routed: _Routed) -> tuple[str, tuple[str, str] | None]:
        """The runner of a slot line (`_owner`'s answer), and its (slot, task) when `_owner` chose by it;
        `routed`: where the line just before went, if it was one whose runner `_owner` chose among
        several by its task."""
        runners = self._runners
        match = _SLOT.match(text) if len(runners) >= 2 else None
        if match is None or not match[1].isdecimal() or not match[2].isdecimal():
            return self._runner, None  # (`_owner` answers the runner that started last)
        tag = match[1], match[2]
        if routed is not None and routed[0] == tag and routed[2] == len(runners):
            # The runner `_owner` chose for the line before, unless another had the task in progress
            # then (it would have been chosen): this one has it in progress now, so it is chosen again.
            parser = runners.get(routed[1])
            tasks: Callable[[int], tuple[int, bool]] | None = getattr(parser, "slot_task", None)
            if tasks is not None and tasks(int(tag[0])) == (int(tag[1]), True):
                return routed[1], tag
        return self._owner_of(int(tag[0]), int(tag[1])), tag

    def _journal(self, text: str, transport: float | None) -> tuple[str, float | None]:
        """Strip journald's prefix; its time. The prefix of the last line is remembered: the lines of
        one second share it, and the clock's answer for it (without a transport time) is the same."""
        end = text.find("]: ", 16, 200)
        if end > 0 and transport is None and self._fast:
            held = self._prefix[0]
            if text[: end + 3] == held:
                return text[end + 3 :], self._prefix[1]
            if _next_second(text, held, end + 3):
                # (JOURNAL reads it as it read the held prefix, but for the time of day)
                hms = (int(text[7:9]), int(text[10:12]), int(text[13:15]))
                wall = self._clock.resolve(ol.MONTHS[text[:3]], int(text[4:6]), hms, None)
                self._prefix = (text[: end + 3], wall)
                return text[end + 3 :], wall
        journal = ol.JOURNAL.match(text)
        if journal is None or journal[1] not in ol.MONTHS:
            return text, transport
        hms = (int(journal[3]), int(journal[4]), int(journal[5]))
        wall = self._clock.resolve(ol.MONTHS[journal[1]], int(journal[2]), hms, transport)
        if transport is None:
            self._prefix = (text[: journal.end()], wall)
        return text[journal.end() :], wall

    def _parse_text(self, text: str, wall: float | None) -> ParseResult:
        if "\x1b" in text:
            text = strip_ansi(text)
        if text[-1:] == "\r":
            text = text.rstrip("\r")
        if text[:1].isupper():
            text, wall = self._journal(text, wall)
        return self._body(text, wall)

    def _body(self, text: str, wall: float | None) -> ParseResult:
        """A line after its journald prefix, at `wall`."""
        if text.startswith('{"level":'):
            carried = ol.unwrap_pino(text)
            if carried is None or carried[0].startswith('{"level":'):
                return None
            inner, own = carried
            return self._body(inner, wall if wall is not None else own)
        try:
            if text.startswith("time="):
                record = ol.read_slog(text)
                if record is not None:
                    return self._slog(record, wall)
            elif text.startswith("[GIN] "):
                return self._gin(text, wall)
            elif text.startswith("cache ") and ol.BARE_CACHE.match(text):
                msg = text[: text.index(" total=")]
                return self._slog(ol.Record("", "INFO", msg, ol.attributes(text)), wall)
            elif text[:2] in ("20", "19") and (golog := ol.GOLOG.match(text)) is not None:
                return self._golog(golog, wall)
            return self._runner_line(text, wall)
        except ol.GarbledError as exc:
            return ParseError(f"ollama: {exc}")

    def flush(self) -> list[Event]:
        """End of input: the runners' requests released without timings become records; of those cut
        off in progress, a forced full re-processing still counts (the rest is dropped)."""
        events: list[Event] = []
        for runner, parser in self._runners.items():
            for event in parser.flush():
                if isinstance(event, LlamaRequest):
                    events += self._from_llama(event, runner)
                elif isinstance(event, LlamaCutOff) and event.full_reprocess:
                    events.append(OllamaCutOff(self.source, self._now(event.time), self._label(runner)))
        return events

    def _now(self, when: float | None) -> float:
        """Event time: the line's own, never before the last one (else the last, else the start)."""
        last = self._last if self._last is not None else self._start
        now = last if when is None else max(when, last) if self._last is not None else when
        self._last = now
        return now

    def _label(self, runner: str) -> str:
        model = self._models.get(runner, "")
        if model in self._labels or not model:
            return model
        if len(self._labels) >= MAX_MODELS:
            return "other"
        self._labels.add(model)
        return model

    def _slog(self, record: ol.Record, wall: float | None) -> ParseResult:
        msg, attrs = record.msg, record.attrs
        now = self._now(parse_rfc3339(record.time) if record.time else wall)
        if self._learn and record.time:
            self._local = _offset(record.time, self._local)
        required = ol.REQUIRED.get(msg)
        if required is not None:
            unknown = self._drift.keys(now, msg, attrs, ol.KNOWN[msg])  # (read for the keys it knows)
            if unknown and any(key not in attrs for key in required):
                return unknown  # a key renamed (an unknown one in its place): a record of no release
            read = self._request(msg, attrs, now)
            return read + unknown if unknown else read
        return self._other(record, now)

    def _request(self, msg: str, attrs: dict[str, str], now: float) -> list[Event]:
        """A request's record (`cache hit` / `cache miss`, `loading cache slot`) with its keys."""
        if msg != "loading cache slot":
            total, cached = ol.number(attrs, "total"), ol.number(attrs, "cached")
            matched = ol.number(attrs, "matched")
            ol.number(attrs, "left")
            return self._record(
                OllamaRequest(
                    self.source, now, total, cached, runner=self._runner,
                    model=self._label(self._runner), matched=matched,
                )
            )  # fmt: skip
        slot, prompt, used = (ol.number(attrs, k) for k in ("id", "prompt", "used"))
        ol.number(attrs, "cache")
        record = OllamaRequest(
            self.source, now, prompt, used, slot=slot, runner=self._runner, model=self._label(self._runner)
        )
        return self._record(record)

    def _other(self, record: ol.Record, now: float) -> ParseResult:
        """A record other than a request's: cache events, runner starts, restarts, lifecycle, drift."""
        msg, attrs = record.msg, record.attrs
        kind: EventKind | None = _EVENTS.get(msg) or ("clear" if msg.startswith(_CLEARS) else None)
        if kind is not None:
            return [OllamaCacheEvent(self.source, now, kind, self._runner)]
        if msg.startswith(_STARTS) or msg == "starting mlx runner subprocess":
            cmd = attrs.get("cmd", "")
            port = ol.PORT.search(cmd)
            runner, model = (
                (port[1] if port else attrs.get("port", "")),
                attrs.get("model", "") or model_label(cmd),
            )
            models = self._models
            for old in [r for r in self._runners if models.get(r) == model and model]:
                self._runners.pop(old)  # a model is loaded once: its earlier runner has exited
            self._runners.pop(runner, None)  # a new process on that port
            self._runner, self._models[runner] = runner, model
            return []
        if msg.startswith("Listening on "):
            return self._restart(now, msg)
        if msg == "server config":
            setting = ol.DEBUG_SETTING.search(attrs.get("env", ""))
            return [EngineFact(self.source, now, "ollama_debug", setting[1] if setting else "unset")]
        error = attrs.get("error")
        lived = self._life.line(f"{msg}: {error}" if error else msg, now)
        if lived is not None:
            return lived
        # a record with a request's cache figures under a message no release printed: told, not dropped
        drifted = self._drift.line(now, ol.figure_keys(attrs), ol.record_shape(record))
        return [] if drifted is None else drifted

    def _golog(self, match: re.Match[str], wall: float | None) -> ParseResult:
        """Ollama 0.1.x's Go `log` line (ol.GOLOG): its start and its runner's start or death."""
        msg = match[7]
        if not msg.startswith("Listening on ") and "llama runner" not in msg:
            return None  # (its other lines say nothing kvwatch reads)
        if wall is None:
            year, month, day, hour, minute, second = map(int, match.group(1, 2, 3, 4, 5, 6))
            wall = self._clock.dated(year, month, day, (hour, minute, second))  # (local time, as gin's)
            if wall is None:
                return ParseError("ollama: a Go log line's date does not exist")
            wall -= self._local
        now = self._now(wall)
        if msg.startswith("Listening on "):
            return self._restart(now, msg)
        lived = self._life.line(msg, now)
        return [] if lived is None else lived

    def _restart(self, now: float, msg: str) -> list[Event]:
        version = ol.VERSION.search(msg)
        self._version = version[1] if version else ""
        self._runners.clear()
        self._runner, self._generations, self._records, self._exact, self._blind = "", 0, 0, 0, ""
        self._conversations.clear()
        self._life.restart()
        events: list[Event] = [ServerRestart(self.source, now, "ollama")]
        if self._version:
            events.append(EngineFact(self.source, now, "ollama_version", self._version))
        return events

    def _gin(self, text: str, wall: float | None) -> ParseResult:
        match = ol.GIN.match(text)
        if match is None:
            return ParseError("ollama: a torn [GIN] line")
        status = match[7]
        if not status.isdecimal():
            return ParseError(f"ollama: [GIN] status {status[:20]!r}")
        if wall is not None:
            now = self._now(wall)  # (its own stamp is not read: the transport time is the time)
        else:
            year, month, day, hour, minute, second = map(int, match.group(1, 2, 3, 4, 5, 6))
            when = self._clock.dated(year, month, day, (hour, minute, second))  # (gin prints its year)
            if when is None:
                return ParseError("ollama: [GIN] date does not exist")
            now = self._now(when - self._local)
        access = OllamaAccess(self.source, now, int(status), ol.duration(match[8]), match[10], match[11])
        events: list[Event] = [access]
        if access.method == "POST" and access.path.endswith(GENERATION):
            self._generations += 1
            if not self._records and self._generations >= BLIND_AFTER and not self._blind:
                events.append(self._set_blind(now, "debug_off"))
        return events

    def _set_blind(self, now: float, reason: str) -> EngineFact:
        self._blind = reason
        return EngineFact(self.source, now, "blind", reason)

    def _record(self, record: OllamaRequest) -> list[Event]:
        self._records += 1
        if not record.derived:
            self._exact += 1
        events: list[Event] = [record]
        if self._blind == "debug_off" or (self._blind and self._exact):
            events.append(self._set_blind(record.time, ""))
        elif record.derived and not self._exact and self._records >= BLIND_AFTER and not self._blind:
            events.append(self._set_blind(record.time, "runner_derived"))
        return events

    def _owner(self, text: str) -> str:
        """The runner a line belongs to. A slot line's task id is placed by the tasks each runner has
        seen on that slot: the runner with that task in progress; else the one whose newest task there
        is just below it (a runner yet without one counts as -1: task ids start at 0); else the one
        that finished it (a late line). Any other line goes to the runner that started last."""
        if len(self._runners) < 2 or not text.startswith("slot "):
            return self._runner
        match = _SLOT.match(text)
        if match is None or not match[2].isdecimal() or not match[1].isdecimal():
            return self._runner
        return self._owner_of(int(match[1]), int(match[2]))

    def _owner_of(self, slot: int, task: int) -> str:
        """`_owner` of a slot line of this slot and task, among two runners or more."""
        best, below, finished = None, -2, None
        for runner, parser in self._runners.items():
            tasks: Callable[[int], tuple[int, bool]] | None = getattr(parser, "slot_task", None)
            newest, running = tasks(slot) if tasks is not None else (-1, False)
            if newest == task:
                if running:
                    return runner
                finished = runner
            elif below < newest < task or (newest == below and runner == self._runner):
                best, below = runner, newest
        return best if best is not None else finished if finished is not None else self._runner

    def _runner_line(self, text: str, wall: float | None, runner: str | None = None) -> ParseResult:
        """A runner's line, through the reused parser of the runner it belongs to (see _owner; `runner`:
        already known)."""
        if runner is None:
            runner = self._owner(text)
        parser = self._runners.get(runner)
        if parser is None:
            parser = self._new_runner(runner)
        when = wall if wall is not None else self._last
        # (the reused parser's fast form of an untagged slot line, if it has one: None, read it whole)
        # (or of an untagged srv line that only moves the clock)
        kind = (
            "untagged_slot" if text.startswith("slot ") else "untagged_srv" if text.startswith("srv ") else ""
        )
        fast: Callable[[str, float | None], ParseResult] | None = (
            getattr(parser, kind, None) if kind else None
        )
        result = fast(text, when) if fast is not None else None
        if result is None:
            if not any(marker in text for marker in parser.markers):
                return None
            result = parser.parse(LogLine(self.source, text, when))
        if not isinstance(result, list):
            return result
        events: list[Event] = []
        for event in result:
            if isinstance(event, LlamaRequest):
                events += self._from_llama(event, runner)
            elif isinstance(event, UnreadFields) or (isinstance(event, EngineFact) and is_fact(event.key)):
                events.append(event)  # (a runner's line of a shape no build printed: told as it is)
            # (a runner's own start is not Ollama's: ServerRestart comes from `Listening on`)
        return events

    def _from_llama(self, event: LlamaRequest, runner: str) -> list[Event]:
        """A llama-server request as Ollama's, in the conversation its slot pick shows."""
        if event.prompt_tokens is None or event.reused_tokens is None:
            return []
        key = (runner, event.slot)
        number = self._conversations.get(key, 0)
        if event.selection != "lcp" or event.prompt_cache_rescue:
            number += 1
            self._conversations[key] = number
        where = f"runner {runner} " if runner else ""
        model = self._label(runner)
        # (its server: the runner's model, what Ollama loads one runner for, whatever port a reload
        # gives it; two runners' requests are then judged apart, as two llama-servers' in a journal)
        record = OllamaRequest(
            self.source, self._now(event.time), event.prompt_tokens, event.reused_tokens,
            full_reprocess=event.full_reprocess, slot=event.slot,
            conversation=f"{where}slot {event.slot} #{number}", server=model or None,
            runner=runner, model=model, derived=event.derived,
        )  # fmt: skip
        return self._record(record)


def _offset(stamp: str, known: float) -> float:
    """The UTC offset in seconds that an RFC 3339 `stamp` ends in (`Z`: 0), else `known`."""
    if stamp[-1:] == "Z":
        return 0.0
    sign, hours, colon, minutes = stamp[-6:-5], stamp[-5:-3], stamp[-3:-2], stamp[-2:]
    if sign in ("+", "-") and colon == ":" and hours.isdecimal() and minutes.isdecimal():
        offset = int(hours) * 3600 + int(minutes) * 60
        return float(-offset if sign == "-" else offset)
    return known


def make_parser(source: str, settings: ParserSettings, options: Any) -> OllamaParser:
    """The engine's parser of one source (kvwatch.engines.base.ParserFactory), reading the bundled
    llama-server's lines with that engine's parser."""
    markers = markers_of("ollama") or MARKERS
    # (a partial, not a lambda: replay's parsing child receives the parser pickled)
    return OllamaParser(source, settings, partial(reused_parser, "ollama", source, settings), markers)
