"""The config file: TOML → validated frozen dataclasses (config.types), all problems reported at once.

`load_config` raises one ConfigError listing every problem, each naming its exact field
(`source[1].container: required for type "docker"`); lists are indexed from 0; unknown keys are errors.
Relative paths are taken from the config file's directory. Notifier URLs are secrets: held as
`Secret`, never printed, never quoted in an error.
"""

from __future__ import annotations

import os
import re
import sys
import zoneinfo
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from kvwatch import DEFAULT_PORT
from kvwatch.config.alerting import read_detectors, read_notifier, read_silence
from kvwatch.config.engines import read_engines
from kvwatch.config.fields import Fields, quote
from kvwatch.config.options import read_options
from kvwatch.config.pods import read_pods
from kvwatch.config.probe import read_probe
from kvwatch.config.types import (
    DEFAULT_STATE_DIR,
    LOG_FORMATS,
    LOG_LEVELS,
    AlertingConfig,
    Config,
    ConfigError,
    LogConfig,
    LogFormat,
    LogLevel,
    NotifierConfig,
    ProbeConfig,
    ServerConfig,
)
from kvwatch.engines import choices
from kvwatch.sources.settings import (
    DEFAULT_DOCKER_ROOT,
    FOLLOW,
    SOURCE_TYPES,
    SQL_DRIVERS,
    START_AT,
    DockerSettings,
    Engine,
    FileSettings,
    Follow,
    JournaldSettings,
    SourceConfig,
    SourceSettings,
    SourceType,
    SqlSettings,
    StartAt,
    StdinSettings,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]


#: Names become labels and file names (positions, credentials): keep them plain.
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
#: A table or column an `sql` source names (quoted in the query: no other characters are allowed).
_SQL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_TYPE_KEYS: dict[str, tuple[str, ...]] = {
    "file": ("path", "start_at", "follow"),
    "docker": ("container", "docker_root", "start_at"),
    "journald": ("unit", "container_name", "directory", "file", "start_at"),
    "stdin": (),
    "pods": ("root", "select", "start_at"),
    "sql": (
        "driver",
        "database",
        "table",
        "key",
        "host",
        "port",
        "user",
        "password_file",
        "password_credential",
        "password",
        "columns",
        "batch",
        "poll_interval",
    ),
}


