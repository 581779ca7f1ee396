"""Times as logs and the wire write them: a zone by name, RFC 3339 read (docker's, the configs'),
an epoch second written as UTC ISO 8601. Every stage may use these: this module imports nothing of
kvwatch."""

from __future__ import annotations

import re
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


_LAST_SECOND: list[tuple[str, float]] = [("", 0.0)]
_FIXED = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")


def _second(whole: str) -> float:
    # Docker times arrive in order, many per second: remember the last whole second parsed.
    cached_text, cached = _LAST_SECOND[0]
    if whole == cached_text:
        return cached
    if _FIXED.fullmatch(whole):  # what strptime accepts and rejects, without its cost
        value = datetime(
            int(whole[:4]), int(whole[5:7]), int(whole[8:10]),
            int(whole[11:13]), int(whole[14:16]), int(whole[17:19]), tzinfo=_UTC,
        ).timestamp()  # fmt: skip
    else:
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
