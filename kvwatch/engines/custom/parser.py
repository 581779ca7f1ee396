"""A configured engine's parser: its patterns over each line holding a marker, each match bounded by a
timeout; what matched becomes the engine-neutral event the pattern yields.

A pattern cut off by its timeout loses that line only (counted as a notice, logged once per pattern); a
label value beyond its cap becomes "other" (counted); a cumulative number becomes its increase since the
pattern's last line of the same labels (none on the first; a drop is a restart: the new value is the
increase).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from kvwatch.engines.custom.spec import EngineSpec, FieldSpec, PatternSpec
from kvwatch.model import Event, LogLine
from kvwatch.parsers.base import ParseError, ParseResult, ParserSettings
from kvwatch.parsers.drift import Drift, Shapes
from kvwatch.times import parse_rfc3339, zone

LOG = logging.getLogger("kvwatch.custom")
OTHER = "other"  # a label's value beyond its cap
#: (engine, pattern) already logged as cut off: once per process
_LOGGED: set[tuple[str, str]] = set()
_THROUGHPUT = ("prompt_throughput", "generation_throughput")


class CustomParser:
    """One source's parser of a configured engine."""

    def __init__(
        self, spec: EngineSpec, kinds: dict[str, type], source: str, settings: ParserSettings
    ) -> None:
        self.spec, self.kinds, self.source, self.settings = spec, kinds, source, settings
        self.markers = spec.markers
        self.seen: dict[str, set[str]] = {}  # label -> its values so far
        self.last: dict[tuple[str, str, tuple[str, ...]], tuple[float, float]] = {}  # -> (value, time)
        self.time = settings.start
        self.tz = zone(settings.tz)
        self.drift = Drift(source, spec.name, Shapes(spec.markers))

    def parse(self, line: LogLine) -> ParseResult:
        """The events of every pattern that matches the line; None: no marker; a marker line no pattern
        matched is format drift."""
        text = line.text
        if not any(m in text for m in self.markers):
            return None
        out: list[Event] = []
        matched = False
        for pattern in self.spec.patterns:
            try:
                found = pattern.pattern.search(text, timeout=self.spec.timeout)
            except TimeoutError:
                self._cut_off(pattern, len(text))
                out.append(self.kinds["notice"](self.source, self.time, pattern.name, "timeout"))
                continue
            if found is None:
                continue
            matched = True
            made = self._event(pattern, found.groupdict(), line, out)
            if isinstance(made, ParseError):
                return made
        if matched or out:
            return out
        # a line holding the engine's marker that none of its patterns matches: the engine's wording
        # changed (or a pattern misses it), told as format drift at the last line's time
        return self.drift.line(self.time, text)

    def flush(self) -> list[Event]:
        """Nothing is held back."""
        return []

    def _cut_off(self, pattern: PatternSpec, length: int) -> None:
        key = (self.spec.name, pattern.name)
        if key not in _LOGGED:
            _LOGGED.add(key)
            LOG.warning(
                "engine %s: pattern %s took longer than %.0f ms on a line of %d characters and was cut off "
                "(counted in kvwatch_%s_patterns_cut_off_total; logged once)",
                self.spec.name,
                pattern.name,
                self.spec.timeout * 1000,
                length,
                self.spec.name,
            )

    def _event(
        self, pattern: PatternSpec, groups: dict[str, Any], line: LogLine, out: list[Event]
    ) -> ParseError | None:
        when = self._time(groups, line)
        if when is None:
            return ParseError(
                f"{self.spec.name}: the time {groups.get(self.spec.time_group or '')!r} "
                f"does not read as {self.spec.time_format}"
            )
        self.time = when
        labels: dict[str, str] = {}
        for label, cap in pattern.labels:
            value = groups.get(label) or ""
            known = self.seen.setdefault(label, set())
            if value not in known:
                if len(known) >= cap:
                    out.append(self.kinds["notice"](self.source, when, pattern.name, "label_overflow", label))
                    value = OTHER
                else:
                    known.add(value)
            labels[label] = value
        key = tuple(labels.get(name, "") for name in self.spec.label_names)  # (every pattern's, in order)
        values: dict[str, Any] = {}
        for f in pattern.fields:
            got = self._value(f, groups, pattern.name, key, when)
            if isinstance(got, ParseError):
                return got
            values[f.name] = got
        made = self._make(pattern.event, values, when, key)
        if made is not None:
            out.append(made)
        return None

    def _time(self, groups: dict[str, Any], line: LogLine) -> float | None:
        if self.spec.time_group is None:
            return line.time if line.time is not None else self.time
        raw = groups.get(self.spec.time_group)
        if raw is None:  # (an optional time group: the transport's time, e.g. `docker logs -t`'s, read first)
            return line.time if line.time is not None else self.time
        if not raw:
            return None
        fmt = self.spec.time_format
        if fmt == "rfc3339":
            return parse_rfc3339(raw)
        try:
            if fmt == "epoch":
                return float(raw)
            stamp = datetime.strptime(raw, fmt)
        except ValueError:
            return None
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=self.tz)
        return stamp.timestamp()

    def _value(
        self, f: FieldSpec, groups: dict[str, Any], pattern: str, key: tuple[str, ...], when: float
    ) -> Any:
        if f.value is not None:
            return f.value
        raw = groups.get(f.group or "")
        if raw is None:
            return None  # an optional group that did not take part
        if f.text:
            return raw
        try:
            number = float(raw.replace(",", "")) * f.scale
        except ValueError:
            return ParseError(f"{self.spec.name}: {f.group}={raw!r} is no number")
        if f.kind != "cumulative":
            return number
        slot = (pattern, f.name, key)
        before = self.last.get(slot)
        self.last[slot] = (number, when)
        if before is None:
            return None  # the first reading: no increase yet
        increase = number - before[0] if number >= before[0] else number
        if f.name in _THROUGHPUT:
            return increase / (when - before[1]) if when > before[1] else None
        return increase

    def _make(self, event: str, v: dict[str, Any], when: float, labels: tuple[str, ...]) -> Event | None:
        kind = self.kinds[event]
        if event == "request":
            if v.get("prompt_tokens") is None or v.get("cached_tokens") is None:
                return None
            slot = v.get("slot")
            return kind(  # type: ignore[no-any-return]
                self.source,
                when,
                int(v["prompt_tokens"]),
                int(v["cached_tokens"]),
                slot=None if slot is None else int(slot),
                conversation=v.get("conversation") or "",
                entry=v.get("entry"),
                labels=labels,
            )
        if event == "cache_rate":
            return kind(  # type: ignore[no-any-return]
                self.source,
                when,
                v.get("engine") or "0",
                _num(v, "prompt_throughput"),
                _num(v, "generation_throughput"),
                int(_num(v, "running")),
                int(_num(v, "waiting")),
                v.get("kv_cache_usage"),
                prefix_hit=v.get("prefix_hit"),
                external_hit=v.get("external_hit"),
                preemptions=int(_num(v, "preemptions")),
                labels=labels,
            )
        store, load, lookups = v.get("store_bytes"), v.get("load_bytes"), v.get("lookups")
        if store is None and load is None and lookups is None:
            return None
        if store is not None or load is not None:  # (one byte count given: the other is 0, not unknown)
            store, load = store or 0, load or 0
        return kind(  # type: ignore[no-any-return]
            self.source, when, v.get("engine") or "0", _int(store), _int(load), _int(lookups), labels=labels
        )


def _num(values: dict[str, Any], name: str) -> float:
    got = values.get(name)
    return 0.0 if got is None else float(got)


def _int(value: Any) -> int | None:
    return None if value is None else round(value)
