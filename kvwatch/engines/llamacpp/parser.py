"""llama-server output -> one `LlamaRequest` per request, and `ServerRestart` at each server start.

Lines of one request are joined per slot: `task -1` lines (the slot selection, and the host prompt
cache's `found better prompt` that follows and overrides it) wait for that slot's next task; lines
with a task id belong to the slot's request in progress. Slots run concurrently: state is per slot.
The record is emitted at `stop processing` (after the timing lines), at that line's time; a request
cut off before it is dropped, never guessed. A request released without timings (cancelled, failed,
an embedding, a build or verbosity that prints none) is recorded from the lines that preceded it
(`new prompt`, `memory_seq_rm`) when nothing more of it can come: the slot's next task, or the end of
input. `failed to truncate tokens ... clearing the memory` makes its reuse 0 (a full re-process).
At default verbosity (>= b9305, no `new prompt` and `memory_seq_rm`), prompt = stop n_tokens -
n_gen + 1 and reused = prompt - prompt-eval tokens (`derived=True`; exact when the reply stopped by
length, else +-1).

Time. llama.cpp stamps lines relative to process start (`M.SS.mmm.uuu`, jsonl `time` in us). The
first run of a source is anchored at its first stamped line's transport time minus that line's
relative time when the line has one (docker, journald, or the daemon's read time for plain files:
"when the server's start was read"), else at `settings.start` (replay: a fixed epoch). A later run
(after a restart line, or relative time going backwards) puts its relative 0
at the transport time of its first stamped line minus that line's relative time, when the line has
a transport time (docker, journald, syslog prefix), else at the previous run's last event time;
never before the last event. Unstamped lines take the previous line's time inside a stamped run,
else their transport time, else the previous event's time (else `settings.start`). Times never go
backwards, so records come out ordered by time.

Interleaved servers: each process a transport names (journald's `_PID`/`SYSLOG_IDENTIFIER`, a
journalctl or syslog line's `name[pid]:` tag) is a stream of its own, so two llama-servers writing to
one journal keep their slots, clocks and requests apart; its records carry the process as `server`.
At most `MAX_STREAMS` streams are kept (the oldest goes first: a restarted unit's old pid).

Restarts (`initializing slots`, `initializing, n_slots =`, `llama_server: initializing`, `listening
on`, or relative time going backwards) reset every slot and emit one `ServerRestart` per run. Router
mode (`[port] ` prefix): each child process is a stream of its own, with its own slots and clock.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kvwatch.engines.llamacpp import legacy as lg
from kvwatch.engines.llamacpp import lifecycle as life
from kvwatch.engines.llamacpp import lines as ln
from kvwatch.engines.llamacpp import whole as request_whole
from kvwatch.engines.llamacpp.events import LlamaRequest
from kvwatch.engines.llamacpp.slots import READ, Request, Stream
from kvwatch.model import Event, LogLine, ServerRestart, ServerStopped
from kvwatch.parsers.base import BlockResult, ParseError, ParseResult, ParserSettings, tally
from kvwatch.parsers.clock import YearlessClock
from kvwatch.parsers.drift import Drift

#: What llama-server writes as it exits on SIGINT or SIGTERM (b11434's tools/server/server.cpp,
#: `clean_up`: `SRV_INF("%s: cleaning up before exit...\n", __func__)`): a stop, not a crash.
_EXIT = "cleaning up before exit"
#: The address a start line says the server listens on (`llama_server: listening on http://...:8080`,
#: older `main: server is listening on http://...:8080 - starting the main loop`).
_LISTENING = re.compile(r"listening on (\S+)")
#: The first letters of a 2024 `server_log` line (INFO, DEBUG, VERB, WARN, ERR).
_LEGACY_START = frozenset("IDVWE")
_round_us = ln.round_us  # (a global: `_stamped` runs once a line)
#: The head of a slot line up to its `id`: `slot <func>:` (see `untagged_run`), and those seen.
_FUNC = re.compile(r"slot +\S*:")
_FUNCS: set[str] = set()
#: srv lines that only move the clock (`untagged_srv`'s test), as seen.
_QUIET_SRV: set[str] = set()
#: The first words of a message of a request in progress that `Stream.slot` reads (or of an empty one).
_LOUD = READ | {"sele", ""}
#: `untagged_run`'s request when it follows none.
_NO_REQUEST = Request(-1)
#: `LlamacppParser._plain`'s answer for a line that takes the general path (compared by identity).
_SLOW = ParseError("llamacpp: not a plain slot or srv line")
#: Streams kept per source (one per router port and process): a journal's processes come and go.
MAX_STREAMS = 64
#: A stream's key: the router port, the process a transport named, or both ("name[pid] [port]").
Key = int | str | None

#: Every line this parser reads contains one of these (the legacy timing block's continuation lines
#: carry no tag, hence the `eval time`/`total time` markers).
#: Where its lines carry their own time (`kvwatch demo` rewrites it).
CLOCK = ln.CLOCK
MARKERS = (
    "slot ", "srv ", "eval time", "total time", "initializing", "listening", '{"type"', *lg.MARKERS,
    *life.MARKERS,
)  # fmt: skip


def looks_like(sample: str) -> bool:
    """True when a sample of a file (its first ~64 KiB) reads like llama-server output."""
    clock = YearlessClock(2026, "UTC")
    hits = 0
    for text in sample.splitlines()[:2000]:
        if not any(marker in text for marker in MARKERS):
            continue
        for env in ln.unwrap(text, clock) or ():
            body = env.body
            if ln.SLOT.match(body) or ln.SRV.match(body) or _legacy_line(body):
                hits += 1
            elif life.names_engine(body):
                hits += 2
    return hits >= 2


def _legacy_line(body: str) -> bool:
    """A 2024 server's request line (`slot N : in cache: ...`, `... | tid=... id_slot=...`)."""
    if lg.EARLY_CACHE.match(body) or lg.EARLY_OTHER.match(body):
        return True
    line = lg.read(body)
    return line is not None and any(key in line.values for key in ("id_slot", "slot_id"))


