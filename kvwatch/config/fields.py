"""Reading one TOML table field by field, with one exact sentence per problem (Alertmanager style).

Every problem names its full field path (`source[1].container`) and why; lists are indexed from 0.
A value that may be a secret is never quoted back in a message.
"""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class Fields:
    """One table being read; `done()` reports the keys nobody asked for as unknown."""

    def __init__(self, table: Mapping[str, Any], where: str, problems: list[str], base: Path) -> None:
        """Read `table`, found at `where` ("" for the top level); relative paths are from `base`."""
        self.table = table
        self.where = where
        self.problems = problems
        self.base = base
        self._known: set[str] = set()

    @property
    def asked(self) -> frozenset[str]:
        """The keys read so far (asked for, given or not): those `done()` does not call unknown."""
        return frozenset(self._known)

    def name(self, key: str) -> str:
        """The full field path of `key`."""
        return f"{self.where}.{key}" if self.where else key

    def problem(self, key: str, why: str) -> None:
        """Record `<field>: <why>`."""
        self.problems.append(f"{self.name(key)}: {why}")

    def has(self, key: str) -> bool:
        """Whether `key` is given."""
        return key in self.table

    def get(self, key: str) -> Any:
        """The raw value of `key` (None if absent), marking it known."""
        self._known.add(key)
        return self.table.get(key)

    def string(self, key: str, default: str | None = None, required: str | None = None) -> str | None:
        """A non-empty string; `required` is the reason given when it is missing ("" for none)."""
        value = self.get(key)
        if value is None:
            if required is not None:
                self.problem(key, ("required " + required).strip())
            return default
        if not isinstance(value, str) or not value.strip():
            self.problem(key, "must be a non-empty string")
            return default
        return value

    def choice(self, key: str, choices: Sequence[str], default: str | None) -> str | None:
        """One of `choices`; required when `default` is None."""
        value = self.string(key, required=None if default is not None else "")
        if value is None:
            return default
        if value not in choices:
            self.problem(key, f"must be one of {', '.join(choices)} (got {quote(value)})")
            return default
        return value

    def integer(self, key: str, low: int, high: int, default: int | None) -> int | None:
        """An integer in [low, high] (TOML booleans are not integers)."""
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.problem(key, f"must be an integer {low}-{high}")
            return default
        return value

    def boolean(self, key: str, default: bool) -> bool:
        """true or false."""
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problem(key, "must be true or false")
            return default
        return value

    def path(self, key: str, default: Path | None = None) -> Path | None:
        """A path; a relative one is taken from the config file's directory."""
        value = self.string(key)
        return default if value is None else self.base / Path(value).expanduser()

    def strings(self, key: str) -> tuple[str, ...]:
        """A list of non-empty strings (absent: empty)."""
        value = self.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.problem(key, "must be a list of non-empty strings")
            return ()
        return tuple(value)

    def time(self, key: str, required: bool) -> float | None:
        """An RFC 3339 time with an offset (a TOML datetime or a string), as Unix seconds."""
        value = self.get(key)
        if value is None:
            if required:
                self.problem(key, "required")
            return None
        when = _datetime(value)
        if when is None:
            self.problem(key, "must be an RFC 3339 time with an offset, e.g. 2026-01-31T18:00:00Z")
            return None
        return when.timestamp()

    def tables(self, key: str) -> list[Mapping[str, Any]]:
        """An array of tables (`[[key]]`); absent: empty."""
        value = self.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            self.problem(key, f"must be an array of tables ([[{key}]])")
            return []
        return value

    def done(self) -> None:
        """Report every key not read as unknown, suggesting a close known key."""
        for key in self.table:
            if key in self._known:
                continue
            close = difflib.get_close_matches(key, sorted(self._known), n=1, cutoff=0.7)
            hint = f" (did you mean {quote(close[0])}?)" if close else ""
            if self.where:
                self.problem(key, "unknown key" + hint)
            else:
                self.problems.append(f"unknown key {quote(key)} at top level{hint}")


def _datetime(value: Any) -> dt.datetime | None:
    """An aware datetime from a TOML datetime or an RFC 3339 string, else None."""
    if isinstance(value, str):
        try:
            text = value.strip()
            text = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text  # 3.10 lacks "Z"
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            return None
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value
    return None


def _plain(name: str) -> str:
    """A name as `unknown` compares it: lower case, letters and digits only."""
    return "".join(c for c in name.lower() if c.isalnum())


def unknown(kind: str, value: str, known: Sequence[str]) -> str:
    """`unknown <kind> "x"; did you mean "y"?` with the closest of `known` (or all, if none is close)."""
    plain = {_plain(name): name for name in reversed(known)}  # (the first of equals wins)
    close = difflib.get_close_matches(_plain(value), list(plain), n=1, cutoff=0.6)
    if close:
        return f"unknown {kind} {quote(value)}; did you mean {quote(plain[close[0]])}?"
    return f"unknown {kind} {quote(value)} (known: {', '.join(known)})"


def quote(value: str) -> str:
    """A value as it appears in a message: double-quoted, JSON-style escapes."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
