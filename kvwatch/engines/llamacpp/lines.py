"""The shapes of llama-server output: the envelope around a message, and the messages we read.

An envelope is whatever wraps llama.cpp's own text: a `--log-jsonl` object, a journald/syslog or ISO
prefix, the router's `[port] ` prefix, ANSI colour, and `--log-prefix`/`--log-timestamps`
(`M.SS.mmm.uuu L `, time since process start, minutes unbounded); `docker compose logs`' `service  | `
is a source's framing, stripped before (kvwatch.sources.compose). Messages are matched on their text
only, never on the function column or the level letter (both changed across builds).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from kvwatch.parsers.clock import LineClock, YearlessClock
from kvwatch.parsers.drift import Shapes
from kvwatch.parsers.text import strip_ansi
from kvwatch.times import parse_rfc3339

_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun"), 1)}
_MONTHS |= {m: i for i, m in enumerate(("Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 7)}
# The transport prefixes journalctl writes (`short`, `short-iso`) and syslog's: `<time> <host> <tag>: `,
# the tag `name[pid]` (or `name`): the process that wrote the line, whose state is its own.
_SYSLOG = re.compile(r"([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) \S+ ([^\s:]+): ")
_ISO = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) (?:\S+ ([^\s:]+): )?")
_PORT = re.compile(r"\[ *(\d+)\] ")
# Minutes since the process started: up to 7 digits (19 years of uptime). A longer number is not a
# clock but damage, which would carry every later line's time past year 9999 (times never go back).
_REL = re.compile(r"(\d{1,7})\.(\d\d)\.(\d{3})\.(\d{3}) ")
#: The largest router port: a bracketed number above it is a 2024 build's unix-time stamp.
MAX_PORT = 65535
#: `--log-jsonl`'s `time` (µs since start) at most: as long an uptime as `_REL`'s 7 digits of minutes.
MAX_MICROS = 10**7 * 60 * 10**6
_LEVEL = re.compile(r"[IWED] ")

# A slot line: `slot <func, 12 wide>: id %2d | task %d | <message>`. Numbers are captured loosely
# (\S+) and validated afterwards, so a garbled number is a parse error rather than an unknown line.
SLOT = re.compile(r"slot +\S*: id +(\S+) \| task (\S+) \|(.*)")
SLOT_START = re.compile(r"slot +\S*: id")
SRV = re.compile(r"srv +\S*: +(.*)")
RESTART = re.compile(
    r"(?:srv +)?\S+: +(?:initializing slots|initializing, n_slots =|(?:server is )?listening on )"
    r"|(?:srv +)?llama_server: +initializing"
)
# The bulk of a `-lv 4` log in one match: a plain line `M.SS.mmm.uuu L ` (as _REL and _LEVEL read
# it, in ASCII digits) with a slot message (SLOT's groups) or a srv one (SRV's head; the groups are
# None). Groups: the stamp (`M.SS.` is all but its last 7 characters), slot, task and the message
# without its leading whitespace.
PLAIN = re.compile(
    r"([0-9]{1,7}\.[0-9][0-9]\.[0-9]{3}\.[0-9]{3}) [IWED] "
    r"(?:slot +\S*: id +(\S+) \| task (\S+) \|\s*(.*)|srv +\S*: +)"
)
# `mmm` -> mmm / 1e3 and `uuu` -> uuu / 1e6: the very floats `_relative` computes (ASCII digits).
MILLIS = {f"{n:03d}": n / 1e3 for n in range(1000)}
MICROS = {f"{n:03d}": n / 1e6 for n in range(1000)}
CONTINUATION = re.compile(r" *(?:prompt eval|eval|total) time = ")

SELECT_LCP = re.compile(r"selected slot by LCP similarity, (?:f_)?sim_best = (\S+) \(.*f_keep = ([^\s,]+)")
SELECT_LCS = re.compile(r"selected slot by lcs similarity, lcs_len = \S+, similarity = (\S+)")
SELECT_LRU = re.compile(r"selected slot by (?:LRU|lru), t_last = (\S+)")
SELECT_ID = re.compile(r"selected slot by id \((\S+)\)")
NEW_PROMPT = re.compile(r"new prompt, .*(?:n_prompt_tokens|task\.n_tokens) = ([^\s,]+)")
SEQ_RM = re.compile(r"(?:kv cache rm|memory_seq_rm) \[([^\s,]+), end\)")
RESTORED = re.compile(r"restored context checkpoint \((?:.*n_past = ([^\s,]+))?")
PROMPT_EVAL = re.compile(r"prompt eval time = +(\S+) ms / +(\S+) tokens")
EVAL = re.compile(r"eval time = +(\S+) ms / +(\S+) tokens")
STOP = re.compile(r"stop processing: (?:.*?, )?(?:n_past|n_tokens) = ([^\s,]+)")
FOUND = re.compile(r"- found better prompt with f_keep = ([^\s,]+), (?:f_)?sim = ([^\s,]+)")

#: The `key = value` messages of a request read by key (`new prompt, ...`, `stop processing: ...`): the
#: keys any build printed (server.cpp / server-context.cpp, 2024-2026); another is counted as unknown.
KEYED = {
    "new prompt": frozenset({"n_ctx_slot", "n_keep", "n_prompt_tokens", "task.n_tokens", "n_discard"}),
    "stop processing": frozenset({"n_past", "n_tokens", "truncated"}),
}
_KEY = re.compile(r"([\w.]+) = ")
#: How many `key = value` pairs the keyed messages print, by their first four characters (the builds
#: since 2024): a line with more may hold a key of no build (`unknown_keys` looks), one with as many
#: cannot (a renamed key garbles the line instead), and is not looked at.
KEYS_PRINTED = {"new ": 3, "stop": 2}


def unknown_keys(msg: str) -> tuple[str, list[str]] | None:
    """(its kind, the keys no build printed) of a keyed message, None for another message."""
    kind = next((kind for kind in KEYED if msg.startswith(kind)), None)
    if kind is None:
        return None
    known = KEYED[kind]
    return kind, [key for key in _KEY.findall(msg) if key not in known]


#: llama.cpp's lines of the kinds kvwatch reads (kvwatch.parsers.drift): a request's slot message that
#: names a figure kvwatch reads (its prompt's size, a timing, the pick's f_keep) but begins as none of
#: the messages it reads does: the wording changed, and the request's figures would go missing.
#: Known and not read: server-context.cpp's `need to evaluate at least 1 token for each active slot
#: (n_past = %d, task.n_tokens() = %d)` before it drops the request (its record ends at the release).
SHAPES = Shapes(
    ("n_prompt_tokens", "task.n_tokens", " time = ", "f_keep"),
    re.compile(r"^need to evaluate at least \d+ token"),
)

_INT = re.compile(r"-?\d+")


class GarbledError(ValueError):
    """A known line shape whose number cannot be read."""


def to_int(text: str) -> int:
    """A decimal integer as printf's %d writes it, else GarbledError."""
    if text.isdecimal():  # exactly `\d+`: the common case without the regex
        return int(text)
    if not _INT.fullmatch(text):
        raise GarbledError(f"not an integer: {text[:40]!r}")
    return int(text)


