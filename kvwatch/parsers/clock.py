"""Event time for year-less timestamps (vLLM's `MM-DD HH:MM:SS`), in a configured zone.

vLLM prints neither year nor zone. The year comes from the transport time when there is one (docker's
`time`, `docker logs -t`, journald): of the candidate years around it, the one that puts the line nearest
the transport time wins, which handles New Year in either direction. Without a transport time the year
starts at the configured one and rolls over when the month goes from December back to January.
"""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo
from zoneinfo import ZoneInfo

_UTC = timezone.utc


def zone(name: str) -> tzinfo:
    """The tzinfo for a zone name; `UTC` and `Z` need no tz database."""
    return _UTC if name in ("UTC", "Z", "utc") else ZoneInfo(name)


def iso(ts: float) -> str:
    """UTC ISO 8601 with `Z`, seconds resolution unless there is a fraction."""
    moment = datetime.fromtimestamp(ts, _UTC)
    if moment.microsecond:
        text = moment.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0")
        return text + "Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class YearlessClock:
    """Turns month, day and time of day into epoch seconds, keeping the year across lines."""

    __slots__ = ("_last_month", "_tz", "_year")

    def __init__(self, year: int, tz: str) -> None:
        self._year = year
        self._tz = zone(tz)
        self._last_month = 0

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

    def _near(self, month: int, day: int, hms: tuple[int, int, int], transport: float) -> float | None:
        local_year = datetime.fromtimestamp(transport, self._tz).year
        best: float | None = None
        for year in (local_year - 1, local_year, local_year + 1):
            ts = self._epoch(year, month, day, hms)
            if ts is not None and (best is None or abs(ts - transport) < abs(best - transport)):
                best = ts
        if best is not None:
            self._year, self._last_month = datetime.fromtimestamp(best, self._tz).year, month
        return best

    def _epoch(self, year: int, month: int, day: int, hms: tuple[int, int, int]) -> float | None:
        try:
            moment = datetime(year, month, day, *hms, tzinfo=self._tz)
        except ValueError:
            return None
        return moment.timestamp()


_LAST_SECOND: list[tuple[str, float]] = [("", 0.0)]


def _second(whole: str) -> float:
    # Docker times arrive in order, many per second: remember the last whole second parsed.
    cached_text, cached = _LAST_SECOND[0]
    if whole == cached_text:
        return cached
    value = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=_UTC).timestamp()
    _LAST_SECOND[0] = (whole, value)
    return value


def parse_rfc3339(text: str) -> float | None:
    """Parse docker's RFC3339Nano (`2026-08-18T01:22:08.123456789Z`, 0-9 fraction digits, or an offset)."""
    try:
        if text.endswith("Z"):
            body, offset = text[:-1], 0.0
        elif len(text) > 6 and text[-6] in "+-" and text[-3] == ":":
            sign = 1 if text[-6] == "+" else -1
            offset = sign * (int(text[-5:-3]) * 3600 + int(text[-2:]) * 60)
            body = text[:-6]
        else:
            return None
        whole, _, frac = body.partition(".")
        base = _second(whole)
    except ValueError:
        return None
    if frac and not frac.isdigit():
        return None
    fraction = int(frac[:9].ljust(9, "0")) / 1e9 if frac else 0.0
    return base - offset + fraction