class LlamacppParser:
    """Joins llama-server lines into request records, per slot, per server process."""

    markers: tuple[str, ...] = MARKERS

    def __init__(self, source: str, settings: ParserSettings) -> None:
        self.source = source
        self._settings = settings
        self._clock = YearlessClock(settings.year or settings.now_year, settings.tz)
        self._streams: dict[Key, Stream] = {}
        self._last: float | None = None  # time of the previous line of this source
        self._runs = 0  # runs anchored so far: the first one at settings.start
        self._head = ""  # `M.SS.` of the last plain line (see _plain) and its M * 60 + SS
        self._seconds = 0
        self._legacy: dict[Key, lg.Legacy] = {}  # a 2024 server's requests, per stream
        self._life = life.lifecycle(source)  # whether the server came up or died (engine_start_failed)
        self._drift = Drift(source, "llamacpp", ln.SHAPES)  # slot messages reworded (format drift)
        #: The address each named process said it listens on, until it said it stopped (`_listens`).
        self._listening: dict[str, str] = {}

    def snapshot(self) -> dict[str, Any]:
        """Its state as JSON, saved with a position: a restart then finishes the requests in progress."""
        streams = [[port, stream.dump()] for port, stream in self._streams.items()]
        legacy = [[port, old.dump()] for port, old in self._legacy.items()]
        return {"engine": "llamacpp", "last": self._last, "runs": self._runs,
                "clock": list(self._clock.key()), "streams": streams, "legacy": legacy,
                "life": self._life.dump(), "listening": self._listening}  # fmt: skip

    def restore(self, state: Mapping[str, Any]) -> None:
        """Go on from a `snapshot()`; KeyError, TypeError or ValueError when it is not one."""
        if state["engine"] != "llamacpp":
            raise ValueError(f"a state of engine {state['engine']!r}")
        streams = {_key(p): Stream.restored(s) for p, s in state["streams"]}
        for stream in streams.values():
            stream.drift = self._drift
        year, month = state["clock"]
        last = state["last"]
        self._clock.resume((year, month))
        self._last, self._runs = None if last is None else float(last), int(state["runs"])
        self._streams, self._head = streams, ""
        # (a state saved before the 2024 formats were read has none: no 2024 request in progress)
        self._legacy = {_key(p): lg.Legacy.restored(rows) for p, rows in state.get("legacy", [])}
        self._life.load(state.get("life", {}))  # (a state saved before lifecycles were read has none)
        self._listening = {str(at): str(who) for at, who in state.get("listening", {}).items()}

    def untagged_slot(self, body: str, wall: float | None) -> ParseResult:
        """`parse` of a slot line without envelope (no port, stamp, level, ANSI or `\\r`: Ollama's copy of
        its runners' output) at transport time `wall`, without the envelope's work; None: not one (a slot
        line is never foreign, so `parse` must read it)."""
        stream = self._streams.get(None)
        match = ln.SLOT.match(body)
        if stream is None or stream.stamped or match is None or "\x1b" in body or body[-1:] == "\r":
            return None
        return self._untagged(stream, match, wall)

    def _untagged(self, stream: Stream, match: re.Match[str], wall: float | None) -> ParseResult:
        """`untagged_slot` of a line it takes (its SLOT match)."""
        # (_parse_one and _time for such a line: never a restart, no relative time)
        now = wall if wall is not None else (self._last if self._last is not None else self._settings.start)
        if self._last is not None and now < self._last:
            now = self._last
        self._last = now
        stream.timing = None
        try:
            return stream.slot(match[1], match[2], match[3].strip(), now, self.source)
        except ln.GarbledError as exc:
            return ParseError(f"llamacpp: {exc}")

    def untagged_run(
        self,
        lines: list[str],
        start: int,
        prefix: str,
        wall: float,
        *,
        mine: Callable[[str], bool],
        srv: bool,
        mine_task: Callable[[int, int], bool] | None = None,
    ) -> tuple[list[Event], int, int, int] | None:
        """`untagged_slot` or `untagged_srv` of `lines[start]` read from after `prefix`, and of the lines
        after it that start with `prefix` too and are this parser's: a slot line that `mine` says is
        (asked of its text after the prefix; or `mine_task` of its slot and task, where the line's are
        ASCII digits, if given: the same answer), a srv line when `srv` says they all are. A slot line of
        the slot and task of a line before it (the first one too), while that task is in progress on
        the slot, is taken without asking: the caller's router sends it to a runner with the task in
        progress, the first such one, which this parser is. All at transport time `wall`; the
        caller knows that no line holds an ANSI escape or `\\r` (Ollama's runner output in a block).
        A run that starts with a request's pick, its lines as b9452 writes them, reads that request in
        one match (kvwatch.engines.llamacpp.whole).

        Returns their events, lines recognised, lines in error, and the index of the first line not
        read; None when the first line is not one `untagged_slot` or `untagged_srv` takes (`parse`
        must read it). Lines of other kinds end the run: the caller reads them."""
        stream = self._streams.get(None)
        if stream is None or stream.stamped:
            return None
        skip = len(prefix)
        first = lines[start]
        begin = start + 1
        whole = None
        if first.startswith("slot ", skip) and first.find("| task -1 | selected slot by ", skip) > 0:
            clock = wall if self._last is None or wall >= self._last else self._last  # (as _untagged's)
            whole = request_whole.read(
                stream, lines, start, prefix, clock, self.source, mine, placed=True, mine_task=mine_task
            )
            if whole is not None:
                self._last = clock
        match = None
        if whole is None and first.startswith("slot ", skip):
            match = ln.SLOT.match(first, skip)
        result: ParseResult
        if whole is not None:  # a request read whole from its pick: go on after its last line
            result, taken = whole
            begin = start + taken
        elif match is not None:
            result = self._untagged(stream, match, wall)
        else:
            result = self.untagged_srv(first[skip:], wall) if first.startswith("srv ", skip) else None
            if result is None:
                return None
        header = stream.timing is not None  # a bare timing header: its `timing` stays
        events: list[Event] = result if isinstance(result, list) else []
        errors = 0 if isinstance(result, list) else 1  # (every line read gives a list or a ParseError)
        # The rest at the first line's time: `_last` is at least `wall` now and stays where it is.
        now = self._last
        assert now is not None
        source, funcs, requests = self.source, _FUNCS, stream.requests
        marked = ln.SHAPES.marked
        # The task followed without asking: its tag (` id  0 | task 5 |`), slot, request and texts.
        tag, slot, request, ids = "", -1, _NO_REQUEST, ("", "")
        if match is not None:
            tag, slot, request, ids = _follow(stream, match)
        cut = len(tag)
        for index in range(begin, len(lines)):
            line = lines[index]
            at = line.find(tag, skip) if cut else -1
            if at > 0 and line.startswith(prefix) and ((func := line[skip:at]) in funcs or _known_func(func)):
                # `slot <func>:` and the tag: SLOT reads its slot and task (a line of that shape
                # has one reading) and its message after the tag. What Stream.slot does with a
                # line of the request in progress, written out.
                msg = line[at + cut :].strip()
                four = msg[:4]
                if (
                    "memory_seq_rm" not in msg
                    and (four not in _LOUD or (four == "tota" and not request.stopped))
                    and not marked(msg)  # (else it may be drift: apply tells it)
                ):
                    header = False
                    continue  # quiet (`total time` ends only a request stopped before it)
                stream.timing = None
                if four != "sele" and msg:
                    result = stream.apply((slot, request), msg, now, source)
                else:
                    result = stream.slot(ids[0], ids[1], msg, now, source)  # (a bare header, a pick)
                header = not msg
                if requests.get(slot) is not request:
                    tag, cut = "", 0  # the request ended: a later line of its task is placed anew
            elif not line.startswith(prefix):
                break
            elif line.startswith("slot ", skip):
                body = line[skip:]
                match = ln.SLOT.match(body)
                if match is None or not mine(body):
                    break
                result = self._untagged(stream, match, wall)
                header = stream.timing is not None
                tag, slot, request, ids = _follow(stream, match)
                cut = len(tag)
            elif srv and line.startswith("srv ", skip):
                body = line[skip:]
                if body not in _QUIET_SRV:  # (the same few srv lines come back word for word)
                    if _srv_read(body) or not ln.SRV.match(body):
                        break
                    if len(_QUIET_SRV) > 4096:
                        _QUIET_SRV.clear()
                    _QUIET_SRV.add(body)
                header = False  # (untagged_srv: the clock is already at `wall`, `timing` is dropped)
                continue
            else:
                break
            if isinstance(result, list):
                events += result
            else:
                errors += 1
        else:
            index = len(lines)
        if not header:
            stream.timing = None
        return events, index - start - errors, errors, index

    #: A request read whole from its pick (`untagged_request`): the pattern's text, to build on.
    request_pattern = request_whole.REQUEST.pattern

    def untagged_request(
        self, found: re.Match[str], wall: float, owns: Callable[[int, int], bool]
    ) -> LlamaRequest | None:
        """`untagged_run` of lines (all under the caller's prefix) from a request's pick to its `stop
        processing`, where a pattern that starts as `request_pattern` with one space before `selected
        slot by` matched them (at most `WINDOW` lines): their record, else None (nothing changed): the
        lines are not all read so. `owns`: `mine_task`, asked of the task's first line."""
        stream = self._streams.get(None)
        if stream is None or stream.stamped:
            return None
        # (a line holds the prefix and more than `slot x: id`: no more lines than that fit the window)
        window = request_whole.WINDOW
        if found.end("late") - found.start() > window * (found.end("p") - found.start() + 10) and (
            request_whole.lines_of(found) > window
        ):
            return None
        clock = wall if self._last is None or wall >= self._last else self._last  # (as untagged_run's)
        record = request_whole.take(stream, found, clock, self.source, owns)
        if record is not None:
            self._last = clock
        return record

    @staticmethod
    def quiet_srv(body: str) -> bool:
        """Whether `untagged_run` reads a srv line (without envelope) of its run as one that only moves
        the clock (else it ends the run)."""
        if body in _QUIET_SRV:
            return True
        if _srv_read(body) or not ln.SRV.match(body):
            return False
        if len(_QUIET_SRV) > 4096:
            _QUIET_SRV.clear()
        _QUIET_SRV.add(body)
        return True

    def slot_task(self, slot: int) -> tuple[int, bool]:
        """A slot of the untagged stream: its newest task id (-1: none yet) and whether it is in progress.
        Who embeds several servers' untagged output (Ollama) tells their lines apart by it."""
        stream = self._streams.get(None)
        if stream is None:
            return -1, False
        finished = stream.finished.get(slot)
        newest = (finished, False) if finished is not None else (-1, False)
        request = stream.requests.get(slot)
        if request is not None and request.task >= newest[0]:
            return request.task, True
        return newest

    def parse(self, line: LogLine) -> ParseResult:
        """The events of one line; [] for a recognised line with none; None for a foreign line."""
        if line.origin is not None:  # a process the source named: its own stream (the general path)
            return self._parse_lines(line)
        return self._read(line.text, line)

    def parse_block(self, texts: list[str]) -> BlockResult:
        """`parse` over many lines of a plain file (no transport time), without a LogLine per line."""
        # A -lv 4 log is nearly all plain slot/srv lines, half of them quiet: their only effect is to
        # move the clock (progress, sampler, graph and prompt-cache lines, each a line of its slot's
        # request in progress or of no request). This is the replay's inner loop: `_plain` and
        # `Stream.slot` written out, quiet lines applied in place; a line it cannot prove takes the
        # general path as in parse().
        #
        # The clock of quiet lines is kept as text: `last` is the stamp of the last plain line applied,
        # and a stamp of the same width sorts as its number does, so `stamp >= last` is `_plain`'s
        # in-order check without the arithmetic. What quiet lines do to the stream and to `_last` is
        # done once, before any other line is applied (`_catch_up`).
        recognized = 0  # quiet lines and messages read without a result to tally
        results: list[ParseResult] = []  # the other lines' (their events in order)
        match = ln.PLAIN.match
        source = self.source
        # What every line would test, tested once on the whole block: no ANSI escape or `\r` in any
        # line (else each is tested), no srv line that the general path must read (else each is).
        joined = "".join(texts)
        marked, keys_printed = ln.SHAPES.marked, ln.KEYS_PRINTED
        clean = "\x1b" not in joined and "\r" not in joined
        srv_quiet = not _srv_read(joined)
        stream, ids, requests = self._stream()
        last = ""  # "": the stream's clock is not known as a stamp
        pending = False  # quiet lines since the last _catch_up
        for text in texts:
            found = match(text)
            result: ParseResult = _SLOW
            if found is None and not any(marker in text for marker in MARKERS):
                # what the general path does with a line it cannot read (the sampler's tab-indented
                # params, model info), without a LogLine: catch up, None, clock unknown as a stamp
                if pending:
                    pending = self._catch_up(stream, last)
                results.append(None)
                last = ""
                continue
            if (
                found is not None
                and stream is not None
                and (clean or ("\x1b" not in text and text[-1] != "\r"))
            ):
                stamp, slot_text, task_text, msg = found.groups()
                rel = None
                if not (len(stamp) == len(last) and stamp >= last):
                    if pending:
                        pending = self._catch_up(stream, last)
                    rel = self._rel(stamp)
                if rel is not None and rel < stream.last_rel:
                    pass  # the clock went back (a restart): the general path
                elif slot_text is None or task_text is None:  # srv (not _srv_read(text), inline)
                    if srv_quiet or not _srv_read(text):
                        last, pending = stamp, True
                        recognized += 1
                        continue
                else:
                    # Stream.slot's checks written out: quiet, a message its request reads, or other.
                    # (`msg` comes without its leading whitespace, as strip() takes it: its first words
                    # are the stripped message's, and a trailing space can only make a `new ` that no
                    # _update branch reads. Trailing whitespace goes before a method reads it.)
                    slot, task = ids.get(slot_text), ids.get(task_text)
                    where = None
                    if slot is not None and task is not None and msg:
                        if task < 0:  # startup, idle-slot and sampler lines of no request; a pick
                            if not msg.startswith("selected slot by "):
                                last, pending = stamp, True
                                recognized += 1
                                continue
                        elif (request := requests.get(slot)) is not None and request.task == task:
                            prefix = msg[:4]  # a line of its request in progress: read or quiet
                            if prefix == "sele" and msg.startswith("selected slot by "):
                                pass  # a pick, oddly with a task: Stream.slot reads it
                            elif (
                                (prefix not in READ or (prefix == "tota" and not request.stopped))
                                and "memory_seq_rm" not in msg
                                and not marked(msg)  # (else it may be drift: the general path)
                            ):
                                # (a request reads `total time` only when `stop processing` came first)
                                last, pending = stamp, True
                                recognized += 1
                                continue
                            else:
                                where = slot, request
                    msg = msg.rstrip()
                    if where is None:  # ids first seen, a bare timing header, a pick, a new request...
                        # (`_stamped` need not catch up first: this line's time is past the quiet ones')
                        if rel is None:
                            rel = self._rel(stamp)
                        now = self._stamped(stream, rel)
                        stream.timing = None
                        last, pending = stamp, False
                        result = stream.slot(slot_text, task_text, msg, now, source)
                    else:
                        limit = keys_printed.get(prefix)
                        more = limit is not None and msg.count(" = ") > limit
                        keyed = ln.unknown_keys(msg) if more else None
                        ended = None if keyed and keyed[1] else stream.update(where, msg)
                        # (None: none it reads, or a key of no build: the general path tells it)
                        if ended is not None:
                            last, pending = stamp, True  # its clock is a quiet line's, unless it ends
                            if ended is False:
                                recognized += 1
                                continue
                            if ended is True:  # ... the request: it is emitted at this line's time
                                pending = self._catch_up(stream, last)
                                assert self._last is not None
                                result = stream.finish(where, self._last, source)
                            else:
                                result = ended
            if result is _SLOW:
                if pending:
                    pending = self._catch_up(stream, last)
                result = self._parse_lines(LogLine(source, text, None))
                stream, ids, requests = self._stream()
                last = ""
            results.append(result)
        if pending:
            self._catch_up(stream, last)
        events, others, errors = tally(results)
        return BlockResult(events, recognized + others, errors)

    def _stream(self) -> tuple[Stream | None, dict[str, int], dict[int, Request]]:
        """The plain stream (None until it is anchored), its id cache and its requests in progress."""
        # (The general path may replace them: a restart resets the stream, so parse_block asks again.)
        stream = self._streams.get(None)
        if stream is None or stream.anchor is None:
            return None, {}, {}
        return stream, stream.ids, stream.requests

    def _catch_up(self, stream: Stream | None, stamp: str) -> bool:
        """What `_stamped` and `_plain` did for each quiet line up to the one stamped `stamp`, at once.

        Their times are round(anchor + rel) for non-decreasing rel, so `_last` after all of them is
        its value after the last one: max(_last, round(anchor + rel)). Returns False (none pending).
        """
        assert stream is not None
        self._stamped(stream, self._rel(stamp))
        stream.timing = None
        return False

    def untagged_srv(self, body: str, wall: float | None) -> ParseResult:
        """`parse` of a srv line without envelope (as `untagged_slot`) that only moves the clock, at
        transport time `wall`; None: any other line (`parse` reads it)."""
        stream = self._streams.get(None)
        if stream is None or _srv_read(body) or "\x1b" in body or body[-1:] == "\r" or not ln.SRV.match(body):
            return None
        # (_parse_lines for such a line: one envelope, no port or relative time, never a restart or a
        # 2024 line; _time, then Stream.read: the timing header is forgotten, _srv reads nothing)
        last = self._last if self._last is not None else self._settings.start
        now = wall if wall is not None and not stream.stamped else last
        if self._last is not None:
            now = max(now, self._last)
        self._last = now
        stream.timing = None
        return []

    def _rel(self, stamp: str) -> float:
        """Seconds since the process started, from a plain stamp `M.SS.mmm.uuu` (ASCII digits)."""
        head = stamp[:-7]
        if head != self._head:  # `M.SS.` changes about once a second: int() only then
            self._head, self._seconds = head, int(head[:-4]) * 60 + int(head[-3:-1])
        return self._seconds + ln.MILLIS[stamp[-7:-4]] + ln.MICROS[stamp[-3:]]  # as _relative adds them

    def _read(self, text: str, line: LogLine | None) -> ParseResult:
        """parse() of a line's text; `line` (made here when None) only for the general path."""
        match = ln.PLAIN.match(text)
        if match is not None and "\x1b" not in text and text[-1] != "\r":
            result = self._plain(text, match)
            if result is not _SLOW:
                return result
        return self._parse_lines(line or LogLine(self.source, text, None))

    def _plain(self, text: str, match: re.Match[str]) -> ParseResult:
        """What `_parse_one` does with a plain slot or srv line (the bulk of a `-lv 4` log), else _SLOW."""
        # Without an Envelope and with one regex. Any line it cannot prove takes that path unchanged
        # (a first line, a restart, a start line, a rescued prompt) goes the general way, and nothing
        # is changed before that is decided.
        stamp, slot, task, msg = match.groups()
        stream = self._streams.get(None)
        if stream is None or stream.anchor is None:
            return _SLOW
        rel = self._rel(stamp)
        if rel < stream.last_rel:
            return _SLOW
        if slot is not None:  # never a RESTART line: its first word has no colon
            now = self._stamped(stream, rel)
            stream.timing = None
            return stream.slot(slot, task, msg.strip(), now, self.source)
        if _srv_read(text):
            return _SLOW
        self._stamped(stream, rel)
        stream.timing = None
        return []

    def _parse_lines(self, line: LogLine) -> ParseResult:
        """Any line: unwrap its envelopes (jsonl may hold several messages) and read each."""
        if not any(marker in line.text for marker in MARKERS):
            return None
        envelopes = ln.unwrap(line.text, self._clock, line.origin)
        if envelopes is None:
            return None
        result: ParseResult = None
        for env in envelopes:
            one = self._parse_one(env, line.time)
            if isinstance(one, list) and isinstance(result, list):
                result.extend(one)
            elif one is not None and not isinstance(result, ParseError):
                result = one
        return result

    def flush(self) -> list[Event]:
        """End of input: requests still in progress were cut off, so they are dropped; those released
        without timings are records."""
        events: list[Event] = []
        for key, stream in self._streams.items():
            ended = stream.drop_in_flight(self._last, self.source)
            if isinstance(key, str):  # (a process's stream: see _parse_one)
                for event in ended:
                    if type(event) is LlamaRequest:
                        event.server = key
            events += ended
        self._legacy.clear()
        return events

    def _parse_one(self, env: ln.Envelope, transport: float | None) -> ParseResult:
        """One message: classify it, place it in time, hand it to its stream."""
        body = env.body
        key = _key_of(env)
        stream = self._streams.get(key)
        if stream is None:
            stream = self._new_stream(key)
        wall = transport if transport is not None else env.wall
        old = lg.read(body) if body.lstrip()[:1] in _LEGACY_START else None
        if wall is None and old is not None:
            wall = old.wall
        events: list[Event] = []
        if env.rel is not None and stream.anchor is not None and env.rel < stream.last_rel:
            events += self._restart(stream, env, wall)  # the clock went backwards: a new process
        is_restart = ln.RESTART.match(body) is not None
        if is_restart and stream.active:
            events += self._restart(stream, env, wall)
        now = self._time(stream, env, wall)
        life = self._life
        if is_restart and (not life.served or life.failing or any(type(e) is ServerRestart for e in events)):
            life.restart()  # (a new run; `listening on` after `model loaded` is the same one)
        lived = life.line(body, now)
        if lived is not None:
            return events + lived
        if is_restart:
            if not stream.announced:
                stream.announced = True
                events.append(ServerRestart(self.source, now, "llamacpp", _server(env, key)))
            if env.process is not None:
                events += self._listens(body, str(key), now)
            return events
        if env.process is not None and _EXIT in body:  # (a named process's own: see ServerStopped)
            events.append(ServerStopped(self.source, now, str(key)))
            self._listening = {at: who for at, who in self._listening.items() if who != str(key)}
        try:
            result = stream.read(body, now, self.source)
            if result is None:
                result = self._read_legacy(key, old, body, now)
        except ln.GarbledError as exc:
            return ParseError(f"llamacpp: {exc}")
        if result is None or isinstance(result, ParseError):
            return events or result
        if env.process is not None:
            for event in result:
                if type(event) is LlamaRequest:
                    event.server = key  # (made just now by this stream: not yet handed on)
        return events + result

    def _listens(self, body: str, server: str, now: float) -> list[Event]:
        """A named process's `listening on <address>`: where another process of the source listened on
        that address and never said it stopped, that one is gone (killed, crashed: no two live servers
        listen on one address), and this one replaces it: its stop and this one's start again (the
        windows forget the one replaced, as on a stop it said)."""
        found = _LISTENING.search(body)
        if found is None:
            return []
        listening = self._listening
        before = listening.pop(found[1], None)
        listening[found[1]] = server
        while len(listening) > MAX_STREAMS:
            del listening[next(iter(listening))]
        if before is None or before == server:
            return []
        return [ServerStopped(self.source, now, before), ServerRestart(self.source, now, "llamacpp", server)]

    def _new_stream(self, key: Key) -> Stream:
        """A stream for a process or port first seen (the oldest goes beyond MAX_STREAMS: a journal's
        processes come and go, a restarted unit's under a new pid)."""
        streams = self._streams
        while len(streams) >= MAX_STREAMS:
            oldest = next(iter(streams))
            del streams[oldest]
            self._legacy.pop(oldest, None)
        stream = streams[key] = Stream(drift=self._drift)
        return stream

    def _read_legacy(self, port: Key, line: lg.Line | None, body: str, now: float) -> ParseResult:
        """A 2024 server's line (see legacy): its record, [] for another of its lines, else None."""
        legacy = self._legacy.get(port)
        if legacy is None:
            legacy = self._legacy[port] = lg.Legacy()
        if line is not None:
            return list(legacy.logged(line, now, self.source))
        early = legacy.early(body, now, self.source)
        return None if early is None else list(early)

    def _restart(self, stream: Stream, env: ln.Envelope, wall: float | None) -> list[Event]:
        """Forget the old process's slots, its requests released without timings first made records (no
        timings will come for them now, as at the end of input); announce the new run unless its own
        start line did."""
        key = _key_of(env)
        self._legacy.pop(key, None)
        ended = stream.drop_in_flight(self._last, self.source)
        if isinstance(key, str):  # (a process's stream: see _parse_one)
            for event in ended:
                if type(event) is LlamaRequest:
                    event.server = key
        stream.reset()
        now = self._time(stream, env, wall)
        stream.announced = True
        return [*ended, ServerRestart(self.source, now, "llamacpp", _server(env, key))]

    def _time(self, stream: Stream, env: ln.Envelope, wall: float | None) -> float:
        """Event time of a message (rules in the module docstring), never before the last one."""
        last = self._last if self._last is not None else self._settings.start
        if env.rel is not None:
            if stream.anchor is None:
                if self._runs == 0:
                    # A transport time says when this line was written (docker, journald, or the live
                    # daemon's read time): the server started `rel` before it. Else the fixed anchor.
                    stream.anchor = self._settings.start if wall is None else wall - env.rel
                else:
                    stream.anchor = max(last, wall - env.rel) if wall is not None else last
                self._runs += 1
            return self._stamped(stream, env.rel)
        now = wall if wall is not None and not stream.stamped else last
        if self._last is not None:
            now = max(now, self._last)
        self._last = now
        return now

    def _stamped(self, stream: Stream, rel: float) -> float:
        """Event time of a stamped message of an anchored run, never before the last one."""
        stream.last_rel = rel
        stream.stamped = True
        assert stream.anchor is not None
        now = _round_us(stream.anchor + rel)  # µs, as printed: equal inputs, equal times
        last = self._last
        if last is not None and last > now:
            now = last
        self._last = now
        return now