def to_float(text: str) -> float:
    """A non-negative decimal as printf's %.Nf writes it, else GarbledError."""
    whole, dot, fraction = text.partition(".")  # fullmatch of `\d+(?:\.\d+)?`, without the regex
    if not whole.isdecimal() or (dot and not fraction.isdecimal()):
        raise GarbledError(f"not a number: {text[:40]!r}")
    return float(text)


@dataclass(frozen=True, slots=True)
class Envelope:
    """One llama.cpp message and what its wrapping said: router port, relative time, wall time, and the
    process that wrote it where the transport names one (journald's or syslog's `name[pid]` tag)."""

    body: str
    port: int | None
    rel: float | None
    wall: float | None
    process: str | None = None


def unwrap(text: str, clock: YearlessClock, process: str | None = None) -> list[Envelope] | None:
    """The messages of one physical line, or None when the line is not llama.cpp output at all;
    `process`: the writer the line's source named (journald), unless its own prefix names one."""
    text = strip_ansi(text).rstrip("\r")
    wall, tag, text = _transport(text, clock)
    process = tag or process
    port = None
    match = _PORT.match(text)
    if match:
        number, text = int(match[1]), text[match.end() :]
        if number <= MAX_PORT:
            port = number
        elif wall is None:  # LOG_TEE's `[<unix seconds>] ` (2024 builds), not a router port
            wall = float(number)
    if text.startswith('{"type"'):
        return _jsonl(text, port, wall, process)
    rel, text = _relative(text)
    return [Envelope(text, port, rel, wall, process)]


