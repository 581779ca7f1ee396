"""Real database servers for the `sql` source tests: PostgreSQL and MariaDB started from Debian's packages
in a temporary directory (their own data directory, a Unix socket there and a free port on 127.0.0.1),
stopped and started again on demand, and the gateways' usage tables created from their own schemas.

The schemas, transcribed column for column:
* new-api `logs`: the `Log` struct of new-api's `model/log.go` (QuantumNous/new-api, commit
  00423442d4ccdcc68fc962809e2623b1ee13b63e) as GORM's AutoMigrate creates it on each database: the `Id`
  field is the auto-increment primary key, ints are bigint, strings text (MySQL: longtext), `ChannelId`'s
  column is `channel_id`.
* LiteLLM `LiteLLM_SpendLogs`: `model LiteLLM_SpendLogs` of `litellm/proxy/schema.prisma` in the litellm
  1.108.7 wheel (`pip download litellm==1.108.7 --no-deps`), as Prisma maps it to PostgreSQL (LiteLLM's
  proxy supports only PostgreSQL): String -> text, Int -> integer, Float -> double precision,
  DateTime -> timestamp(3), Json -> jsonb.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from daemon_helpers import free_port, wait_until

NEWAPI_COLUMNS = (
    "user_id",
    "created_at",
    "type",
    "content",
    "username",
    "token_name",
    "model_name",
    "quota",
    "prompt_tokens",
    "completion_tokens",
    "use_time",
    "is_stream",
    "channel_id",
    "token_id",
    "group",
    "ip",
    "other",
)


def newapi_ddl(driver: str) -> str:
    """new-api's `logs` table, as GORM creates it on `driver`."""
    if driver == "sqlite":
        ident, text, key, boolean = '"{}"', "text", "integer PRIMARY KEY AUTOINCREMENT", "numeric"
    elif driver == "postgresql":
        ident, text, key, boolean = '"{}"', "text", "bigserial PRIMARY KEY", "boolean"
    else:
        ident, text, key, boolean = "`{}`", "longtext", "bigint AUTO_INCREMENT PRIMARY KEY", "boolean"
    types = {
        "user_id": "bigint",
        "created_at": "bigint",
        "type": "bigint",
        "content": text,
        "username": f"{text} DEFAULT ''",
        "token_name": f"{text} DEFAULT ''",
        "model_name": f"{text} DEFAULT ''",
        "quota": "bigint DEFAULT 0",
        "prompt_tokens": "bigint DEFAULT 0",
        "completion_tokens": "bigint DEFAULT 0",
        "use_time": "bigint DEFAULT 0",
        "is_stream": boolean,
        "channel_id": "bigint",
        "token_id": "bigint DEFAULT 0",
        "group": text,
        "ip": f"{text} DEFAULT ''",
        "other": text,
    }
    if driver == "mysql":  # (MySQL takes no DEFAULT on a longtext before 8.0.13; GORM leaves it out)
        types = {k: v.replace(" DEFAULT ''", "") for k, v in types.items()}
    cols = ", ".join(f"{ident.format(c)} {types[c]}" for c in NEWAPI_COLUMNS)
    return f"CREATE TABLE {ident.format('logs')} ({ident.format('id')} {key}, {cols})"


#: LiteLLM_SpendLogs as Prisma creates it on PostgreSQL (schema.prisma, litellm 1.108.7).
SPENDLOGS_DDL = """CREATE TABLE "LiteLLM_SpendLogs" (
    "request_id" TEXT NOT NULL PRIMARY KEY, "call_type" TEXT NOT NULL, "api_key" TEXT NOT NULL DEFAULT '',
    "spend" DOUBLE PRECISION NOT NULL DEFAULT 0.0, "total_tokens" INTEGER NOT NULL DEFAULT 0,
    "prompt_tokens" INTEGER NOT NULL DEFAULT 0, "completion_tokens" INTEGER NOT NULL DEFAULT 0,
    "startTime" TIMESTAMP(3) NOT NULL, "endTime" TIMESTAMP(3) NOT NULL, "request_duration_ms" INTEGER,
    "completionStartTime" TIMESTAMP(3), "model" TEXT NOT NULL DEFAULT '', "model_id" TEXT DEFAULT '',
    "model_group" TEXT DEFAULT '', "custom_llm_provider" TEXT DEFAULT '', "api_base" TEXT DEFAULT '',
    "user" TEXT DEFAULT '', "metadata" JSONB DEFAULT '{}', "cache_hit" TEXT DEFAULT '',
    "cache_key" TEXT DEFAULT '', "request_tags" JSONB DEFAULT '[]', "team_id" TEXT, "organization_id" TEXT,
    "end_user" TEXT, "requester_ip_address" TEXT, "messages" JSONB DEFAULT '{}',
    "response" JSONB DEFAULT '{}',
    "session_id" TEXT, "status" TEXT, "mcp_namespaced_tool_name" TEXT, "billing_agent_id" TEXT,
    "agent_id" TEXT, "proxy_server_request" JSONB DEFAULT '{}', "litellm_call_id" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
)"""


