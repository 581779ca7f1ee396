"""The `sql` source: a gateway's usage table followed by its key, on SQLite (here), PostgreSQL and MariaDB
(real servers started by the tests, tests/db_helpers.py), read exactly once across restarts of both sides.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import Kvwatch, wait_until, write_config
from db_helpers import NEWAPI_COLUMNS, SPENDLOGS_DDL, Mariadb, Postgres, newapi_ddl, running
from prometheus_client.parser import text_string_to_metric_families

from kvwatch.config import ConfigError, load_config
from kvwatch.engines.usage.parser import UsageParser
from kvwatch.model import LogLine, UsageRecord
from kvwatch.parsers.base import ParserSettings
from kvwatch.sources.settings import SqlSettings
from kvwatch.sources.sql import SqlSource

ROOT = Path(__file__).resolve().parents[1]
T0 = 1_780_000_000


def newapi_row(i: int, prompt: int = 40000, cached: int = 17920) -> dict[str, object]:
    """A consume row as new-api's RecordConsumeLog writes it (Claude upstream: prompt_tokens is uncached)."""
    other = {"cache_tokens": cached, "claude": True, "request_path": "/v1/messages"}
    return {
        "user_id": 1,
        "created_at": T0 + i,
        "type": 2,
        "content": "secret prompt-free text",
        "username": "alice",
        "token_name": "laptop",
        "model_name": "qwen3",
        "quota": 10,
        "prompt_tokens": prompt - cached,
        "completion_tokens": 50,
        "use_time": 3,
        "is_stream": True,
        "channel_id": 4,
        "token_id": 9,
        "group": "default",
        "ip": "",
        "other": json.dumps(other),
    }


def insert_sqlite(path: Path, rows: list[dict[str, object]]) -> None:
    """Insert new-api rows into a SQLite database (one transaction)."""
    with sqlite3.connect(path) as db:
        cols = ", ".join(f'"{c}"' for c in NEWAPI_COLUMNS)
        marks = ", ".join("?" for _ in NEWAPI_COLUMNS)
        db.executemany(
            f"INSERT INTO logs ({cols}) VALUES ({marks})", [[r[c] for c in NEWAPI_COLUMNS] for r in rows]
        )


@pytest.fixture
def newapi_sqlite(tmp_path: Path) -> Path:
    """An empty new-api SQLite database (its `logs` table)."""
    path = tmp_path / "one-api.db"
    with sqlite3.connect(path) as db:
        db.execute(newapi_ddl("sqlite"))
    return path


def sqlite_settings(path: Path, **kw: object) -> SqlSettings:
    """Settings following new-api's logs by id."""
    return SqlSettings(
        **{
            "driver": "sqlite",
            "table": "logs",
            "key": ("id",),
            "database": str(path),
            "start_at": "beginning",
            "poll_interval": 1.0,
            **kw,
        }
    )  # type: ignore[arg-type]


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def records(lines: list[LogLine]) -> list[UsageRecord]:
    """What the usage parser makes of the source's lines."""
    parser = UsageParser("gw", ParserSettings(tz="UTC"))
    out = []
    for line in lines:
        result = parser.parse(line)
        assert isinstance(result, list), result
        out.extend(e for e in result if isinstance(e, UsageRecord))
    return out


def drain(source: SqlSource, clock: Clock) -> list[LogLine]:
    """Every line the source has now (polls until a batch comes back short)."""
    lines: list[LogLine] = []
    while True:
        clock.now += 1.0
        got = source.poll()
        lines += got
        if not got:
            return lines


