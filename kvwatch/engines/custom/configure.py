"""The config's `[[engine]]` tables read into engines and registered (kvwatch.engines.configure)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kvwatch.engines.base import Engine
from kvwatch.engines.custom import make_engine
from kvwatch.engines.custom.spec import EngineSpec, read_engine


def read_engines(
    tables: Sequence[Mapping[str, Any]],
    problems: list[str],
    builtin: frozenset[str],
    register: Callable[[Engine], None],
) -> tuple[EngineSpec, ...]:
    """Every table's engine, registered when all are good; each problem recorded with its field."""
    specs: list[EngineSpec] = []
    seen: set[str] = set()
    bad = False
    for i, table in enumerate(tables):
        spec = read_engine(table, f"engine[{i}]", problems, builtin)
        if spec is None:
            bad = True
        elif spec.name in seen:
            problems.append(f"engine[{i}].name: {spec.name!r} is defined twice")
            bad = True
        else:
            seen.add(spec.name)
            specs.append(spec)
    if not bad:  # (a config with a bad engine registers none of them)
        for spec in specs:
            register(make_engine(spec))
    return tuple(specs)
