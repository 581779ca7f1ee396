"""llama-server output -> one `LlamaRequest` per request, and `ServerRestart` at each server start.

Lines of one request are joined per slot: `task -1` lines (the slot selection, and the host prompt
cache's `found better prompt` that follows and overrides it) wait for that slot's next task; lines
with a task id belong to the slot's request in progress. Slots run concurrently: state is per slot.
The record is emitted at `stop processing` (after the timing lines), at that line's time; a request
cut off before it is dropped, never guessed. At default verbosity (>= b9305, no `new prompt` and
`memory_seq_rm`), prompt = stop n_tokens - n_gen + 1 and reused = prompt - prompt-eval tokens
(`derived=True`; exact when the reply stopped by length, else +-1).

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

Restarts (`initializing slots`, `initializing, n_slots =`, `llama_server: initializing`, `listening
on`, or relative time going backwards) reset every slot and emit one `ServerRestart` per run. Router
mode (`[port] ` prefix): each child process is a stream of its own, with its own slots and clock.
"""

from __future__ import annotations

from kvwatch.model import Event, LogLine, ServerRestart
from kvwatch.parsers import llamacpp_lines as ln
from kvwatch.parsers.base import ParseError, ParseResult, ParserSettings
from kvwatch.parsers.clock import YearlessClock
from kvwatch.parsers.llamacpp_slots import Stream

#: Every line this parser reads contains one of these (the legacy timing block's continuation lines
#: carry no tag, hence the `eval time`/`total time` markers).
MARKERS = ("slot ", "srv ", "eval time", "total time", "initializing", "listening", '{"type"')


def looks_like_llamacpp(sample: str) -> bool:
    """True when a sample of a file (its first ~64 KiB) reads like llama-server output."""
    clock = YearlessClock(2026, "UTC")
    hits = 0
    for text in sample.splitlines()[:2000]:
        if not any(marker in text for marker in MARKERS):
            continue
        for env in ln.unwrap(text, clock) or ():
            body = env.body
            if ln.SLOT.match(body) or ln.SRV.match(body):
                hits += 1
    return hits >= 2


class LlamacppParser:
    """Joins llama-server lines into request records, per slot, per server process."""

    markers: tuple[str, ...] = MARKERS

    def __init__(self, source: str, settings: ParserSettings) -> None:
        self.source = source
        self._settings = settings
        self._clock = YearlessClock(settings.year or settings.now_year, settings.tz)
        self._streams: dict[int | None, Stream] = {}
        self._last: float | None = None  # time of the previous line of this source
        self._runs = 0  # runs anchored so far: the first one at settings.start

    def parse(self, line: LogLine) -> ParseResult:
        """The events of one line; [] for a recognised line with none; None for a foreign line."""
        if not any(marker in line.text for marker in MARKERS):
            return None
        envelopes = ln.unwrap(line.text, self._clock)
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
        """End of input: requests still in progress were cut off, so they are dropped."""
        for stream in self._streams.values():
            stream.drop_in_flight()
        return []

    def _parse_one(self, env: ln.Envelope, transport: float | None) -> ParseResult:
        """One message: classify it, place it in time, hand it to its stream."""
        body = env.body
        stream = self._streams.get(env.port)
        if stream is None:
            stream = self._streams[env.port] = Stream()
        wall = transport if transport is not None else env.wall
        events: list[Event] = []
        if env.rel is not None and stream.anchor is not None and env.rel < stream.last_rel:
            events += self._restart(stream, env, wall)  # the clock went backwards: a new process
        is_restart = ln.RESTART.match(body) is not None
        if is_restart and stream.active:
            events += self._restart(stream, env, wall)
        now = self._time(stream, env, wall)
        if is_restart:
            if not stream.announced:
                stream.announced = True
                events.append(ServerRestart(self.source, now, "llamacpp"))
            return events
        try:
            result = stream.read(body, now, self.source)
        except ln.GarbledError as exc:
            return ParseError(f"llamacpp: {exc}")
        if result is None or isinstance(result, ParseError):
            return events or result
        return events + result

    def _restart(self, stream: Stream, env: ln.Envelope, wall: float | None) -> list[Event]:
        """Forget the old process's slots; announce the new run unless its own start line did."""
        stream.reset()
        now = self._time(stream, env, wall)
        stream.announced = True
        return [ServerRestart(self.source, now, "llamacpp")]

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
            stream.last_rel = env.rel
            stream.stamped = True
            now = round(stream.anchor + env.rel, 6)  # µs, as printed: equal inputs, equal times
        elif wall is not None and not stream.stamped:
            now = wall
        else:
            now = last
        if self._last is not None:
            now = max(now, self._last)
        self._last = now
        return now
