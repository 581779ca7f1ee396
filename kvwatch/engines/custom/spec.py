"""A configured engine's definition: one `[[engine]]` table of the config, read and checked.

Every problem is reported with its field (`engine[0].pattern[1].regex: ...`), all at once: a pattern
that does not compile (with the position of the error), a field the event does not have, a group the
pattern does not name, a label without a cap on its distinct values, a name a built-in engine has.
Patterns compile with the `regex` module, whose matches take a timeout (`re`'s cannot be bounded).
"""

from __future__ import annotations

import re as stdlib_re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import regex

#: The engine-neutral events a pattern may yield, and the fields each has: "n" a number, "s" a string;
#: the required ones are marked with "!".
EVENTS: dict[str, dict[str, str]] = {
    "request": {"prompt_tokens": "n!", "cached_tokens": "n!", "slot": "n", "conversation": "s", "entry": "s"},
    "cache_rate": {
        "prefix_hit": "n",
        "external_hit": "n",
        "kv_cache_usage": "n",
        "prompt_throughput": "n",
        "generation_throughput": "n",
        "running": "n",
        "waiting": "n",
        "preemptions": "n",
        "engine": "s",
    },
    "offload": {"store_bytes": "n", "load_bytes": "n", "lookups": "n", "engine": "s"},
}
#: What each event gives its engine's signals (the detectors that judge it).
SIGNALS = {"request": "server_requests", "cache_rate": "cache_rate", "offload": "offload"}
#: A number's unit: what it is multiplied by to become the event's unit (ratios 0-1, bytes, tokens).
UNITS = {
    "": 1.0,
    "ratio": 1.0,
    "percent": 0.01,
    "tokens": 1.0,
    "count": 1.0,
    "bytes": 1.0,
    "KiB": 1024.0,
    "MiB": 1024.0**2,
    "GiB": 1024.0**3,
}
Kind = Literal["event", "interval", "cumulative"]
KINDS = ("event", "interval", "cumulative")
TIME_FORMATS = ("rfc3339", "epoch")
_NAME = stdlib_re.compile(r"[a-z][a-z0-9_]{0,31}")
DEFAULT_TIMEOUT = 0.05  # seconds a match may take before it is cut off
MAX_LABEL_CAP = 10_000


@dataclass(frozen=True)
class FieldSpec:
    """Where an event field's value comes from: a group (scaled by its unit; a cumulative number becomes
    its increase since the pattern's last line of the same labels), or a constant."""

    name: str
    group: str | None
    scale: float = 1.0
    kind: Kind = "event"
    value: float | None = None
    text: bool = False


@dataclass(frozen=True)
class PatternSpec:
    """One pattern: what it matches and what it yields."""

    name: str
    pattern: Any  # a compiled regex.Pattern
    event: str
    fields: tuple[FieldSpec, ...]
    labels: tuple[tuple[str, int], ...]  # (group, cap on its distinct values)


@dataclass(frozen=True)
class EngineSpec:
    """One configured engine."""

    name: str
    display: str
    markers: tuple[str, ...]
    patterns: tuple[PatternSpec, ...]
    time_group: str | None  # None: the line has no time (the transport's, or the replay's start)
    time_format: str  # rfc3339, epoch, or a strptime format
    timeout: float

    @property
    def events(self) -> tuple[str, ...]:
        """The event kinds its patterns yield, in order, once each."""
        return tuple(dict.fromkeys(p.event for p in self.patterns))

    @property
    def label_names(self) -> tuple[str, ...]:
        """Every label any pattern sets, in order, once each."""
        return tuple(dict.fromkeys(label for p in self.patterns for label, _ in p.labels))


class Problems:
    """Problems of one table, each `<where>.<key>: <why>`."""

    def __init__(self, where: str, out: list[str]) -> None:
        self.where, self.out = where, out

    def add(self, key: str, why: str) -> None:
        """Record one problem."""
        self.out.append(f"{self.where}.{key}: {why}" if key else f"{self.where}: {why}")

    def at(self, key: str) -> Problems:
        """The problems of a nested table."""
        return Problems(f"{self.where}.{key}", self.out)


