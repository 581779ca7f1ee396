"""The config's `[[engine]]` tables: engines defined by configuration, read,
checked and added to the registry before the sources that name them are read."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvwatch.config.fields import Fields
from kvwatch.config.types import ConfigError
from kvwatch.engines import configure

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]


def read_engines(top: Fields) -> tuple[Any, ...]:
    """Every `[[engine]]` of the config, registered; problems recorded with their field."""
    return configure(top.tables("engine"), top.problems)


def load_engines(path: str | Path) -> tuple[Any, ...]:
    """Only the `[[engine]]` tables of a config file, registered (`kvwatch replay --config`)."""
    path = Path(path)
    try:
        data: Mapping[str, Any] = tomllib.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ConfigError(str(path), [f"cannot read: {exc.strerror or exc}"]) from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(str(path), [f"invalid TOML: {exc}"]) from None
    problems: list[str] = []
    specs = read_engines(Fields(data, "", problems, path.parent))
    if problems:
        raise ConfigError(str(path), problems)
    return specs
