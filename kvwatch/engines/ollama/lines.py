"""The shapes of Ollama's own log lines: journald's prefix, Go slog text records, gin's access line.

Sources (ollama/ollama): logutil/logutil.go (slog.NewTextHandler, AddSource, source = file basename,
level TRACE below DEBUG), server/routes.go (gin.Default(): gin's defaultLogFormatter), envconfig/config.go
(OLLAMA_DEBUG: LogLevel), llm/llama_server.go (`starting llama-server cmd=...`, >= 0.30).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from kvwatch.parsers.drift import Shapes, key_shape

#: journald / syslog: `Mon DD HH:MM:SS host ollama[PID]: ` (any program name: a renamed unit too).
#: (a pasted log may have its host and PID blanked: `Sep 11 00:03:06   ollama[]: `, ollama#18373)
JOURNAL = re.compile(r"([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) +(?:\S+ +)?([^\s:\[]+)\[(\d*)\]: ")
_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MONTHS = {m: i for i, m in enumerate(_MONTH_NAMES, 1)}
# slog's TextHandler: `time=<RFC 3339, ms> level=<LEVEL> source=<file.go:line> msg=<value> k=v ...`;
# a value is bare, or Go-quoted (strconv.Quote) when it holds a space, `=`, `"` or is empty.
SLOG = re.compile(r"time=(\S+) level=([A-Z]+(?:[+-]\d+)?) (?:source=(\S+) )?msg=")
# (a quoted value's runs of plain characters in one step each: `"(?:[^"\\]|\\.)*"` unrolled, the same
# strings; a runner's start line holds a long quoted command)
_PAIR = re.compile(r'([^\s=]+)=("[^"\\]*(?:\\.[^"\\]*)*"|[^\s"]*)')
# gin: `[GIN] %v |%s %3d %s| %13v | %15s |%s %-7s %s %#v` (TimeStamp as 2006/01/02 - 15:04:05).
GIN = re.compile(
    r"\[GIN\] (\d{4})/(\d\d)/(\d\d) - (\d\d):(\d\d):(\d\d) \| *(\S+) *\| *(\S+) \| *(\S*) \|"
    r" *([A-Z]+) +\"(.*)\""
)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|µs|us|ns)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}
PORT = re.compile(r"--port[ =](\d+)")
MODEL = re.compile(r"--model[ =](\S+)")
#: The MLX runner's per-request line (x/mlxrunner/prefix_cache.go) pasted without its slog framing
#: (ollama#18267): `cache hit total=23169  matched=21742  cached=16383   left=6786`.
BARE_CACHE = re.compile(r"cache (hit|miss) +total=\d+ +matched=\d+ +cached=\d+ +left=\d+")
#: Ollama 0.1.x's lines through Go's standard logger (log.LstdFlags | log.Lshortfile, local time, no
#: zone): `2023/12/24 23:48:35 llama.go:459: error starting llama runner: llama runner process has
#: terminated` (ollama#1703, v0.1.17: llm/llama.go), `routes.go:1014: Listening on ... (version 0.1.17)`.
GOLOG = re.compile(r"(\d{4})/(\d\d)/(\d\d) (\d\d):(\d\d):(\d\d) [\w.-]+\.go:\d+: (.*)")
# `Listening on 127.0.0.1:11434 (version 0.30.1)`
VERSION = re.compile(r"\(version ([^\s)]+)\)")
# `server config env="map[... OLLAMA_DEBUG:INFO ...]"` (a level since 0.5-ish, a bool before)
DEBUG_SETTING = re.compile(r"OLLAMA_DEBUG:([^\s\]]*)")


#: slog's own keys on every record (AddSource's `source` too).
_SLOG_KEYS = frozenset({"time", "level", "source", "msg"})
#: The attributes of each record kvwatch reads as a request (x/mlxrunner/prefix_cache.go `cache hit` /
#: `cache miss`; runner/*/cache.go `loading cache slot`), and those it must have: another key is
#: counted as unknown (format drift), a missing one makes the record a shape of no release.
RECORD_KEYS = {
    "cache hit": frozenset({"total", "matched", "cached", "left"}),
    "cache miss": frozenset({"total", "matched", "cached", "left"}),
    "loading cache slot": frozenset({"id", "cache", "prompt", "used", "remaining"}),
}
REQUIRED = {
    "cache hit": ("total", "matched", "cached", "left"),
    "cache miss": ("total", "matched", "cached", "left"),
    "loading cache slot": ("id", "cache", "prompt", "used"),
}
KNOWN = {msg: keys | _SLOG_KEYS for msg, keys in RECORD_KEYS.items()}
#: Ollama's records of the kind kvwatch reads (kvwatch.parsers.drift): those carrying a request's cache
#: figures, by their attributes' names (the message may be reworded; see `figure_keys`).
SHAPES = Shapes((" cached ", " used ", " matched "))


def figure_keys(attrs: dict[str, str]) -> str:
    """The attributes' names as a text `SHAPES` tests (` a b c `)."""
    return " " + " ".join(attrs) + " "