def test_sqlite_rows_become_usage_records_once_each(newapi_sqlite: Path) -> None:
    """new-api rows in SQLite come out as usage records (cached tokens, Claude semantics), in bounded
    batches, each once across a restart."""
    insert_sqlite(newapi_sqlite, [newapi_row(i) for i in range(5)])
    clock = Clock()
    source = SqlSource("gw", sqlite_settings(newapi_sqlite, batch=2), clock=clock)
    assert source.error is None
    first = source.poll()
    assert len(first) == 2  # the batch bound
    lines = first + drain(source, clock)
    got = records(lines)
    assert [(r.time, r.prompt_tokens, r.cached_tokens, r.entry) for r in got] == [
        (T0 + i, 40000, 17920, "/v1/messages") for i in range(5)
    ]
    saved = json.loads(json.dumps(source.position()))
    source.close()
    insert_sqlite(newapi_sqlite, [newapi_row(i) for i in range(5, 8)])
    again = SqlSource("gw", sqlite_settings(newapi_sqlite), saved=saved, clock=clock)
    assert [r.time for r in records(drain(again, clock))] == [T0 + 5, T0 + 6, T0 + 7]


def test_sqlite_start_at_end_skips_what_is_there(newapi_sqlite: Path) -> None:
    """With no saved position and start_at "end", only rows added after the start are read."""
    insert_sqlite(newapi_sqlite, [newapi_row(i) for i in range(3)])
    clock = Clock()
    source = SqlSource("gw", sqlite_settings(newapi_sqlite, start_at="end"), clock=clock)
    assert drain(source, clock) == []
    insert_sqlite(newapi_sqlite, [newapi_row(9)])
    assert [r.time for r in records(drain(source, clock))] == [T0 + 9]


def test_sqlite_connection_is_read_only(newapi_sqlite: Path) -> None:
    """The source's connection cannot write, and a missing database is a clear error, not an exception."""
    from kvwatch.sources.sql import connect

    conn = connect(sqlite_settings(newapi_sqlite))
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM logs")
    conn.close()
    clock = Clock()
    source = SqlSource("gw", sqlite_settings(newapi_sqlite.parent / "missing.db"), clock=clock)
    assert source.poll() == []
    assert source.error is not None and "missing.db" in source.error


def write_sql_config(tmp_path: Path, body: str) -> Path:
    """A config with one sql source (engine usage) and `body`'s keys."""
    text = f'[[source]]\nname = "gw"\nengine = "usage"\ntype = "sql"\n{body}'
    return write_config(tmp_path / "kvwatch.toml", text)