def compile_pattern(text: str) -> tuple[Any, str | None]:
    """The compiled pattern, or None and why (with the position of the error)."""
    try:
        return regex.compile(text, regex.VERSION1), None
    except regex.error as err:
        pos = getattr(err, "pos", None)
        where = f" at position {pos}" if pos is not None else ""
        shown = f": {text[:pos]}⟨here⟩{text[pos:]}" if pos is not None else ""
        return None, f"does not compile: {getattr(err, 'msg', err)}{where}{shown}"


def read_engine(
    table: Mapping[str, Any], where: str, problems: list[str], builtin: frozenset[str]
) -> EngineSpec | None:
    """One `[[engine]]` table; None (problems recorded) if it is not usable."""
    p = Problems(where, problems)
    before = len(problems)
    known = {"name", "display", "markers", "time", "timeout_ms", "pattern"}
    for key in sorted(set(table) - known):
        p.add(key, f"unknown key (known: {', '.join(sorted(known))})")
    name = table.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        p.add("name", f"required: lower-case letters, digits and _, starting with a letter (got {name!r})")
        name = ""
    elif name in builtin or name == "auto":
        p.add("name", f"{name!r} is a built-in engine's name; choose another")
    display = table.get("display", name)
    if not isinstance(display, str) or not display:
        p.add("display", "must be a non-empty string")
        display = name
    markers = table.get("markers")
    if not isinstance(markers, list) or not markers or not all(isinstance(m, str) and m for m in markers):
        p.add("markers", "required: a list of non-empty strings, one of which every line it reads holds")
        markers = []
    elif not all(m.isascii() for m in markers):
        p.add("markers", "must be ASCII (the prefilter looks for them in bytes)")
    timeout_ms = table.get("timeout_ms", DEFAULT_TIMEOUT * 1000)
    if (
        isinstance(timeout_ms, bool)
        or not isinstance(timeout_ms, int | float)
        or not 0 < timeout_ms <= 10_000
    ):
        p.add("timeout_ms", f"a number of milliseconds in (0, 10000] (got {timeout_ms!r})")
        timeout_ms = DEFAULT_TIMEOUT * 1000
    time_group, time_format = _time(table.get("time"), p)
    raw = table.get("pattern")
    if not isinstance(raw, list) or not raw or not all(isinstance(t, dict) for t in raw):
        p.add("pattern", "required: one or more [[engine.pattern]] tables")
        raw = []
    patterns = [_pattern(t, p.at(f"pattern[{i}]"), time_group) for i, t in enumerate(raw)]
    if len(problems) > before:
        return None
    return EngineSpec(
        name,
        display,
        tuple(markers),
        tuple(x for x in patterns if x is not None),
        time_group,
        time_format,
        float(timeout_ms) / 1000,
    )


def _time(raw: Any, p: Problems) -> tuple[str | None, str]:
    if raw == "none":
        return None, ""
    if not isinstance(raw, dict):
        p.add("time", 'required: "none" (the line has no time) or { group = "...", format = "rfc3339" }')
        return None, ""
    for key in sorted(set(raw) - {"group", "format"}):
        p.add(f"time.{key}", "unknown key (known: format, group)")
    group, fmt = raw.get("group"), raw.get("format", "rfc3339")
    if not isinstance(group, str) or not group:
        p.add("time.group", "required: the group holding the line's time")
        group = None
    if not isinstance(fmt, str) or not (fmt in TIME_FORMATS or "%" in fmt):
        p.add(
            "time.format",
            f'"rfc3339", "epoch" or a strptime format such as "%Y-%m-%d %H:%M:%S" (got {fmt!r})',
        )
        fmt = "rfc3339"
    return group, fmt