def _transport(text: str, clock: YearlessClock) -> tuple[float | None, str | None, str]:
    """Strip a journald/syslog or ISO transport prefix; its time and its tag, when it has them."""
    if text[:1].isdigit():
        iso = _ISO.match(text)
        if iso:
            return parse_rfc3339(iso[1]), iso[2], text[iso.end() :]
    elif text[:1].isupper():
        sys = _SYSLOG.match(text)
        if sys and sys[1] in _MONTHS:
            hms = (int(sys[3]), int(sys[4]), int(sys[5]))
            return clock.resolve(_MONTHS[sys[1]], int(sys[2]), hms, None), sys[6], text[sys.end() :]
    return None, None, text


def _relative(text: str) -> tuple[float | None, str]:
    """Strip `M.SS.mmm.uuu ` and the level letter; the seconds since process start, if printed."""
    rel = None
    match = _REL.match(text)
    if match:
        minutes, seconds, millis, micros = (int(g) for g in match.groups())
        rel = minutes * 60 + seconds + millis / 1e3 + micros / 1e6
        text = text[match.end() :]
    level = _LEVEL.match(text)
    return rel, text[level.end() :] if level else text


def _jsonl(text: str, port: int | None, wall: float | None, process: str | None) -> list[Envelope] | None:
    """`--log-jsonl`: `{"type":"log","time":<µs since start>,"level":...,"msg":...}`."""
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("type") != "log" or not isinstance(obj.get("msg"), str):
        return None
    micros = obj.get("time")
    rel = None
    # `time` is 0 on every line under --no-log-timestamps: no clock then, not "all at start"
    if isinstance(micros, int) and not isinstance(micros, bool) and 0 < micros <= MAX_MICROS:
        rel = micros / 1e6
    lines = obj["msg"].strip("\n").split("\n")
    return [Envelope(strip_ansi(line), port, rel, wall, process) for line in lines]


def round_us(seconds: float) -> float:
    """`round(seconds, 6)` without the decimal string round trip that made it the costliest call per line."""
    # Below 2**51 µs the product is within 0.125 of the exact one, so when it lies within 0.25 of an
    # integer n the exact value rounds to n too, and n / 1e6 is the same correctly rounded quotient
    # as round()'s. Anything else (a tie, 2041 and later, zero or below, nan) goes to round() itself.
    micros = seconds * 1e6
    if 0.0 < micros < 2.0**51:
        rounded = round(micros)
        if -0.25 < micros - rounded < 0.25:
            return rounded / 1e6
    return round(seconds, 6)


_LINE_START = re.compile(r"^(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) ")


def _read_relative(m: re.Match[str]) -> float:
    minutes, seconds, millis, micros = map(int, m.groups())
    return minutes * 60 + seconds + millis / 1e3 + micros / 1e6


def _write_relative(rel: float) -> str:
    us = max(0, round(rel * 1e6))
    return f"{us // 60_000_000}.{us // 1_000_000 % 60:02d}.{us // 1000 % 1000:03d}.{us % 1000:03d} "


#: `--log-timestamps`' `M.SS.mmm.uuu ` at the start of a line: time since the server started.
CLOCK = LineClock(_LINE_START, _read_relative, _write_relative, relative=True, first_only=True)
