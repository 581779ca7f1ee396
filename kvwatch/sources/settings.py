"""A `[[source]]` table's values, as the sources read them: which log, where, from where on.

`kvwatch.config.load` builds them from the config file, and `kvwatch.config.types.Config` holds them with
the rest; they live here, below the config's loader, so that a source reads its settings without
importing the loader (and, through it, every engine).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from kvwatch.notify.secrets import Secret, SecretError, load_secret

Engine = str  # "auto" or a name of kvwatch.engines.ENGINES
SourceType = Literal["file", "docker", "journald", "stdin", "pods", "sql"]
StartAt = Literal["end", "beginning"]

SOURCE_TYPES: tuple[SourceType, ...] = ("file", "docker", "journald", "stdin", "pods", "sql")
#: The databases an `sql` source reads.
SQL_DRIVERS = ("sqlite", "postgresql", "mysql")
START_AT: tuple[StartAt, ...] = ("end", "beginning")
#: A file source's `follow`: every file its glob matches, or only the newest (dated log folders).
Follow = Literal["all", "newest"]
FOLLOW: tuple[Follow, ...] = ("all", "newest")

DEFAULT_DOCKER_ROOT = Path("/var/lib/docker")
DEFAULT_POD_LOGS = Path("/var/log/pods")


@dataclass(frozen=True, slots=True)
class FileSettings:
    """A `file` source: a path or a glob."""

    path: str
    start_at: StartAt = "end"
    follow: Follow = "all"


@dataclass(frozen=True, slots=True)
class DockerSettings:
    """A `docker` source: a container by name, its json-file log found under `docker_root`."""

    container: str
    docker_root: Path = DEFAULT_DOCKER_ROOT
    start_at: StartAt = "end"


@dataclass(frozen=True, slots=True)
class JournaldSettings:
    """A `journald` source: one unit or one CONTAINER_NAME; `directory`/`file` read saved journals."""

    unit: str | None = None
    container_name: str | None = None
    directory: Path | None = None
    file: Path | None = None
    start_at: StartAt = "end"


@dataclass(frozen=True, slots=True)
class PodSelector:
    """One `[[source.select]]` of a `pods` source: which containers (globs on the names in the pod log
    tree), their engine (None: the source's), and their role, told by the first of `roles`' pod-name
    globs that matches (kubelet's files carry no pod labels)."""

    namespace: str = "*"
    pod: str = "*"
    container: str = "*"
    engine: Engine | None = None
    roles: tuple[tuple[str, str], ...] = ()  # (role, pod-name glob), in the config's order


@dataclass(frozen=True, slots=True)
class PodsSettings:
    """A `pods` source: every container of a kubelet's pod log tree that a selector matches."""

    root: Path = DEFAULT_POD_LOGS
    select: tuple[PodSelector, ...] = ()
    start_at: StartAt = "end"


@dataclass(frozen=True, slots=True)
class StdinSettings:
    """The `stdin` source has no settings."""


@dataclass(frozen=True, slots=True)
class SqlSettings:
    """An `sql` source: where the table is, how it is followed, and where the password is."""

    driver: str
    table: str
    key: tuple[str, ...]
    database: str  # a file path for sqlite
    host: str | None = None  # a path: a Unix socket directory (PostgreSQL) or file (MySQL)
    port: int | None = None
    user: str | None = None
    password_file: Path | None = None
    password_credential: str | None = None
    columns: tuple[str, ...] = ()  # () = every column
    batch: int = 500
    poll_interval: float = 5.0
    start_at: str = "end"

    def password(self, env: Mapping[str, str] | None = None) -> Secret | None:
        """The password from its file or systemd credential; None when neither is given."""
        if self.password_file is None and self.password_credential is None:
            return None
        secret = load_secret(
            self.password_credential or "", file=self.password_file, env=env, setting="password"
        )
        if secret is None:
            raise SecretError(
                f"password_credential: no file $CREDENTIALS_DIRECTORY/{self.password_credential} "
                f"(systemd's LoadCredential={self.password_credential}:...)"
            )
        return secret

    def where(self) -> str:
        """Which table, for messages: never the password."""
        if self.driver == "sqlite":
            return f"sqlite {self.database} table {self.table}"
        at = self.host or "localhost"
        port = f":{self.port}" if self.port else ""
        return f"{self.driver} {self.user or ''}@{at}{port}/{self.database} table {self.table}"


SourceSettings = FileSettings | DockerSettings | JournaldSettings | PodsSettings | StdinSettings | SqlSettings


@dataclass(frozen=True, slots=True)
class SourceConfig:
    """One `[[source]]`: its name is the `source` label; `year`/`tz` complete year-less timestamps."""

    name: str
    engine: Engine
    type: SourceType
    settings: SourceSettings
    year: int | None = None
    tz: str | None = None
    #: engine name -> its options from the `[source.<name>]` table (e.g. a gateway usage log's mapping)
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
