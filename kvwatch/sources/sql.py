"""The `sql` source: a gateway's usage table (new-api `logs`, LiteLLM `LiteLLM_SpendLogs`, any other)
followed by an increasing key, each new row handed on as one JSON line.

Every poll runs one bounded query: the rows whose key is past the last one handed out, in key order,
at most `batch` of them (`SELECT cols FROM t WHERE (k1, k2) > (:v1, :v2) ORDER BY k1, k2 LIMIT batch`).
A key is one column (new-api's `id`) or several compared as a tuple (LiteLLM's `"endTime", request_id`:
a time and a tie-breaker). `position()` is the key of the last row returned, so the daemon saves it only
once those rows are processed: a restart of kvwatch or of the database reads each row exactly once.
`start_at = "end"` with no saved position starts after the newest row present.

The connection is read-only where the database lets a session say so (PostgreSQL's
`default_transaction_read_only`, MySQL/MariaDB's `SET SESSION TRANSACTION READ ONLY`, SQLite's `mode=ro`
URI); the account itself should hold SELECT only (docs/gateways.md gives the GRANT). The password comes
from `password_file` or the systemd credential `password_credential`, never from the config text, and
never appears in an error. When the database cannot be reached, `error` says so, poll() returns nothing,
and the connection is tried again after a backoff (1 s doubling to 60 s); the key does not move, so no
row is lost.

The drivers are optional extras: `kvwatch[postgres]` (psycopg 3), `kvwatch[mysql]` (PyMySQL); SQLite is
Python's own sqlite3. A row's values become JSON: times as ISO 8601 (zone-less times stay zone-less:
the parser reads them in the source's `tz`), decimals as numbers, bytes as text.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import importlib
import json
import logging
import re
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kvwatch.model import LogLine
from kvwatch.notify.secrets import Secret
from kvwatch.sources.openfile import FileCounters
from kvwatch.sources.settings import SqlSettings

__all__ = ["SqlSource", "describe"]

log = logging.getLogger(__name__)

BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
#: Seconds a connection attempt or a query may take before the database counts as down.
TIMEOUT = 10
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


def quote(driver: str, name: str) -> str:
    """An identifier quoted for `driver` (LiteLLM's tables and columns are mixed case)."""
    if not _IDENT.fullmatch(name):
        raise ValueError(f"not a plain identifier: {name!r}")
    return f"`{name}`" if driver == "mysql" else f'"{name}"'


def connect(settings: SqlSettings, env: Mapping[str, str] | None = None) -> Any:
    """A new read-only DB-API connection; raises the driver's error (or ImportError, SecretError)."""
    s = settings
    if s.driver == "sqlite":
        uri = Path(s.database).resolve().as_uri() + "?mode=ro"
        return sqlite3.connect(uri, uri=True, timeout=TIMEOUT, check_same_thread=False)
    password = s.password(env)
    if s.driver == "postgresql":
        psycopg = importlib.import_module("psycopg")  # an optional extra: kvwatch[postgres]

        params: dict[str, Any] = {"dbname": s.database, "connect_timeout": TIMEOUT}
        params.update({k: v for k, v in (("host", s.host), ("port", s.port), ("user", s.user)) if v})
        if password is not None:
            params["password"] = password.reveal()
        params["options"] = "-c default_transaction_read_only=on"
        return psycopg.connect(autocommit=True, **params)
    pymysql = importlib.import_module("pymysql")  # an optional extra: kvwatch[mysql]

    args: dict[str, Any] = {"database": s.database, "connect_timeout": TIMEOUT, "autocommit": True}
    args["read_timeout"] = TIMEOUT * 6
    if s.host and s.host.startswith("/"):
        args["unix_socket"] = s.host
    elif s.host:
        args["host"] = s.host
    if s.port:
        args["port"] = s.port
    if s.user:
        args["user"] = s.user
    if password is not None:
        args["password"] = password.reveal()
    conn = pymysql.connect(**args)
    with conn.cursor() as cur:
        cur.execute("SET SESSION TRANSACTION READ ONLY")
    return conn


def _param(driver: str) -> str:
    """The DB-API placeholder of `driver`."""
    return "?" if driver == "sqlite" else "%s"


def select_after(
    s: SqlSettings, after: Sequence[Any] | None, limit: int, newest: bool = False
) -> tuple[str, list[Any]]:
    """The query of one batch (after `after`, in key order), or of the newest row (`newest`)."""
    cols = ", ".join(quote(s.driver, c) for c in s.columns) if s.columns else "*"
    keys = [quote(s.driver, k) for k in s.key]
    sql, params = f"SELECT {cols} FROM {quote(s.driver, s.table)}", list(after or ())
    if after is not None:
        mark = _param(s.driver)
        sql += f" WHERE ({', '.join(keys)}) > ({', '.join(mark for _ in keys)})"
    order = " DESC" if newest else ""
    sql += " ORDER BY " + ", ".join(k + order for k in keys) + f" LIMIT {int(limit)}"
    return sql, params


def jsonable(value: Any) -> Any:
    """A column's value as JSON can hold it (see the module docstring)."""
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (dict, list, str, int, float, bool)) or value is None:
        return value
    return str(value)


