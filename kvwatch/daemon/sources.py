"""What the daemon reads from: the Source shape, one factory per source type, and parsers for live lines.

A source is anything with `name`, `poll() -> list[LogLine]` (one non-blocking step that never
raises; trouble goes to `.error`) and `position()` (a JSON object to save once the lines returned
so far are processed). Optional: `wait(timeout)` (sleep until there may be data), `done` (finite
input ended), `close()`, `counters` (FileCounters-like ints) and `bytes_behind`. New source types
plug in through `FACTORIES`: a function of (SourceConfig, saved position) returning a source.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any, Protocol

from kvwatch.engines import FALLBACK, make_parser, markers_of
from kvwatch.engines.detect import Detector
from kvwatch.model import Event, LogLine
from kvwatch.parsers.base import Draining, ParseError, Parser, ParseResult, ParserSettings, Resumable
from kvwatch.sources.file import FileSource
from kvwatch.sources.settings import FileSettings, SourceConfig
from kvwatch.sources.stdin import StdinSource

#: An `auto` source whose lines leave the detection rule undecided (kvwatch.engines.detect) decides on
#: what it holds once no line came for this long (seconds): a quiet log must not wait for its head.
QUIET = 10.0


class Source(Protocol):
    """The shape the daemon needs; FileSource, StdinSource, docker and journald sources have it."""

    name: str
    error: str | None

    def poll(self) -> list[LogLine]:
        """The lines available now."""
        ...

    def position(self) -> Any:
        """What to save once the lines polled so far are processed."""
        ...


SourceFactory = Callable[[SourceConfig, Mapping[str, Any] | None], Source]


class SourceUnavailableError(RuntimeError):
    """A source type this build cannot open (its module is missing)."""


def _file(config: SourceConfig, saved: Mapping[str, Any] | None) -> Source:
    """A `file` source."""
    assert isinstance(config.settings, FileSettings)
    settings = config.settings
    markers = markers_of(config.engine)
    return FileSource(
        config.name,
        settings.path,
        start_at=settings.start_at,
        saved=saved,
        markers=markers,
        newest_only=settings.follow == "newest",
    )


def _stdin(config: SourceConfig, saved: Mapping[str, Any] | None) -> Source:
    """The `stdin` source (positions do not apply)."""
    return StdinSource(config.name, markers=markers_of(config.engine))


def _plugin(module: str, cls: str) -> SourceFactory:
    """A factory importing `kvwatch.sources.<module>` on first use (docker, journald)."""

    def make(config: SourceConfig, saved: Mapping[str, Any] | None) -> Source:
        try:
            found = importlib.import_module(f"kvwatch.sources.{module}")
            source_class = getattr(found, cls)
        except (ImportError, AttributeError) as exc:
            raise SourceUnavailableError(f"source type {config.type!r} is not available: {exc}") from None
        made: Source = source_class.from_config(config, saved, markers_of(config.engine))
        return made

    return make


#: The factory per `[[source]].type`. Docker and journald sources provide a classmethod
#: `from_config(config, saved)`; until their modules exist, opening one reports the source down.
FACTORIES: dict[str, SourceFactory] = {
    "file": _file,
    "stdin": _stdin,
    "docker": _plugin("docker", "DockerSource"),
    "journald": _plugin("journald", "JournaldSource"),
    "sql": _plugin("sql", "SqlSource"),
}


def open_source(config: SourceConfig, saved: Mapping[str, Any] | None) -> Source:
    """Open the source `config` describes, resuming from `saved`."""
    return FACTORIES[config.type](config, saved)


def parser_settings(config: SourceConfig, now: float | None = None) -> ParserSettings:
    """Live settings: this year, the source's zone, relative timestamps anchored at `now`."""
    now = time.time() if now is None else now
    year = datetime.fromtimestamp(now, timezone.utc).year
    return ParserSettings(year=config.year, now_year=year, tz=config.tz or "UTC", start=now)


def live_parser(config: SourceConfig, settings: ParserSettings) -> Parser:
    """The parser of a live source; `auto` decides on the first lines (see AutoParser)."""
    if config.engine == "auto":
        return AutoParser(config.name, settings, config.options)
    return make_parser(config.engine, config.name, settings, config.options.get(config.engine))