def _pattern(t: Mapping[str, Any], p: Problems, time_group: str | None) -> PatternSpec | None:
    before = len(p.out)
    known = {"name", "regex", "event", "fields", "labels"}
    for key in sorted(set(t) - known):
        p.add(key, f"unknown key (known: {', '.join(sorted(known))})")
    text = t.get("regex")
    compiled = None
    if not isinstance(text, str) or not text:
        p.add("regex", "required: the pattern, with named groups (?P<name>...)")
    else:
        compiled, why = compile_pattern(text)
        if why:
            p.add("regex", why)
    groups = set(compiled.groupindex) if compiled is not None else None
    event = t.get("event")
    if event not in EVENTS:
        p.add("event", f"one of {', '.join(EVENTS)} (got {event!r})")
        return None
    if groups is not None and time_group is not None and time_group not in groups:
        p.add("regex", f"names no group {time_group!r} (engine's time.group)")
    wanted = EVENTS[event]
    raw_fields = t.get("fields")
    if not isinstance(raw_fields, dict):
        p.add("fields", "required: a table of event field = group name, or = { group, unit, kind }")
        raw_fields = {}
    fields = []
    for name, how in raw_fields.items():
        f = _field(name, how, wanted, p.at(f"fields.{name}"), groups)
        if f is not None:
            fields.append(f)
    for name, what in wanted.items():
        if what.endswith("!") and name not in raw_fields:
            p.add("fields", f"{event} needs {name!r}")
    labels = []
    raw_labels = t.get("labels", {})
    if isinstance(raw_labels, list):
        for label in raw_labels:
            p.add(
                "labels",
                f"label {label!r} is unbounded: give its cap on distinct values, labels = {{ {label} = 32 }}",
            )
    elif not isinstance(raw_labels, dict):
        p.add("labels", "a table of group = the cap on its distinct values")
    else:
        for label, cap in raw_labels.items():
            if isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap <= MAX_LABEL_CAP:
                p.add(
                    f"labels.{label}",
                    f"label is unbounded: its cap must be an integer in 1..{MAX_LABEL_CAP} (got {cap!r})",
                )
            elif groups is not None and label not in groups:
                p.add(
                    f"labels.{label}",
                    f"the regex names no group {label!r} (it names: {', '.join(sorted(groups)) or 'none'})",
                )
            elif not _NAME.fullmatch(label) or label in ("source", "pattern", "kind"):
                p.add(
                    f"labels.{label}",
                    "a label name: lower-case letters, digits and _ (not source, pattern, kind)",
                )
            else:
                labels.append((label, cap))
    name = t.get("name", event)
    if not isinstance(name, str) or not name:
        p.add("name", "must be a non-empty string")
        name = str(event)
    if len(p.out) > before or compiled is None:
        return None
    return PatternSpec(name, compiled, event, tuple(fields), tuple(labels))


def _field(
    name: str, how: Any, wanted: Mapping[str, str], p: Problems, groups: set[str] | None
) -> FieldSpec | None:
    if name not in wanted:
        p.add("", f"not a field of this event (its fields: {', '.join(wanted)})")
        return None
    text = wanted[name].startswith("s")
    if isinstance(how, str):
        how = {"group": how}
    if not isinstance(how, dict):
        p.add("", 'a group name, or { group = "...", unit = "...", kind = "..." }, or { value = N }')
        return None
    for key in sorted(set(how) - {"group", "unit", "kind", "value"}):
        p.add(key, "unknown key (known: group, kind, unit, value)")
    if "value" in how:
        value = how["value"]
        if text or isinstance(value, bool) or not isinstance(value, int | float):
            p.add("value", "a number (a constant the line does not carry)")
            return None
        return FieldSpec(name, None, value=float(value))
    group = how.get("group")
    if not isinstance(group, str) or not group:
        p.add("group", "required: the regex group holding the value")
        return None
    if groups is not None and group not in groups:
        p.add(
            "group", f"the regex names no group {group!r} (it names: {', '.join(sorted(groups)) or 'none'})"
        )
        return None
    unit, kind = how.get("unit", ""), how.get("kind", "event")
    if text:
        if "unit" in how or "kind" in how:
            p.add("", "a text field takes only a group")
        return FieldSpec(name, group, text=True)
    if unit not in UNITS:
        p.add("unit", f"one of {', '.join(u for u in UNITS if u)} (got {unit!r})")
        return None
    if kind not in KINDS:
        p.add("kind", f"one of {', '.join(KINDS)} (got {kind!r})")
        return None
    return FieldSpec(name, group, UNITS[unit], kind)
