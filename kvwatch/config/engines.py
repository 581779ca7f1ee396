"""The config's `[[engine]]` tables: engines defined by configuration (kvwatch.engines.custom), read,
checked and added to the registry before the sources that name them are read."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvwatch.config.fields import Fields
from kvwatch.config.types import ConfigError
from kvwatch.engines import BUILTIN, register_configured
from kvwatch.engines.custom import make_engine
from kvwatch.engines.custom.spec import EngineSpec, read_engine

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]


def read_engines(top: Fields) -> tuple[EngineSpec, ...]:
    """Every `[[engine]]` of the config, registered; problems recorded with their field."""
    specs: list[EngineSpec] = []
    seen: set[str] = set()
    for i, table in enumerate(top.tables("engine")):
        spec = read_engine(table, f"engine[{i}]", top.problems, BUILTIN)
        if spec is None:
            continue
        if spec.name in seen:
            top.problems.append(f"engine[{i}].name: {spec.name!r} is defined twice")
            continue
        seen.add(spec.name)
        specs.append(spec)
    if len(specs) == len(top.tables("engine")):  # (a config with a bad engine registers none of them)
        for spec in specs:
            register_configured(make_engine(spec))
    return tuple(specs)


def load_engines(path: str | Path) -> tuple[EngineSpec, ...]:
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
