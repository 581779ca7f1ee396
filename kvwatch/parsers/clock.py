"""Event time for year-less timestamps (vLLM's `MM-DD HH:MM:SS`), in a configured zone.

vLLM prints neither year nor zone. The year comes from the transport time when there is one (docker's
`time`, `docker logs -t`, journald): of the candidate years around it, the one that puts the line nearest
the transport time wins, which handles New Year in either direction. Without a transport time the year
starts at the configured one and rolls over when the month goes from December back to January.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from kvwatch.times import zone

_UTC = timezone.utc
_HALF_YEAR = 182 * 86400


def _hms(stamp: str) -> tuple[int, int, int]:
    return int(stamp[6:8]), int(stamp[9:11]), int(stamp[12:14])


class YearlessClock:
    """Turns month, day and time of day into epoch seconds, keeping the year across lines."""

    __slots__ = ("_days", "_last_month", "_span", "_stamp", "_tz", "_year")

    def __init__(self, year: int, tz: str) -> None:
        self._year = year
        self._tz = zone(tz)
        self._last_month = 0
        # UTC only (a zone's offset varies within a day): midnight per date, and the epoch span of
        # the year the last transport time fell in, so that a line costs no datetime objects.
        self._days: dict[tuple[int, int, int], float | None] = {}
        self._span = (0.0, 0.0, 0)
        # resolve_stamp's last (stamp, year, month, epoch of the stamp in that year, UTC): the lines
        # of one stats interval share their second.
        self._stamp: tuple[str, int, int, float | None] = ("", 0, 0, None)

    def key(self) -> tuple[int, int]:
        """What decides its later answers (its caches left out): equal keys, equal answers."""
        return self._year, self._last_month

    def resume(self, key: tuple[int, int]) -> None:
        """Go on from a `key()` taken earlier (a restart): later answers are that clock's."""
        self._year, self._last_month = int(key[0]), int(key[1])

    def resolve(
        self, month: int, day: int, hms: tuple[int, int, int], transport: float | None
    ) -> float | None:
        """Epoch seconds for the stamp, or None when the date does not exist (e.g. 02-30)."""
        if transport is not None:
            return self._near(month, day, hms, transport)
        if self._last_month == 12 and month == 1:
            self._year += 1
        self._last_month = month
        return self._epoch(self._year, month, day, hms)

    def dated(self, year: int, month: int, day: int, hms: tuple[int, int, int]) -> float | None:
        """Epoch seconds of a stamp that carries its year (Ollama's `[GIN] 2024/11/04 - ...`): that
        year is kept, and later year-less stamps follow it."""
        when = self._epoch(year, month, day, hms)
        if when is not None:
            self._year, self._last_month = year, month
        return when

    def resolve_stamp(self, stamp: str, transport: float | None) -> float | None:
        """resolve() of an `MM-DD HH:MM:SS` text (two digits each, as vLLM's header prints it)."""
        if transport is not None and self._tz is _UTC:
            # _near's first step, with the stamp's epoch remembered: same result, same state.
            low, high, year = self._span  # (_year_of's test, without its call)
            if not low <= transport < high:
                year = self._year_of(transport)
            last, last_year, month, ts = self._stamp
            if stamp != last or year != last_year:
                month = int(stamp[:2])
                ts = self._utc_epoch(year, month, int(stamp[3:5]), _hms(stamp))
                self._stamp = (stamp, year, month, ts)
            if ts is not None and abs(ts - transport) < _HALF_YEAR:
                self._year, self._last_month = year, month
                return ts
        return self.resolve(int(stamp[:2]), int(stamp[3:5]), _hms(stamp), transport)

    def _near(self, month: int, day: int, hms: tuple[int, int, int], transport: float) -> float | None:
        local_year = self._year_of(transport)
        if self._tz is _UTC:
            # Within half a year of the transport time, the same date a year earlier or later is
            # farther away (dates of adjacent years are >= 365 days apart): the loop would pick it.
            ts = self._utc_epoch(local_year, month, day, hms)
            if ts is not None and abs(ts - transport) < _HALF_YEAR:
                self._year, self._last_month = local_year, month
                return ts
        best: float | None = None
        best_year = 0
        for year in (local_year - 1, local_year, local_year + 1):
            ts = self._epoch(year, month, day, hms)
            if ts is not None and (best is None or abs(ts - transport) < abs(best - transport)):
                best, best_year = ts, year
        if best is not None:
            # In UTC a valid date's local year is the year it was built with.
            year = best_year if self._tz is _UTC else datetime.fromtimestamp(best, self._tz).year
            self._year, self._last_month = year, month
        return best

    def _year_of(self, transport: float) -> int:
        if self._tz is not _UTC:
            return datetime.fromtimestamp(transport, self._tz).year
        low, high, year = self._span
        if not low <= transport < high:
            year = datetime.fromtimestamp(transport, _UTC).year
            low = datetime(year, 1, 1, tzinfo=_UTC).timestamp()
            high = datetime(year + 1, 1, 1, tzinfo=_UTC).timestamp() if year < 9999 else float("inf")
            self._span = (low, high, year)
        return year

    def _epoch(self, year: int, month: int, day: int, hms: tuple[int, int, int]) -> float | None:
        if self._tz is _UTC:
            return self._utc_epoch(year, month, day, hms)
        try:
            moment = datetime(year, month, day, *hms, tzinfo=self._tz)
        except ValueError:
            return None
        return moment.timestamp()

    def _utc_epoch(self, year: int, month: int, day: int, hms: tuple[int, int, int]) -> float | None:
        # Exactly datetime(year, month, day, *hms, tzinfo=UTC).timestamp(), None where it raises.
        hour, minute, second = hms
        if not (0 <= hour < 24 and 0 <= minute < 60 and 0 <= second < 60):
            return None
        key = (year, month, day)
        if key not in self._days:
            if len(self._days) > 4096:
                self._days.clear()
            try:
                self._days[key] = datetime(year, month, day, tzinfo=_UTC).timestamp()
            except (ValueError, OverflowError):
                self._days[key] = None
        midnight = self._days[key]
        return None if midnight is None else midnight + (hour * 3600 + minute * 60 + second)


@dataclass(frozen=True)
class LineClock:
    """How an engine's lines carry their own time: where, how to read it, how to write another."""

    pattern: re.Pattern[str]
    parse: Callable[[re.Match[str]], float | None]
    format: Callable[[float], str]
    relative: bool = False  # times count from the server's start (llama.cpp), not from the epoch
    first_only: bool = False  # only the first match is a time (a line starts with it)

    def read(self, line: str) -> float | None:
        """The line's own time, None when it has none."""
        m = self.pattern.search(line)
        return self.parse(m) if m else None

    def write(self, line: str, convert: Callable[[float], float]) -> str:
        """The line with each time `t` in it replaced by `convert(t)`."""

        def one(m: re.Match[str]) -> str:
            when = self.parse(m)
            return m.group(0) if when is None else self.format(convert(when))

        return self.pattern.sub(one, line, count=1 if self.first_only else 0)