def record_shape(record: Record) -> str:
    """A record's sanitised shape: its message, then its attributes' names (never their values)."""
    return key_shape(record.msg[:60], (key for key in record.attrs if key not in _SLOG_KEYS))


def unwrap_pino(text: str) -> tuple[str, float | None] | None:
    """The Ollama line a pino JSON record carries, and the record's time (seconds), else None. Msty runs
    Ollama and logs each of its lines as the `msg` of a record with its own `time` (ms since the epoch):
    `{"level":30,"time":1752516972752,"pid":10104,"hostname":"h","msg":"[GIN] ... \\n"}` (ollama#11418)."""
    try:
        record = json.loads(text)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(msg := record.get("msg"), str) or "pid" not in record:
        return None
    millis = record.get("time")
    wall = millis / 1000 if isinstance(millis, int) and not isinstance(millis, bool) and millis > 0 else None
    return msg.rstrip("\r\n"), wall


class GarbledError(ValueError):
    """A known line whose value cannot be read."""


@dataclass(frozen=True, slots=True)
class Record:
    """One slog record: its time text, level, message and attributes (values unquoted)."""

    time: str
    level: str
    msg: str
    attrs: dict[str, str]


def unquote(value: str) -> str:
    """A slog value as written: Go-quoted values lose their quotes and escapes."""
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        body = value[1:-1]
        if "\\" not in body:
            return body
        return body.encode("latin-1", "backslashreplace").decode("unicode_escape")
    return value


def read_slog(text: str) -> Record | None:
    """The slog record in a line (after any journald prefix), else None."""
    match = SLOG.match(text)
    if match is None:
        return None
    pairs = {key: unquote(value) for key, value in _PAIR.findall(text, match.start(0))}
    return Record(match[1], match[2], pairs.get("msg", ""), pairs)


def attributes(text: str) -> dict[str, str]:
    """The `k=v` pairs of a line (values unquoted)."""
    return {key: unquote(value) for key, value in _PAIR.findall(text)}


def duration(text: str) -> float:
    """A Go time.Duration's String() (`5.2s`, `1m2.5s`, `850µs`) in seconds, else GarbledError."""
    if text[-1:] == "s":  # seconds alone (`\d+(?:\.\d+)?s`, gin's commonest), without the regex
        whole, dot, fraction = text[:-1].partition(".")
        if whole.isdecimal() and (fraction.isdecimal() or not dot):
            return float(text[:-1])
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise GarbledError(f"not a duration: {text[:40]!r}")
    return sum(float(n) * _UNIT[u] for n, u in parts)


def number(attrs: dict[str, str], key: str) -> int:
    """An integer attribute, else GarbledError (a known record without its number is torn)."""
    value = attrs.get(key)
    if value is None or not value.lstrip("-").isdecimal():
        raise GarbledError(f"{key}={value!r} is not an integer")
    return int(value)