def load_config(path: str | Path) -> Config:
    """Read and validate the config file at `path`; ConfigError lists every problem."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(str(path), [f"cannot read: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(str(path), [f"not UTF-8 text (byte {exc.start})"]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # the message ends "(at line L, column C)"
        raise ConfigError(str(path), [f"invalid TOML: {exc}"]) from None
    return parse_config(data, path.resolve().parent, path)


def default_state_dir(env: Mapping[str, str] | None = None) -> Path:
    """`state_dir` when the config gives none: systemd's `$STATE_DIRECTORY` (its first entry), else
    /var/lib/kvwatch."""
    given = (os.environ if env is None else env).get("STATE_DIRECTORY", "")
    first = given.split(":")[0]
    return Path(first) if first.startswith("/") else DEFAULT_STATE_DIR


def parse_config(
    data: Mapping[str, Any], base: Path, path: Path | None = None, env: Mapping[str, str] | None = None
) -> Config:
    """Validate an already parsed TOML document; relative paths are taken from `base`."""
    problems: list[str] = []
    top = Fields(data, "", problems, base)
    server = _server(_table(top, "server"))
    default_dir = default_state_dir(env)
    state_dir = top.path("state_dir", default_dir)
    engines = read_engines(top)  # (registered before the sources that name them are read)
    sources = _named(top, "source", _source)
    detectors = read_detectors(top)
    notifiers = _named(top, "notifier", read_notifier)
    silences = tuple(
        read_silence(Fields(t, f"silence[{i}]", problems, base)) for i, t in enumerate(top.tables("silence"))
    )
    alerting = _alerting(_table(top, "alerting"))
    probes = _named(top, "probe", read_probe)
    log = _log(_table(top, "log"))
    top.done()
    if problems:
        raise ConfigError(str(path) if path else "config", problems)
    return Config(
        server=server,
        state_dir=state_dir or default_dir,
        sources=cast("tuple[SourceConfig, ...]", sources),
        detectors=MappingProxyType(detectors),
        notifiers=cast("tuple[NotifierConfig, ...]", notifiers),
        silences=tuple(s for s in silences if s is not None),
        alerting=alerting,
        probes=cast("tuple[ProbeConfig, ...]", probes),
        log=log,
        path=path,
        engines=engines,
    )


def _alerting(f: Fields | None) -> AlertingConfig:
    """`[alerting]`: whole seconds, each within a sane range."""
    if f is None:
        return AlertingConfig()
    default = AlertingConfig()
    values = {
        "resolve_after": f.integer("resolve_after", 0, 86400, int(default.resolve_after)),
        "repeat_interval": f.integer("repeat_interval", 60, 30 * 86400, int(default.repeat_interval)),
        "suppress_older_than": f.integer(
            "suppress_older_than", 0, 30 * 86400, int(default.suppress_older_than)
        ),
    }
    base = f.string("runbook_base_url")
    if base is not None and not base.startswith(("http://", "https://")):
        f.problem("runbook_base_url", "must be an http:// or https:// URL")
    f.done()
    seconds = {k: float(v if v is not None else 0) for k, v in values.items()}
    return AlertingConfig(**seconds, runbook_base_url=(base or default.runbook_base_url).split("#")[0])


def _log(f: Fields | None) -> LogConfig:
    """`[log]`: level and format, as `--log.level` and `--log.format` take them."""
    if f is None:
        return LogConfig()
    level = cast(LogLevel, f.choice("level", LOG_LEVELS, "info"))
    given = f.get("format") is not None  # (absent is a choice too: the journal's shape, else plain)
    fmt = cast("LogFormat | None", f.choice("format", LOG_FORMATS, None) if given else None)
    f.done()
    return LogConfig(level, fmt)


def config_for_stdin(engine: str) -> Config:
    """The config of `kvwatch run --stdin --engine ENGINE` with no file: one `stdin` source."""
    if engine not in choices():
        why = f"must be one of {', '.join(choices())} (got {quote(engine)})"
        raise ConfigError("--engine", [f"--engine: {why}"])
    source = SourceConfig("stdin", engine, "stdin", StdinSettings())
    return Config(sources=(source,))


def _table(top: Fields, key: str) -> Fields | None:
    """The sub-table `key` of the top level as Fields, None if absent or not a table."""
    value = top.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        top.problem(key, f"must be a table ([{key}])")
        return None
    return Fields(value, key, top.problems, top.base)


def _server(f: Fields | None) -> ServerConfig:
    """`[server]`."""
    if f is None:
        return ServerConfig()
    server = ServerConfig(
        listen_address=f.string("listen_address", "127.0.0.1") or "127.0.0.1",
        port=f.integer("port", 1, 65535, DEFAULT_PORT) or DEFAULT_PORT,
        web_config=f.path("web_config"),
    )
    f.done()
    return server


def _named(top: Fields, key: str, read: Any) -> tuple[Any, ...]:
    """An array of tables whose `name`s must be unique; `read(fields, name)` builds one entry."""
    seen: dict[str, int] = {}
    out = []
    for i, table in enumerate(top.tables(key)):
        f = Fields(table, f"{key}[{i}]", top.problems, top.base)
        name = f.string("name", required="")
        if name is not None and not _NAME.fullmatch(name):
            f.problem("name", f"must match {_NAME.pattern} (got {quote(name)})")
        elif name is not None and name in seen:
            f.problem("name", f"duplicate of {key}[{seen[name]}].name ({quote(name)})")
        elif name is not None:
            seen[name] = i
        entry = read(f, name or "")
        f.done()
        out.append(entry)
    return tuple(out)


def _source(f: Fields, name: str) -> SourceConfig:
    """One `[[source]]`: common keys, then the keys of its type."""
    engine = cast(Engine, f.choice("engine", choices(), "auto"))
    kind = f.choice("type", SOURCE_TYPES, None)
    year = f.integer("year", 1970, 2100, None)
    tz = f.string("tz")
    if tz is not None and not _zone_exists(tz):
        f.problem("tz", f"unknown time zone {quote(tz)}")
    settings: SourceSettings = StdinSettings()
    if kind == "file":
        settings = _file(f)
    elif kind == "docker":
        settings = _docker(f)
    elif kind == "journald":
        settings = _journald(f)
    elif kind == "pods":
        settings = read_pods(f, _start_at(f))
    elif kind == "sql":
        settings = _sql(f)
    for key in {k for keys in _TYPE_KEYS.values() for k in keys} - set(_TYPE_KEYS.get(kind or "", ())):
        if f.has(key) and kind is not None:
            f.problem(key, f"not a setting of type {quote(kind)}")
        f.get(key)  # reported above (or the type itself is wrong): not also "unknown"
    options = read_options(f, engine)
    return SourceConfig(name, engine, cast(SourceType, kind or "stdin"), settings, year, tz, options)


def _file(f: Fields) -> FileSettings:
    """The keys of a `file` source."""
    path = f.string("path", required='for type "file"') or ""
    follow = cast(Follow, f.choice("follow", FOLLOW, "all"))
    return FileSettings(str(f.base / Path(path).expanduser()) if path else "", _start_at(f), follow)


def _docker(f: Fields) -> DockerSettings:
    """The keys of a `docker` source."""
    container = f.string("container", required='for type "docker"') or ""
    root = f.path("docker_root", DEFAULT_DOCKER_ROOT) or DEFAULT_DOCKER_ROOT
    return DockerSettings(container, root, _start_at(f))


def _journald(f: Fields) -> JournaldSettings:
    """The keys of a `journald` source: exactly one of unit and container_name."""
    unit, container = f.string("unit"), f.string("container_name")
    if unit is not None and container is not None:
        f.problem("unit", "give unit or container_name, not both")
    elif unit is None and container is None and not f.has("unit") and not f.has("container_name"):
        f.problem("unit", 'required for type "journald" (or container_name)')
    directory, file = f.path("directory"), f.path("file")
    if directory is not None and file is not None:
        f.problem("directory", "give directory or file, not both")
    return JournaldSettings(unit, container, directory, file, _start_at(f))


def _sql(f: Fields) -> SqlSettings:
    """The keys of an `sql` source: which database and table, the key it is followed by, the password
    from a file or a systemd credential (never in the config text)."""
    driver = f.choice("driver", SQL_DRIVERS, None) or "sqlite"
    if f.get("password") is not None:
        f.problem("password", "not read from the config text: give password_file or password_credential")
    table = f.string("table", required='for type "sql"') or ""
    key = (
        f.strings("key") if isinstance(f.get("key"), list) else (f.string("key", required='for type "sql"'),)
    )
    columns = f.strings("columns")
    for setting, names in (("table", (table,)), ("key", key), ("columns", columns)):
        for name in names:
            if name and not _SQL_NAME.fullmatch(name):
                f.problem(setting, f"{quote(name)} is not a plain column or table name")
    if not key or not all(key):
        f.problem("key", "must name one column or a list of columns")
    if columns and not set(k for k in key if k) <= set(columns):
        f.problem("columns", "must include the key column(s)")
    if driver == "sqlite":
        database = f.path("database")
        for other in ("host", "port", "user", "password_file", "password_credential"):
            if f.has(other):
                f.problem(other, 'not a setting of driver "sqlite"')
    else:
        name = f.string("database", required=f'for driver "{driver}"')
        database = Path(name) if name else None
    file, credential = f.path("password_file"), f.string("password_credential")
    if file is not None and credential is not None:
        f.problem("password_file", "give password_file or password_credential, not both")
    return SqlSettings(
        driver=driver,
        table=table,
        key=tuple(k for k in key if k),
        database=str(database) if database is not None else "",
        host=f.string("host"),
        port=f.integer("port", 1, 65535, None),
        user=f.string("user"),
        password_file=file,
        password_credential=credential,
        columns=columns,
        batch=f.integer("batch", 1, 100_000, 500) or 500,
        poll_interval=float(f.integer("poll_interval", 1, 3600, 5) or 5),
        start_at=_start_at(f),
    )


def _start_at(f: Fields) -> StartAt:
    """Where a source with no saved position starts."""
    return cast(StartAt, f.choice("start_at", START_AT, "end"))


def _zone_exists(name: str) -> bool:
    """Whether `name` is a known IANA time zone."""
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True