def _key_json(value: Any) -> Any:
    """A key value as saved in the position (times tagged, so they go back to the database as times)."""
    if isinstance(value, dt.datetime):
        return {"datetime": value.isoformat()}
    if isinstance(value, decimal.Decimal):
        return {"decimal": str(value)}
    return value


def _key_value(saved: Any) -> Any:
    """The inverse of `_key_json`."""
    if isinstance(saved, dict) and "datetime" in saved:
        return dt.datetime.fromisoformat(saved["datetime"])
    if isinstance(saved, dict) and "decimal" in saved:
        return decimal.Decimal(saved["decimal"])
    return saved


def _rows(cursor: Any) -> list[dict[str, Any]]:
    """The fetched rows as column name -> value."""
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _clean(exc: BaseException, secret: Secret | None) -> str:
    """A driver error on one line, without the password even if the driver echoed it."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if secret is not None and secret.reveal():
        text = text.replace(secret.reveal(), "<secret>")
    return f"{type(exc).__name__}: {text}"[:500]


class SqlSource:
    """One configured `sql` source; poll() returns the rows added since, as JSON lines."""

    def __init__(
        self,
        name: str,
        settings: SqlSettings,
        *,
        saved: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        connector: Callable[[SqlSettings, Mapping[str, str] | None], Any] = connect,
    ) -> None:
        """Connect now (a failure only sets `error`), resuming from `saved` when it is this table's."""
        self.name = name
        self.settings = settings
        self.counters = FileCounters()
        self.bytes_behind = 0
        self.error: str | None = None
        self.restarts = 0  # reconnections after the database went away
        self.rows = 0
        self._env, self._clock, self._connector = env, clock, connector
        self._match = {
            "driver": settings.driver,
            "database": settings.database,
            "host": settings.host,
            "port": settings.port,
            "table": settings.table,
            "key": list(settings.key),
        }
        self._after: list[Any] | None = None
        self._need_end = settings.start_at == "end"
        if saved is not None and saved.get("match") == self._match:
            after = saved.get("after")
            self._after = [_key_value(v) for v in after] if isinstance(after, list) else None
            self._need_end = False
        self._conn: Any = None
        self._backoff = BACKOFF_FIRST
        self._retry_at = 0.0
        self._next_poll = 0.0
        self._ever_connected = False
        self._full = False  # the last batch was full: poll again without waiting
        self._connect()

    @classmethod
    def from_config(cls, config: Any, saved: Mapping[str, Any] | None, markers: Any = None) -> SqlSource:
        """The daemon's factory (kvwatch.daemon.sources)."""
        return cls(config.name, config.settings, saved=saved)

    def _connect(self) -> bool:
        """Open the connection (and find the end, once, for start_at "end"); False and `error` on failure."""
        try:
            self._conn = self._connector(self.settings, self._env)
            if self._need_end:
                sql, params = select_after(self.settings, None, 1, newest=True)
                rows = self._query(sql, params)
                self._after = [rows[0][k] for k in self.settings.key] if rows else None
                self._need_end = False
        except Exception as exc:  # the driver's errors have no common base class worth naming
            self._down(exc)
            return False
        if self._ever_connected:
            self.restarts += 1
        if self.error is not None:
            log.info("sql source %s: connected to %s", self.name, self.settings.where())
        self._ever_connected = True
        self.error = None
        self._backoff = BACKOFF_FIRST
        return True

    def _down(self, exc: BaseException) -> None:
        """Close, keep the reason, and schedule the next attempt."""
        secret = None
        with contextlib.suppress(Exception):
            secret = self.settings.password(self._env)
        self.error = f"{self.settings.where()}: {_clean(exc, secret)}"
        self.close()
        self._retry_at = self._clock() + self._backoff
        self._backoff = min(BACKOFF_MAX, self._backoff * 2)

    def _query(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        """Run one query on the open connection."""
        cur = self._conn.cursor()
        try:
            cur.execute(sql, params)
            return _rows(cur)
        finally:
            cur.close()

    def poll(self) -> list[LogLine]:
        """The next batch of rows, as JSON lines; nothing while the database is down or not yet due."""
        now = self._clock()
        if self._conn is None and (now < self._retry_at or not self._connect()):
            return []
        if now < self._next_poll and not self._full:
            return []
        self._next_poll = now + self.settings.poll_interval
        sql, params = select_after(self.settings, self._after, self.settings.batch)
        try:
            rows = self._query(sql, params)
        except Exception as exc:
            self._down(exc)
            return []
        self._full = len(rows) >= self.settings.batch
        lines = []
        for row in rows:
            text = json.dumps({k: jsonable(v) for k, v in row.items()}, separators=(",", ":"))
            lines.append(LogLine(self.name, text))
            self.counters.bytes_read += len(text) + 1
        if rows:
            self._after = [rows[-1][k] for k in self.settings.key]
            self.rows += len(rows)
        return lines

    def wait(self, timeout: float) -> None:
        """Sleep until the next poll is due (at most `timeout`)."""
        due = self._retry_at if self._conn is None else self._next_poll
        if not self._full:
            time.sleep(max(0.0, min(timeout, due - self._clock())))

    def position(self) -> dict[str, Any]:
        """The key of the last row returned (None before the first), and which table it is of."""
        after = None if self._after is None else [_key_json(v) for v in self._after]
        return {"match": self._match, "after": after}

    def close(self) -> None:
        """Close the connection (poll() opens it again)."""
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
        self._conn = None


def describe(settings: SqlSettings, env: Mapping[str, str] | None = None) -> list[str]:
    """What `check-config` says of an `sql` source: connected or why not, the columns the usage parser
    needs that the table lacks, and the newest row's key (raises nothing: problems become lines)."""
    try:
        conn = connect(settings, env)
    except Exception as exc:
        secret = None
        with contextlib.suppress(Exception):
            secret = settings.password(env)
        return [f"cannot connect to {settings.where()}: {_clean(exc, secret)}"]
    try:
        cur = conn.cursor()
        sql, params = select_after(settings, None, 1, newest=True)
        cur.execute(sql, params)
        rows = _rows(cur)
        names = [d[0] for d in cur.description or ()]
        cur.close()
    except Exception as exc:
        return [f"connected to {settings.where()}, but the query failed: {_clean(exc, None)}"]
    finally:
        with contextlib.suppress(Exception):
            conn.close()
    lines = [f"connected to {settings.where()} (read-only): {len(names)} columns: {', '.join(names)}"]
    missing = [k for k in settings.key if k not in names]
    shape = known_shape(names)
    if missing:
        lines.append(f"  key column(s) missing: {', '.join(missing)}")
    lines.append(
        f"  recognised as: {shape}"
        if shape
        else "  not a new-api `logs` or LiteLLM `LiteLLM_SpendLogs` table: give a [source.usage] mapping"
    )
    if rows:
        key = ", ".join(f"{k}={jsonable(rows[0].get(k))}" for k in settings.key)
        lines.append(f"  newest row: {key}")
    else:
        lines.append("  the table is empty")
    return lines


#: The columns the usage parser reads of each table it knows by itself.
KNOWN_TABLES = {
    "new-api logs": ("created_at", "type", "model_name", "prompt_tokens", "other"),
    "LiteLLM_SpendLogs": ("startTime", "call_type", "prompt_tokens", "metadata", "model_group"),
}


def known_shape(columns: Sequence[str]) -> str | None:
    """Which gateway table the columns are, if any."""
    for shape, needed in KNOWN_TABLES.items():
        if all(c in columns for c in needed):
            return shape
    return None