def _key(saved: object) -> Key:
    """A stream's key as a snapshot saved it (JSON: a port number, a process name, or null)."""
    return saved if saved is None or isinstance(saved, str) else int(saved)  # type: ignore[call-overload]


def _server(env: ln.Envelope, key: Key) -> str | None:
    """The server a restart names: the process a transport named (journald's `name[pid]`, a compose
    service), as its records do; None for a plain log's (or a router's port: one process)."""
    return None if env.process is None else str(key)


def _key_of(env: ln.Envelope) -> Key:
    """The stream key of a message (see `_parse_one`)."""
    if env.process is None:
        return env.port
    return env.process if env.port is None else f"{env.process} [{env.port}]"


def _follow(stream: Stream, match: re.Match[str]) -> tuple[str, int, Request, tuple[str, str]]:
    """`untagged_run`'s task to follow after a slot line (its SLOT match): the line's tag, slot,
    request and id texts while its task is in progress on the slot (as `slot_task` tells), else ""."""
    slot_text, task_text = match[1], match[2]
    if slot_text.isdecimal() and task_text.isdecimal():
        slot, task = int(slot_text), int(task_text)
        request = stream.requests.get(slot)
        if request is not None and request.task == task and task >= stream.finished.get(slot, -1):
            head = match.string[match.start() : match.start(3)]
            return head[head.find(": id") + 1 :], slot, request, (slot_text, task_text)
    return "", -1, _NO_REQUEST, ("", "")


def _known_func(func: str) -> bool:
    """Whether a slot line's head before its tag is `slot <func>:` (remembered in `_FUNCS` when it is)."""
    if not _FUNC.fullmatch(func):
        return False
    if len(_FUNCS) > 4096:
        _FUNCS.clear()
    _FUNCS.add(func)
    return True


def _srv_read(text: str) -> bool:
    """Whether a plain srv line may be read (maybe a start line; or the prompt cache's rescue, which
    Stream._srv reads): the general path takes it. Every other srv line only moves the clock."""
    return "initializing" in text or "listening on " in text or "- found" in text or life.worth_reading(text)


def make_parser(source: str, settings: ParserSettings, options: Any) -> LlamacppParser:
    """The engine's parser of one source (kvwatch.engines.base.ParserFactory)."""
    return LlamacppParser(source, settings)