def _as_owner(owner: str | None) -> list[str]:
    """The prefix running a server binary as `owner` (PostgreSQL refuses to run as root)."""
    # (runuser lives in /usr/sbin, which a user's bare PATH=/usr/bin:/bin does not hold)
    runuser = shutil.which("runuser", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin") or "runuser"
    return [runuser, "-u", owner, "--"] if owner else []


class Postgres:
    """A PostgreSQL 15 cluster of its own: `start()`, `stop()`, `sql(...)` as its superuser."""

    def __init__(self, root: Path) -> None:
        """initdb a cluster in a new directory beside `root`'s (the `postgres` user owns it when the tests
        run as root: pytest's own temporary directories are closed to other users); `cleanup()` removes it."""
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        assert found, "PostgreSQL is not installed: apt-get install postgresql (see the README's test deps)"
        self.bin = found[-1].parent
        self.owner = "postgres" if os.geteuid() == 0 else None
        self.root = Path(tempfile.mkdtemp(prefix="kvwatch-pg-")) if self.owner else root
        self.data, self.port = self.root / "data", free_port()
        self.superuser = self.owner or os.environ.get("USER") or "postgres"
        self.root.mkdir(parents=True, exist_ok=True)
        if self.owner:
            shutil.chown(self.root, self.owner)
        # The superuser over the socket without a password; everyone over TCP with one (scram).
        self._run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-U",
                self.superuser,
                "--no-sync",
            ]
        )

    def cleanup(self) -> None:
        """Remove the cluster's directory (stopped first)."""
        shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, argv: list[str]) -> None:
        subprocess.run([*_as_owner(self.owner), *argv], check=True, capture_output=True, cwd=self.root)

    def start(self) -> None:
        """Start it (TCP on 127.0.0.1:port, its socket in `root`) and wait until it answers."""
        opts = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            [
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.root / "log"),
                "-w",
                "-o",
                opts,
                "start",
            ]
        )

    def stop(self) -> None:
        """Stop it at once (`-m immediate`: like a crash, what a database restart does to clients)."""
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"])

    def sql(self, statement: str, database: str = "postgres") -> str:
        """Run one statement with psql as the superuser; its output."""
        argv = [
            str(self.bin / "psql"),
            "-h",
            str(self.root),
            "-p",
            str(self.port),
            "-U",
            self.superuser,
            "-d",
            database,
            "-v",
            "ON_ERROR_STOP=1",
            "-qAt",
            "-c",
            statement,
        ]
        done = subprocess.run(
            [*_as_owner(self.owner), *argv], check=True, capture_output=True, text=True, cwd=self.root
        )
        return done.stdout


class Mariadb:
    """A MariaDB server of its own: `start()`, `stop()`, `sql(...)` as root over its socket."""

    def __init__(self, root: Path) -> None:
        """mariadb-install-db a data directory under `root`."""
        assert shutil.which("mariadbd") or Path("/usr/sbin/mariadbd").exists(), (
            "MariaDB is not installed: apt-get install mariadb-server (see the README's test deps)"
        )
        self.root, self.data, self.port = root, root / "data", free_port()
        self.socket = root / "mysqld.sock"
        self.user = "root" if os.geteuid() == 0 else (os.environ.get("USER") or "root")
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={self.data}",
                f"--user={self.user}",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
            ],
            check=True,
            capture_output=True,
            cwd=root,
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it and wait until it answers on its socket."""
        server = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        self.proc = subprocess.Popen(
            [
                server,
                "--no-defaults",
                f"--datadir={self.data}",
                f"--socket={self.socket}",
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                f"--user={self.user}",
                f"--pid-file={self.root / 'mysqld.pid'}",
                f"--log-error={self.root / 'error.log'}",
                "--innodb-flush-log-at-trx-commit=2",
                "--skip-name-resolve",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self._answers, 60.0, "MariaDB answering")

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError((self.root / "error.log").read_text(errors="replace")[-2000:])
        return subprocess.run(self._client("SELECT 1"), capture_output=True, check=False).returncode == 0

    def _client(self, statement: str, database: str | None = None) -> list[str]:
        return [
            "mariadb",
            "--no-defaults",
            f"--socket={self.socket}",
            "-u",
            "root",
            "-N",
            "-B",
            *([database] if database else []),
            "-e",
            statement,
        ]

    def stop(self) -> None:
        """Kill it (SIGKILL: a crash) and wait."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self.proc = None

    def sql(self, statement: str, database: str | None = None) -> str:
        """Run statements with the mariadb client as root; the output."""
        done = subprocess.run(self._client(statement, database), check=True, capture_output=True, text=True)
        return done.stdout


@contextmanager
def running(server: Postgres | Mariadb) -> Iterator[Postgres | Mariadb]:
    """The server started, and stopped whatever happens."""
    server.start()
    try:
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError, OSError):
            server.stop()
        if isinstance(server, Postgres):
            server.cleanup()