def parser_state(parser: Parser) -> dict[str, Any] | None:
    """The parser's `snapshot()` (JSON, naming its `engine`), saved with the position of the lines it
    read, so that a restart finishes the records in progress; None for a parser that keeps none."""
    state = parser.snapshot() if isinstance(parser, Resumable) else None
    return state if isinstance(state, dict) else None


def drained(parser: object) -> list[Event]:
    """What `parser` holds back only to hand it on in bulk (sums), handed on now: none where it holds
    nothing of the kind; an auto parser still undecided decides now if its log fell quiet."""
    if isinstance(parser, AutoParser):
        return parser.drain()
    return parser.drain() if isinstance(parser, Draining) else []


class AutoParser:
    """Parses a source's lines with the engine the detection rule (kvwatch.engines.detect, which replay
    follows on the same lines) chooses. Until the rule decides, the first line the sniffs name an
    engine for (a carried one: llama.cpp, which Ollama embeds; LMCache, which vLLM and SGLang carry)
    chooses that engine `provisionally`, so a llama-server's log has its series at once, not after the
    rule's head is full; lines that name no engine are held, and decided on at the end of input or
    once the log fell quiet (QUIET seconds without a line; vLLM when unsure), provisionally too.

    A provisional choice's lines go on to the rule (and are kept, the rule's head at most) until it
    decides. Should it choose another engine (a carrier's line after its layer's first lines), `again`
    names it: the daemon drops what the first choice made of the source and `redo()` parses every
    line read again, so the source ends as replay of the file reads it.

    While it holds lines (`holding`), the daemon does not save the source's position: a crash then
    reads them again instead of losing them. Held lines count as neither recognised nor errors until
    the engine is chosen; `settle()` then tells what they came to, so that the source's counts are
    those of the chosen parser from the first line, as replay's (which sniffs the file's head first).
    """

    def __init__(
        self,
        source: str,
        settings: ParserSettings,
        options: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Start undecided; `options`: engine name -> its options (the chosen one's reach its parser);
        `clock`: seconds, to tell a quiet log."""
        self.source = source
        self.settings = settings
        self.options = options or {}
        self.clock = clock
        self.inner: Parser | None = None
        self.engine: str | None = None  # (the chosen one)
        self.held: list[LogLine] = []
        self.detector = Detector()
        self._last = clock()
        self.provisional = False
        self.again: str | None = None
        self.ended = False
        self._seen: list[LogLine] = []  # (while provisional: every line read)
        self._tally = (0, 0)  # (recognised lines and errors among them, as counted)
        self._unsettled = (0, 0)  # recognised lines and parse errors among the held, not yet counted
        self.markers: tuple[str, ...] = ()  # the chosen parser's; none while undecided (every line held)

    @property
    def holding(self) -> bool:
        """Whether lines are held, not yet parsed, or may be parsed again (provisional): the daemon
        saves no position meanwhile."""
        return bool(self.held) or self.provisional

    def parse(self, line: LogLine) -> ParseResult:
        """Parse with the chosen parser; until chosen, hold the line (None: not recognised yet)."""
        if self.inner is not None:
            result = self.inner.parse(line)
            if self.provisional:
                self._follow(line, result)
            return result
        self.held.append(line)
        self._last = self.clock()
        if self.detector.feed(line.text):
            return self._decide(self.detector.engine or FALLBACK)
        if self.detector.found is None:
            return None
        # (a carried engine named before the rule decides: parse with it meanwhile, see the docstring)
        return self._provisionally(self.detector.found)

    def flush(self) -> list[Event]:
        """End of input: decide on what is held (vLLM when unsure) and parse it."""
        self.ended = True
        events = self._decide_held() if self.inner is None else []
        if self.provisional and self.again is None:
            self._final(self.detector.end())
        assert self.inner is not None
        return [*events, *self.inner.flush()]

    def drain(self) -> list[Event]:
        """The chosen parser's sums held back (see `drained`); undecided, a log quiet for QUIET seconds
        decides on what it holds, as replay does on the file as it stands then."""
        if self.inner is None:
            if not self.held or self.clock() - self._last < QUIET:
                return []
            events = self._decide_held()
        else:
            events = []
        assert self.inner is not None
        return [*events, *(self.inner.drain() if isinstance(self.inner, Draining) else [])]

    def redo(self) -> list[Event]:
        """Choose `again` and parse every line read with it (the caller dropped what the first choice
        made of the source); settle() then tells how the counts change."""
        assert self.again is not None
        lines, was, before = self._seen, self._tally, self._unsettled
        self.provisional, self._seen = False, []
        self.held = lines
        events = self._decide(self.again)
        self.again = None
        recognized, errors = self._unsettled
        if events is not None:
            recognized += 1  # (no line returns them)
        self._unsettled = (before[0] + recognized - was[0], before[1] + errors - was[1])
        assert self.inner is not None
        return [*(events or []), *(self.inner.flush() if self.ended else [])]

    def _decide_held(self) -> list[Event]:
        """Decide on the lines held (no line returns their events: each recognised one is settle()'s);
        before the rule does (a quiet log), provisionally."""
        if not self.ended and not self.detector.decided:
            events = self._provisionally(self.detector.now() or FALLBACK)
        else:
            events = self._decide(self.detector.end() or FALLBACK)
        if events is not None:
            self._unsettled = (self._unsettled[0] + 1, self._unsettled[1])
        return events or []

    def _provisionally(self, engine: str) -> list[Event] | None:
        """Choose `engine` until the rule decides, and parse the held lines (`_decide`'s events); the
        lines go on to the rule, and are kept for `redo`, with what they came to counted in `_tally`."""
        self.provisional, self._seen = True, list(self.held)
        events = self._decide(engine)
        self.markers = ()  # (every line goes on to the rule)
        self._tally = (self._unsettled[0] + (events is not None), self._unsettled[1])
        return events

    def _follow(self, line: LogLine, result: ParseResult) -> None:
        """A line parsed by a provisional choice: kept, counted, and shown to the rule."""
        self._seen.append(line)
        recognized, errors = self._tally
        self._tally = (recognized + isinstance(result, list), errors + isinstance(result, ParseError))
        if self.again is None and self.detector.feed(line.text):
            self._final(self.detector.engine)

    def _final(self, engine: str | None) -> None:
        """The rule decided after a provisional choice: confirm it, or name the engine to choose again."""
        assert self.inner is not None
        if (engine or FALLBACK) == self.engine:
            self.provisional, self._seen = False, []
            self.markers = self.inner.markers
        else:
            self.again = engine or FALLBACK

    def settle(self) -> tuple[int, int, int]:
        """What the held lines parsed since the last call add to the counts: (0 lines, recognised,
        errors); the line that returned their events was counted recognised already."""
        (recognized, errors), self._unsettled = self._unsettled, (0, 0)
        return 0, recognized, errors

    def snapshot(self) -> dict[str, Any] | None:
        """The chosen parser's state (see `parser_state`); None while undecided."""
        return parser_state(self.inner) if self.inner is not None else None

    def restore(self, state: Mapping[str, Any]) -> None:
        """Choose the engine the state was saved by, and go on from it."""
        if self.inner is None:
            self._decide(str(state["engine"]))
        if isinstance(self.inner, Resumable):
            self.inner.restore(state)

    def _decide(self, engine: str) -> list[Event] | None:
        """Choose the engine and parse the held lines: their events (None when no line was recognised:
        then the calling line counts as none, and settle() tells the rest)."""
        self.engine = engine
        self.inner = make_parser(engine, self.source, self.settings, self.options.get(engine))
        self.markers = self.inner.markers
        events: list[Event] = []
        recognized = errors = 0
        for held in self.held:
            result = self.inner.parse(held)
            if isinstance(result, list):
                events.extend(result)
                recognized += 1
            elif isinstance(result, ParseError):
                errors += 1
        self.held = []
        if recognized == 0:
            self._unsettled = (0, errors)
            return None
        self._unsettled = (recognized - 1, errors)  # (one is counted for the line that returns them)
        return events
