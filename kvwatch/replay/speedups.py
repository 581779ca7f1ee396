"""The replay room's one door: which accelerators a replay uses, and the one switch that turns them off.

A replay is the pipeline run over whole files (kvwatch.replay.driver); everything else in this package
only makes it sooner, never different: a big file framed and parsed in a forked child while the parent
runs metrics and detectors (kvwatch.replay.forked), a dense read handed to the parser as one text,
LMCache's records crossing undecoded and read in runs (by a compiled loop where one was built), a
parser's commonest lines read a quicker way (`ParserSettings.fast_paths`: vLLM's stats and KV Transfer
lines, Ollama's journald prefixes).
`Speedups` says which are on; the driver asks it and nothing else. With `KVWATCH_REPLAY_PLAIN=1` in the
environment every one is off: one process, each line framed and parsed on its own, and the output byte
for byte the same (tests/test_replay_plain.py holds that on every sample).
"""

from __future__ import annotations

import ast
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

#: The environment variable that turns every accelerator off (any value but empty or `0`).
SWITCH = "KVWATCH_REPLAY_PLAIN"

#: Where kvwatch's modules are: each compiled loop (setup.py) has a type stub beside it, whose
#: docstring says what it is.
PACKAGE = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Speedups:
    """Which accelerators a replay uses (the defaults: every one, where it pays)."""

    #: A file at least this big is framed and parsed in a forked child (None: never a child).
    fork_bytes: int | None = 32 << 20
    #: The same for a dense plain log (nearly every line parsed), whose child pays sooner.
    dense_fork_bytes: int | None = 8 << 20
    #: A dense plain read goes to the parser as one text (its parse_text or parse_block).
    blocks: bool = True
    #: LMCache's records in a json-file log cross to the parser undecoded, read in runs.
    raw_runs: bool = True
    #: Parsers read their commonest lines a quicker way (kvwatch.parsers.base.ParserSettings.fast_paths).
    parser_fast_paths: bool = True

    @property
    def any(self) -> bool:
        """Whether any accelerator is on."""
        return self != PLAIN


#: Every accelerator off: what `KVWATCH_REPLAY_PLAIN=1` gives.
PLAIN = Speedups(
    fork_bytes=None, dense_fork_bytes=None, blocks=False, raw_runs=False, parser_fast_paths=False
)


def chosen() -> Speedups:
    """The accelerators of a replay started now: every one, unless the switch turns them off."""
    return PLAIN if os.environ.get(SWITCH, "") not in ("", "0") else Speedups()


def built() -> dict[str, bool]:
    """Each compiled loop kvwatch may have been built with (by what it is) and whether this install has
    it (a stub with no module beside it: not compiled)."""
    found = {}
    for stub in sorted(PACKAGE.rglob("*.pyi")):
        name = ".".join(("kvwatch", *stub.relative_to(PACKAGE).with_suffix("").parts))
        what = ast.get_docstring(ast.parse(stub.read_text(encoding="utf-8"))) or name
        found[what] = importlib.util.find_spec(name) is not None
    return found


def uncompiled(speedups: Speedups) -> str | None:
    """What a replay that reads runs lacks where this install has no compiled loop (None: it has them)."""
    missing = [what for what, have in built().items() if not have]
    if not missing or not speedups.raw_runs:
        return None
    return (
        f"{' and '.join(missing)} not compiled in this install (no C compiler when it was installed): "
        "the same output, about twice the time; `kvwatch --version` says what is built"
    )


def describe() -> str:
    """One paragraph for `kvwatch --version`: the accelerators in use and the switch that turns them off."""
    if not chosen().any:
        return f"replay accelerators: off ({SWITCH} is set)"
    compiled = ", ".join(
        f"{what}: {'compiled' if have else 'not compiled (pure Python; reinstall with a C compiler)'}"
        for what, have in built().items()
    )
    return (
        "replay accelerators: a forked child per big file, dense reads parsed whole, LMCache's records "
        "read in runs, the commonest lines of vLLM and Ollama read a quicker way; "
        f"{compiled}. {SWITCH}=1 turns them all off (same output, slower)"
    )