def test_config_refuses_a_password_in_the_text_and_bad_names(tmp_path: Path) -> None:
    """A password in the config text and a table name that is not a plain identifier are refused by field."""
    path = write_sql_config(
        tmp_path,
        'driver = "postgresql"\ndatabase = "newapi"\ntable = "logs; drop"\nkey = "id"\n'
        'password = "hunter2"\n',
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = str(err.value)
    assert "source[0].password: not read from the config text" in text
    assert "source[0].table:" in text
    assert "hunter2" not in text


def test_check_config_connects_and_says_what_it_sees(tmp_path: Path, newapi_sqlite: Path) -> None:
    """check-config connects to the table and names its shape, its key and the newest row."""
    insert_sqlite(newapi_sqlite, [newapi_row(i) for i in range(3)])
    path = write_sql_config(
        tmp_path, f'driver = "sqlite"\ndatabase = "{newapi_sqlite}"\ntable = "logs"\nkey = "id"\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "kvwatch", "check-config", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "recognised as: new-api logs" in done.stdout
    assert "newest row: id=3" in done.stdout


# ---------------------------------------------------------------------------------------------------
# Real servers, a real daemon.


def usage_total(kv: Kvwatch, name: str = "kvwatch_usage_requests_total") -> float:
    """A usage counter of source gw, summed over its other labels."""
    _, _, body = kv.get("/metrics")
    return sum(
        s.value
        for f in text_string_to_metric_families(body)
        for s in f.samples
        if s.name == name and s.labels.get("source") == "gw"
    )


def usage_requests(kv: Kvwatch) -> float:
    """kvwatch_usage_requests_total of source gw."""
    return usage_total(kv)


def ready_text(kv: Kvwatch) -> str:
    """The body of /-/ready."""
    with urllib.request.urlopen(kv.url + "/-/ready", timeout=10) as resp:
        return str(resp.read().decode())


def follow_through_restarts(
    tmp_path: Path, config_body: str, server: Postgres | Mariadb, insert: object
) -> None:
    """Rows written while kvwatch runs are counted once each, through a database crash and restart and
    a kvwatch restart; while the database is down the source is down and /-/ready says so."""
    write = insert  # (ids) -> None
    path = write_sql_config(tmp_path, config_body)
    write(range(0, 3))  # type: ignore[operator]
    kv = Kvwatch(["--config", str(path)], tmp_path / "kv.log")
    wait_until(lambda: kv.value("kvwatch_source_up", {"source": "gw"}) == 1, 30, "source up")
    write(range(3, 6))  # type: ignore[operator]  (start_at = "end": only these)
    wait_until(lambda: usage_requests(kv) == 3, 30, "3 rows read")
    server.stop()
    wait_until(lambda: kv.value("kvwatch_source_up", {"source": "gw"}) == 0, 60, "source down")
    assert "down" in ready_text(kv) and "gw" in ready_text(kv)
    server.start()
    write(range(6, 10))  # type: ignore[operator]
    wait_until(lambda: usage_requests(kv) == 7, 90, "7 rows read after the database restart")
    assert kv.value("kvwatch_source_up", {"source": "gw"}) == 1
    assert kv.stop() == 0
    write(range(10, 12))  # type: ignore[operator]
    kv = Kvwatch(["--config", str(path)], tmp_path / "kv.log")
    wait_until(lambda: usage_requests(kv) == 2, 30, "the 2 rows written while kvwatch was stopped")
    write(range(12, 13))  # type: ignore[operator]
    wait_until(lambda: usage_requests(kv) == 3, 30, "1 more")
    assert usage_total(kv, "kvwatch_usage_cached_tokens_total") == 3 * 17920
    assert kv.stop() == 0
    log = (tmp_path / "kv.log").read_text()
    assert "hunter2" not in log


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[Postgres]:
    """A running PostgreSQL with new-api's logs and LiteLLM's spend logs, and a read-only role `kvwatch`."""
    server = Postgres(tmp_path / "pg")
    with running(server):
        server.sql("CREATE DATABASE gateway")
        server.sql(newapi_ddl("postgresql"), "gateway")
        server.sql(SPENDLOGS_DDL, "gateway")
        server.sql("CREATE ROLE kvwatch LOGIN PASSWORD 'hunter2'", "gateway")
        server.sql('GRANT SELECT ON logs, "LiteLLM_SpendLogs" TO kvwatch', "gateway")
        yield server  # type: ignore[misc]


@pytest.mark.slow
def test_postgres_newapi_logs_exactly_once_through_restarts(tmp_path: Path, postgres: Postgres) -> None:
    """PostgreSQL: new-api's logs followed by id through a database crash and a kvwatch restart, once each."""
    (tmp_path / "pw").write_text("hunter2\n")

    def insert(ids: range) -> None:
        values = []
        for i in ids:
            row = newapi_row(i)
            vals = ", ".join("'" + str(row[c]).replace("'", "''") + "'" for c in NEWAPI_COLUMNS)
            values.append(f"({vals})")
        cols = ", ".join(f'"{c}"' for c in NEWAPI_COLUMNS)
        postgres.sql(f"INSERT INTO logs ({cols}) VALUES {', '.join(values)}", "gateway")

    body = (
        f'driver = "postgresql"\nhost = "127.0.0.1"\nport = {postgres.port}\nuser = "kvwatch"\n'
        f'password_file = "{tmp_path / "pw"}"\ndatabase = "gateway"\ntable = "logs"\nkey = "id"\n'
        "poll_interval = 1\n"
    )
    follow_through_restarts(tmp_path, body, postgres, insert)


@pytest.mark.slow
def test_postgres_litellm_spendlogs_by_time_and_id(tmp_path: Path, postgres: Postgres) -> None:
    """PostgreSQL: LiteLLM_SpendLogs rows followed by (created_at, request_id) give their cached tokens;
    the role cannot write."""
    (tmp_path / "pw").write_text("hunter2\n")
    meta = {
        "status": "success",
        "usage_object": {"prompt_tokens": 4096, "prompt_tokens_details": {"cached_tokens": 3968}},
    }
    stmt = (
        'INSERT INTO "LiteLLM_SpendLogs" (request_id, call_type, prompt_tokens, "startTime", "endTime", '
        "model, "
        "model_group, metadata, created_at) VALUES "
        + ", ".join(
            f"('req-{i}', 'anthropic_messages', 4096, '2026-06-01 10:00:0{i}', '2026-06-01 10:00:0{i}', "
            f"'hosted_vllm/tiny', 'tiny', '{json.dumps(meta)}', '2026-06-01 10:00:09')"
            for i in range(4)
        )
    )
    postgres.sql(stmt, "gateway")  # (four rows with the same created_at: the request_id breaks the tie)
    settings = SqlSettings(
        driver="postgresql",
        table="LiteLLM_SpendLogs",
        key=("created_at", "request_id"),
        database="gateway",
        host="127.0.0.1",
        port=postgres.port,
        user="kvwatch",
        password_file=tmp_path / "pw",
        batch=3,
        columns=(
            "request_id",
            "created_at",
            "startTime",
            "call_type",
            "model_group",
            "prompt_tokens",
            "metadata",
        ),
        start_at="beginning",
        poll_interval=1.0,
    )
    clock = Clock()
    source = SqlSource("gw", settings, clock=clock)
    assert source.error is None
    got = records(drain(source, clock))
    assert [(r.prompt_tokens, r.cached_tokens, r.entry, r.model) for r in got] == [
        (4096, 3968, "/v1/messages", "tiny")
    ] * 4
    assert json.loads(json.dumps(source.position()))["after"][1] == "req-3"
    from kvwatch.sources.sql import connect

    conn = connect(settings)
    with pytest.raises(Exception, match=r"read-only|permission denied"):
        conn.execute('DELETE FROM "LiteLLM_SpendLogs"')
    conn.close()


@pytest.mark.slow
def test_mariadb_newapi_logs_exactly_once_through_restarts(tmp_path: Path) -> None:
    """MariaDB: new-api's logs followed by id through a database crash and a kvwatch restart, exactly once."""
    server = Mariadb(tmp_path / "mariadb")
    (tmp_path / "pw").write_text("hunter2\n")
    with running(server):
        server.sql("CREATE DATABASE newapi")
        server.sql(newapi_ddl("mysql"), "newapi")
        server.sql(
            "CREATE USER 'kvwatch'@'127.0.0.1' IDENTIFIED BY 'hunter2'; "
            "GRANT SELECT ON newapi.logs TO 'kvwatch'@'127.0.0.1'"
        )

        def insert(ids: range) -> None:
            values = []
            for i in ids:
                row = newapi_row(i)
                row["is_stream"] = 1
                vals = ", ".join("'" + str(row[c]).replace("'", "''") + "'" for c in NEWAPI_COLUMNS)
                values.append(f"({vals})")
            cols = ", ".join(f"`{c}`" for c in NEWAPI_COLUMNS)
            server.sql(f"INSERT INTO logs ({cols}) VALUES {', '.join(values)}", "newapi")

        body = (
            f'driver = "mysql"\nhost = "127.0.0.1"\nport = {server.port}\nuser = "kvwatch"\n'
            f'password_file = "{tmp_path / "pw"}"\ndatabase = "newapi"\ntable = "logs"\nkey = "id"\n'
            "poll_interval = 1\n"
        )
        follow_through_restarts(tmp_path, body, server, insert)
