"""vLLM's log, 0.4 to 0.33: stats lines, KV Transfer and SpecDecoding lines, startup facts.

A record is `[VLLM_LOGGING_PREFIX][(Name pid=N) ]LEVEL MM-DD HH:MM:SS [file:line] message`
(`file:line] ` without the bracket up to 0.7; a path instead of a basename under DEBUG). The header is
searched, not anchored, so any logging prefix and the process prefix pass. SpecDecoding and KV Transfer
lines carry no engine id: they belong to the `Engine NNN:` stats line logged just before them. Where
the startup lines say the engine runs on the CPU backend, V0 lines from 0.9.0 on are read in their CPU
column (see kvwatch.engines.vllm.stats).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from kvwatch.engines import layer_parsers
from kvwatch.engines.vllm import facts as vllm_facts
from kvwatch.engines.vllm.connectors import unread
from kvwatch.engines.vllm.events import VllmKvTransfer, VllmSpecDecoding
from kvwatch.engines.vllm.kv import KvPayloadError, read_kv_payload
from kvwatch.engines.vllm.lifecycle import MARKERS as LIFE_MARKERS
from kvwatch.engines.vllm.lifecycle import Lifecycle
from kvwatch.engines.vllm.simplecpu import read_blocks
from kvwatch.engines.vllm.stats import COMMON, SHAPES, common_stats, parse_stats, parse_v0_prefix
from kvwatch.model import EngineFact, Event, LogLine, OffloadFailure, ServerRestart
from kvwatch.parsers.base import BlockResult, ParseError, Parser, ParseResult, ParserSettings
from kvwatch.parsers.clock import LineClock, YearlessClock
from kvwatch.parsers.drift import Drift
from kvwatch.parsers.text import holds_any, segments, strip_ansi
from kvwatch.sources.framing import decode_whole, marker_pattern
from kvwatch.times import parse_rfc3339

if TYPE_CHECKING:
    from kvwatch.sources.framing import Entries, Malformed

_HEADER = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) "
    r"\[?[^\]\s]+:\d+\] "
)
# _HEADER at the very start, behind nothing or a process prefix (where it cannot also start), the stamp
# in one group: with no `\r` or ANSI escape in the line (not in a message either), it is one record
# that strip_ansi leaves alone and whose header _HEADER.search finds here. The fast path's domain.
_PLAIN = re.compile(
    r"(?:\(\w+ pid=\d+\) |)(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d) "
    r"\[?[^\]\s]+:\d+\] "
)
_KV_TAG = "KV Transfer metrics: "
# _PLAIN's header (which can only end at the first `]` after the stamp, whatever follows it), then a
# stats message of COMMON's shape to the end or the KV Transfer tag: the two commonest records in one
# match. Its groups: the stamp, then COMMON's nine (None for a KV line).
_PLAIN_COMMON = re.compile(rf"{_PLAIN.pattern}(?:{COMMON}\Z|{re.escape(_KV_TAG)})")
_PROCESS = re.compile(r"\((\w+) pid=\d+\)")
_ENGINE_PROC = re.compile(r"EngineCore_(?:DP)?(\d+)")
_SPEC = re.compile(r"Accepted: (\d+) tokens, Drafted: (\d+) tokens")
_V0_SPEC = re.compile(r"Number of accepted tokens: (\d+), Number of draft tokens: (\d+)")
_RESTART = ("vLLM API server version", "vLLM server version", "█  version ")
_JSON_TIME = re.compile(r"^(?:(\d{4})-)?(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)")
_RELEASE = re.compile(r"(\d+)\.(\d+)")
#: The first release whose V0 `_get_stats` swaps the columns on the CPU backend (vllm PR #18674).
CPU_COLUMN_FROM = (0, 9)
# A V0 usage line only the CPU backend's swapped columns print (read in 0.8.5's and 0.9.0's
# engine/llm_engine.py `_get_stats`, core/block_manager.py, core/block/cpu_gpu_block_allocator.py): on
# any other backend the CPU column is the swap space, whose blocks only swapped requests hold (swap_out
# allocates them, swap_in and abort free them; a prefix-cached free block counts as free), so it reads
# above 0.0% only beside `Swapped: N reqs` with N > 0. From 0.9.0 the CPU backend prints its own cache
# there, its GPU column the swap space it never has (0 blocks: 0.0%).
_CPU_COLUMNS = re.compile(r"Swapped: 0 reqs, .*GPU KV cache usage: 0\.0%, CPU KV cache usage: (?!0\.0%)\d")

#: The markers of the lines with figures (the others are startup and lifecycle lines).
_NUMBERS = ("throughput:", "Prefix cache hit rate", "KV Transfer", "SpecDecoding", "Speculative")

# vLLM 0.34 (kv_offload/cpu/gpu_worker.py and the offloading connector's scheduler side): a store job
# that failed drops its chunks (WARNING), a load job that failed leaves the request to recompute (WARNING),
# and a transfer's ERROR names its direction (`GPU->CPU` store, `CPU->GPU` load).
_STORE_JOB = re.compile(r"KV offload store job (\d+) failed; dropping (\d+) chunk")
_LOAD_JOB = re.compile(r"KV offload load job (\d+) failed; request (\S+) will not load")
_TRANSFER = re.compile(r"KV offload (GPU->CPU|CPU->GPU) transfer failed for job (\d+)")


def _offload_failure(message: str) -> tuple[str, str, int | None, bool] | None:
    """(kind, request, tokens, a load?) of a 0.34 offload failure line, else None."""
    if match := _LOAD_JOB.match(message):
        return "load_job_failed", match[2].rstrip("."), None, True
    if match := _TRANSFER.match(message):
        return "transfer_failed", "", None, match[1] == "CPU->GPU"
    if _STORE_JOB.match(message):
        return "store_job_failed", "", None, False
    return None


#: Every line that can yield an event contains one of these.
MARKERS = (
    "KV offload ",
    "throughput:",
    "Prefix cache hit rate",
    "KV Transfer metrics",
    "SpecDecoding metrics",
    "Speculative metrics",
    *vllm_facts.MARKERS,
    *LIFE_MARKERS,
    *SHAPES.markers,  # (a stats line reworded: told as format drift)
)


class VllmParser:
    """Per-source vLLM state: the engine of the last stats line, the year, the last event time."""

    markers: tuple[str, ...] = MARKERS

    def __init__(self, source: str, settings: ParserSettings, layers: list[Parser] | None = None) -> None:
        self.source = source
        # The cache layers' parsers (LMCache): a line holding one of their markers is theirs first.
        self._layers = layers or []
        for layer in self._layers:
            self.markers = self.markers + tuple(m for m in layer.markers if m not in self.markers)
        # One test for all of them: the longest text every layer marker holds (LMCache's: ` LMCache`).
        self._layer_hint = _common([m for layer in self._layers for m in layer.markers]) or None
        # The layers that hold sums back (`held`, `drain()`: kvwatch.engines.lmcache.sums).
        self._drainers: list[Any] = [layer for layer in self._layers if hasattr(layer, "drain")]
        # The layer that reads its commonest json-file entries from their bytes (`RAW_MARKER`,
        # `take_run`): with one layer only, which parse() would ask first about such a line.
        self._reader: Any = None
        if len(self._layers) == 1 and hasattr(self._layers[0], "take_run"):
            self._reader = self._layers[0]
        self._markers: re.Pattern[bytes] | None = None  # (its markers as one pattern, for _raw_line)
        self._clock = YearlessClock(settings.year or settings.now_year, settings.tz)
        self._tz = settings.tz
        # The two commonest records (a stats line, a KV Transfer line) read in one match (_PLAIN_COMMON)
        # and a flat KV payload read with a float() per value: about a fifth of a replay's CPU each.
        self._fast = settings.fast_paths
        self._engine = "0"
        self._last_time: float | None = None
        # The startup facts that decide which V0 column is the cache (see _backend)
        self._platform: str | None = None
        self._device: str | None = None
        self._version: str | None = None
        self._cpu_columns = False  # the stats lines themselves showed the CPU backend's columns
        self._v0_column = "GPU"
        # Whether the engine came up or died (engine_start_failed)
        self._life = Lifecycle(source)
        self._drift = Drift(source, "vllm", SHAPES)  # stats lines of shapes or labels no release printed

    def parse(self, line: LogLine) -> ParseResult:
        """Parse one physical line (possibly several `\\r`-separated records)."""
        hint = self._layer_hint
        if hint is None:
            return self._parse(line, None)
        if hint in line.text and "\r" not in line.text:
            for layer in self._layers:
                outcome = layer.parse(line)
                if outcome is not None:
                    return outcome
        result = self._parse(line, hint)
        if result and isinstance(result, list):
            # A layer's sums held back come first: their lines came before this one.
            for layer in self._drainers:
                if layer.held:
                    result = [*layer.drain(), *result]
        return result

    @property
    def raw_marker(self) -> str | None:
        """Its layer's marker whose json-file lines it reads from their bytes (parse_entries; None: none)."""
        return None if self._reader is None else self._reader.RAW_MARKER

    def parse_entries(self, entries: Entries) -> BlockResult:
        """parse() over the marker lines of a json-file read, in order, counted up: its layer takes the
        runs of its lines' bytes (`take_run`), the rest are parsed as decoded."""
        events: list[Event] = []
        recognized = errors = 0
        parse = self.parse
        for item in entries.items:
            if type(item) is bytes:  # (a run of lines whose first marker is its layer's)
                found, read, bad = self._reader.take_run(item, self._raw_line)
                events += found
                recognized += read
                errors += bad
                continue
            if type(item) is LogLine:
                result = parse(item)
            else:  # (Malformed: a line that is no docker entry)
                errors += 1
                continue
            if isinstance(result, list):
                recognized += 1
                events += result
            elif isinstance(result, ParseError):
                errors += 1
        return BlockResult(events, recognized, errors)

    def _raw_line(self, raw: bytes) -> ParseResult | Malformed:
        """parse() of a line of a run its layer does not read from the bytes, decoded as the framer would."""
        pattern = self._markers or marker_pattern(self.markers)
        assert pattern is not None  # (it has markers)
        self._markers = pattern
        line = decode_whole(self.source, raw, self._reader.RAW_MARKER.encode("ascii"), pattern)
        return self.parse(line) if isinstance(line, LogLine) else line

    def _parse(self, line: LogLine, hint: str | None) -> ParseResult:
        """parse() of a line that is no layer's."""
        text = line.text
        if self._fast and "\r" not in text and "\x1b" not in text:
            common = _PLAIN_COMMON.match(text)
            if common is not None:
                fast = self._common(common, line.time)
                if fast is not None:
                    return fast
        events: list[Event] = []
        recognised, error = False, None
        for piece in segments(line.text):
            outcome = self._layered(piece, line.time) if hint is not None and hint in piece else None
            if outcome is None:
                outcome = self._record(strip_ansi(piece), line.time)
            if isinstance(outcome, list):
                recognised = True
                events.extend(outcome)
            elif outcome is not None and error is None:
                error = outcome
        if recognised:
            return events
        return error

    def _common(self, match: re.Match[str], transport: float | None) -> list[Event] | None:
        """What _record makes of a line _PLAIN_COMMON matched, if a list of events; else None."""
        # In fewer steps (a one-record line, see _PLAIN). None sends the line the general way, which
        # finds the same again (the time resolves again there: the clock ends up as after once).
        groups = match.groups()
        stamp = groups[0]
        events: ParseResult
        if groups[1] is not None:  # COMMON's first group, the engine
            when = self._clock.resolve_stamp(stamp, transport)
            stats = None if when is None else common_stats(self.source, when, groups[1:])
            if stats is None:
                return None
            self._engine = stats.engine
            events = [stats] if self._life.served else [*self._life.serving(stats.time), stats]
        else:
            payload = match.string[match.end() :]
            # _message takes it for a stats line (no `R`, found at memchr's speed, is the common answer)
            if "R" in payload and "Running:" in payload:
                return None
            when = self._clock.resolve_stamp(stamp, transport)
            events = None if when is None else self._kv(payload, when)
            if not isinstance(events, list):
                return None
        self._last_time = when
        return events

    def _layered(self, piece: str, transport: float | None) -> ParseResult:
        """A record of a cache layer's (None: none of theirs)."""
        for layer in self._layers:
            outcome = layer.parse(LogLine(self.source, piece, transport))
            if outcome is not None:
                return outcome
        return None

    def flush(self) -> list[Event]:
        """vLLM holds nothing back; its layers may."""  # (their sums: flush() drains them)
        return [event for layer in self._layers for event in layer.flush()]

    def drain(self) -> list[Event]:
        """The sums its layers hold back, handed on now (the daemon asks before it saves a position)."""
        return [event for layer in self._drainers if layer.held for event in layer.drain()]

    def snapshot(self) -> dict[str, Any]:
        """The startup facts that decide how stats lines read, saved with a position (a restart resumes
        after the startup lines)."""
        return {
            "engine": "vllm",
            "platform": self._platform,
            "device": self._device,
            "version": self._version,
            "cpu_columns": self._cpu_columns,
            "served": self._life.served,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Go on from a `snapshot()`; KeyError, TypeError or ValueError when it is not one."""
        if state["engine"] != "vllm":
            raise ValueError(f"a state of engine {state['engine']!r}")
        platform, device, version = state["platform"], state["device"], state["version"]
        if not all(value is None or isinstance(value, str) for value in (platform, device, version)):
            raise TypeError("vllm parser state: platform, device and version are strings or null")
        self._platform, self._device, self._version = platform, device, version
        self._cpu_columns = state.get("cpu_columns") is True
        self._life.served = state.get("served") is True
        self._backend()

    def _backend(self) -> None:
        """The V0 column holding the engine's KV cache: CPU on the CPU backend from 0.9.0, else GPU."""
        # The platform line is vLLM's own verdict; device_config (`cpu` for neuron too) only without it;
        # without either, a usage line only the CPU backend's columns print (_CPU_COLUMNS).
        if self._platform is not None:
            cpu = self._platform == "cpu"
        else:
            cpu = self._device == "cpu" if self._device is not None else self._cpu_columns
        release = _RELEASE.match(self._version or "")
        # An unknown version is read as the last V0 releases (0.9.0-0.10.2) print.
        swapped = release is None or (int(release.group(1)), int(release.group(2))) >= CPU_COLUMN_FROM
        self._v0_column = "CPU" if cpu and swapped else "GPU"

    def _json(self, text: str, transport: float | None) -> tuple[float | None, str, str] | None:
        # 0.32+ can log JSON (`VLLM_LOGGING_CONFIG_PATH` / JSON formatter): {"asctime", "levelname",
        # "processName", "message", ...}. asctime is vLLM's year-less `%m-%d %H:%M:%S` unless reconfigured.
        try:
            obj = json.loads(text)
        except ValueError:
            return None
        message = obj.get("message") if isinstance(obj, dict) else None
        if not isinstance(message, str):
            return None
        stamp = str(obj.get("asctime") or obj.get("timestamp") or obj.get("time") or "")
        prefix = f"({obj.get('processName', '')} pid={obj.get('process', 0)})"
        found = _JSON_TIME.match(stamp)
        if found is None:
            return parse_rfc3339(stamp) or transport or self._last_time, prefix, message
        year, mo, day, hh, mm, ss = found.groups()
        if year is not None:
            clock = YearlessClock(int(year), self._tz)
            return clock.resolve(int(mo), int(day), (int(hh), int(mm), int(ss)), None), prefix, message
        return self._clock.resolve(int(mo), int(day), (int(hh), int(mm), int(ss)), transport), prefix, message

    def _time(self, text: str, transport: float | None) -> tuple[float | None, str, str]:
        if text.startswith("{"):
            decoded = self._json(text, transport)
            if decoded is not None:
                return decoded
        match = _HEADER.search(text)
        if match is None:
            return (transport if transport is not None else self._last_time), text, text
        mo, day, hh, mm, ss = (int(g) for g in match.groups())
        when = self._clock.resolve(mo, day, (hh, mm, ss), transport)
        return when, text[: match.start()], text[match.end() :]

    def _record(self, text: str, transport: float | None) -> ParseResult:
        if not holds_any(text, MARKERS):
            return None
        when, prefix, message = self._time(text, transport)
        if when is None:
            if message is text and not text.startswith("{") and not any(m in text for m in _NUMBERS):
                return None  # (no header, before any record, no figures: a stray line, e.g. a warning)
            return ParseError("vllm: no usable time (bad date, no transport time, no earlier event)")
        events = self._message(message, prefix, when)
        hint = self._layer_hint
        if events is None and message is not text and (hint is None or hint not in text):
            # a vLLM record (its header or JSON found) of no known shape; a layer's line is the layer's
            events = self._drift.line(when, text, message)
        if events is not None and not isinstance(events, ParseError):
            self._last_time = when
        return events

    def _message(self, message: str, prefix: str, when: float) -> ParseResult:
        if "throughput:" in message and "Running:" in message:
            unknown: list[str] = []
            stats = parse_stats(self.source, when, message, self._v0_column, unknown)
            if stats is None or isinstance(stats, ParseError):
                return stats
            if stats.v0 and self._v0_column == "GPU" and self._cpu_backend_columns(message):
                stats = parse_stats(self.source, when, message, self._v0_column)
                assert stats is not None and not isinstance(stats, ParseError)  # (read above)
            self._engine = stats.engine
            events: list[Event] = [stats] if self._life.served else [*self._life.serving(when), stats]
            return events + self._drift.keys(when, "stats", unknown, frozenset()) if unknown else events
        if message.startswith("Prefix cache hit rate: GPU"):
            v0 = parse_v0_prefix(self.source, when, message, self._v0_column)
            return None if v0 is None else (v0 if isinstance(v0, ParseError) else [v0])
        if message.startswith("KV Transfer metrics: "):
            return self._kv(message[len("KV Transfer metrics: ") :], when)
        if message.startswith(("SpecDecoding metrics: ", "Speculative metrics: ")):
            return self._spec(message, when)
        if message.startswith("KV offload "):
            failed = _offload_failure(message)
            if failed is not None:
                kind, request, tokens, retrieve = failed
                return [OffloadFailure(self.source, when, self._engine, kind, request, tokens, retrieve)]
        facts = self._facts(message, prefix, when)
        life = self._life.line(message, when)
        if life is None:
            return facts
        return [*facts, *life] if isinstance(facts, list) else life

    def _kv(self, payload: str, when: float) -> ParseResult:
        keys: list[tuple[str, str]] = []
        try:
            values, store, load, lookups = read_kv_payload(payload, fast=self._fast, keys=keys)
        except KvPayloadError as err:
            return ParseError(f"vllm KV Transfer: {err}")
        blocks = read_blocks(values) if "simple_kv_offload" in payload else None
        if blocks is None:
            events: list[Event] = [VllmKvTransfer(self.source, when, self._engine, store, load, lookups)]
        else:
            events = [VllmKvTransfer(self.source, when, self._engine, store, load, lookups, *blocks)]
        for part in unread(values, keys):
            # a known connector's new key is drift; a connector kvwatch does not know is only counted
            kind = f"KV Transfer {part.connector}"
            events += self._drift.keys(when, kind, part.keys, frozenset(), told=part.known)
        return events

    def _spec(self, message: str, when: float) -> ParseResult:
        match = _SPEC.search(message) or _V0_SPEC.search(message)
        if match is None:
            return ParseError("vllm SpecDecoding: accepted/drafted counts unreadable")
        accepted, drafted = int(match.group(1)), int(match.group(2))
        return [VllmSpecDecoding(self.source, when, self._engine, accepted, drafted)]

    def _cpu_backend_columns(self, message: str) -> bool:
        """Whether a V0 usage line shows the CPU backend's swapped columns when no startup line said where
        the engine runs (then the cache is read in the CPU column from this line on)."""
        if self._platform is not None or self._device is not None or not _CPU_COLUMNS.search(message):
            return False
        self._cpu_columns = True
        self._backend()
        return self._v0_column == "CPU"

    def _facts(self, message: str, prefix: str, when: float) -> ParseResult:
        facts = vllm_facts.facts_of(message)
        if not facts:
            return None
        process = _PROCESS.search(prefix)
        engine_match = _ENGINE_PROC.search(process.group(1)) if process else None
        engine = str(int(engine_match.group(1))) if engine_match else "0"
        events: list[Event] = []
        if any(needle in message for needle in _RESTART):
            self._engine = "0"
            self._life.restart()
            events.append(ServerRestart(self.source, when, "vllm"))
        events.extend(EngineFact(self.source, when, key, value, engine) for key, value in facts)
        for key, value in facts:
            self._life.fact(key, value)
        keys = {key: value for key, value in facts if key in ("platform", "device", "version")}
        if keys:
            self._platform = keys.get("platform", self._platform)
            self._device = keys.get("device", self._device)
            self._version = keys.get("version", self._version)
            self._backend()
        return events


def _common(markers: list[str]) -> str:
    """The longest text that every marker contains ("" when none or nothing is shared)."""
    if not markers:
        return ""
    first = markers[0]
    for size in range(len(first), 0, -1):
        for start in range(len(first) - size + 1):
            piece = first[start : start + size]
            if all(piece in marker for marker in markers):
                return piece
    return ""


def looks_like(sample: str) -> bool:
    """Whether a file's first lines look like vLLM's log (for `--engine auto`)."""
    return _HEADER.search(sample) is not None and (
        "vllm" in sample.lower() or any(marker in sample for marker in MARKERS[:4])
    )


#: A header's `MM-DD HH:MM:SS` is read in this (leap) year: vLLM prints neither year nor zone.
CLOCK_YEAR = 2000
_HEADER_TIME = re.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")


def _read_header_time(m: re.Match[str]) -> float | None:
    month, day, hh, mm, ss = map(int, m.groups())
    try:
        return datetime(CLOCK_YEAR, month, day, hh, mm, ss, tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def _write_header_time(when: float) -> str:
    return datetime.fromtimestamp(when, tz=timezone.utc).strftime("%m-%d %H:%M:%S")


#: Every record's header (`\r`-joined records carry several), in UTC.
CLOCK = LineClock(_HEADER_TIME, _read_header_time, _write_header_time)


def make_parser(source: str, settings: ParserSettings, options: Any) -> Parser:
    """The engine's parser of one source (kvwatch.engines.base.ParserFactory), its layers' parsers in it."""
    return VllmParser(source, settings, layer_parsers("vllm", source, settings))
