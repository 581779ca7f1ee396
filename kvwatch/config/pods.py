"""The keys of a `pods` source: the pod log tree and its `[[source.select]]` selectors.

A selector's namespace, pod and container are shell globs over the names in the kubelet's tree
(`<root>/<namespace>_<pod>_<uid>/<container>/<restart>.log`). Kubernetes names hold only lowercase
letters, digits, `-` and `.`, so a glob with any other character (an uppercase letter, `_`, `/`, a
space) could never match and is refused, as is a `[` never closed.
"""

from __future__ import annotations

import re

from kvwatch.config.fields import Fields, quote
from kvwatch.engines import choices
from kvwatch.sources.settings import DEFAULT_POD_LOGS, PodSelector, PodsSettings, StartAt

#: What a glob over Kubernetes names may hold: the names' characters and fnmatch's.
_GLOB = re.compile(r"[a-z0-9.*?\[\]!-]+")
_ROLE = re.compile(r"[A-Za-z0-9_.-]+")
_GLOBS = ("namespace", "pod", "container")


def read_pods(f: Fields, start_at: StartAt) -> PodsSettings:
    """The keys of a `pods` source (its `start_at` read by the caller)."""
    root = f.path("root", DEFAULT_POD_LOGS) or DEFAULT_POD_LOGS
    tables = f.tables("select")
    if not tables and not f.has("select"):
        f.problem("select", 'required for type "pods": at least one [[source.select]] naming the containers')
    selectors = []
    for index, table in enumerate(tables):
        s = Fields(table, f.name(f"select[{index}]"), f.problems, f.base)
        selectors.append(_selector(s))
        s.done()
    return PodsSettings(root, tuple(selectors), start_at)


def _selector(f: Fields) -> PodSelector:
    """One `[[source.select]]`."""
    globs = {key: _glob(f, key) for key in _GLOBS}
    engine = f.choice("engine", choices(), None) if f.has("engine") else None
    roles: list[tuple[str, str]] = []
    raw = f.get("roles")
    if raw is not None and not isinstance(raw, dict):
        f.problem(
            "roles", 'must be a table of role = "pod-name glob" (e.g. roles = { decode = "*-decode-*" })'
        )
    elif raw is not None:
        inner = Fields(raw, f.name("roles"), f.problems, f.base)
        for role in raw:
            if not _ROLE.fullmatch(role):
                inner.problem(role, f"a role must match {_ROLE.pattern}")
            pattern = _glob(inner, role, default=None)
            if pattern:
                roles.append((role, pattern))
    return PodSelector(**globs, engine=engine, roles=tuple(roles))


def _glob(f: Fields, key: str, default: str | None = "*") -> str:
    """A glob over Kubernetes names (`*` when absent); a glob that can never match is a problem."""
    value = f.string(key)
    if value is None:
        return default or ""
    if not _GLOB.fullmatch(value):
        bad = sorted({c for c in value if not _GLOB.fullmatch(c)})
        f.problem(
            key,
            f"{quote(value)} can never match: Kubernetes names hold only lowercase letters, digits, "
            f"'-' and '.' (and a glob's * ? [ ] !), not {' '.join(quote(c) for c in bad)}",
        )
    elif _unclosed(value):
        f.problem(key, f"{quote(value)} opens a '[' it never closes")
    return value


def _unclosed(glob: str) -> bool:
    """Whether a `[` of the glob has no `]` after it (fnmatch would then match it literally)."""
    depth = False
    for char in glob:
        if char == "[":
            depth = True
        elif char == "]":
            depth = False
    return depth
