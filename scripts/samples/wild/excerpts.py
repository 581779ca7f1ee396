"""Makes samples/wild-lmcache-in-sglang.log, samples/wild-ollama-2024-gin-year.log, samples/wild-sglang-0.1-one-line.log (+ .golden)."""  # noqa: E501

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from scripts.samples.made import Made

WILD = Path(__file__).resolve().parents[3] / "tests" / "wild"


@dataclass(frozen=True)
class Excerpt:
    """One sample: the real excerpt it is, and the class of lines it stands for."""

    sample: str
    excerpt: str
    what: str


EXCERPTS = (
    Excerpt(
        "wild-lmcache-in-sglang.log",
        "lmcache-in-sglang",
        "LMCache carried by SGLang (its SGLang adapter's `LMCache retrieve started: lookup=…, offset=…, "
        "retrieve N new tokens` and `Stored N out of total M tokens` among SGLang's batch lines): a layer "
        "declared once, read in any carrier, without `--engine`",
    ),
    Excerpt(
        "wild-ollama-2024-gin-year.log",
        "ollama-2024-gin-year",
        "Ollama's access lines `[GIN] 2024/11/14 - 09:35:29 | 200 | …` keep their own year (not the "
        "current one), among the 2024 cgo runner's lines",
    ),
    Excerpt(
        "wild-sglang-0.1-one-line.log",
        "sglang-0.1-one-line",
        "one line, pasted bare, of an unambiguous shape names the engine: SGLang before 0.1.14's `new fill "
        "batch. #seq: N. #cached_token: N. #new_token: N. … tree_cache_hit_rate: X%.`",
    ),
)

HEADER = """# Samples of line classes first met in public excerpts (`wild-*.log`)

Each of these samples is a real log excerpt that someone pasted into a public GitHub thread, line for
line: the one kept in `tests/wild/` (the corpus `tests/test_wild.py` scores), copied here so that the
class of lines it stands for has a sample and a golden like every other. Made by `python -m
scripts.samples` (maker `scripts/samples/wild/excerpts.py`); `tests/wild/README.md` says how the excerpts
were taken, and the source, version and truth below are each excerpt's `truth.json`. The names start with
`wild-`, so the tests that mutate each engine's own samples leave these few lines alone.

Not every excerpt makes a sample: a sample is a log whose engine kvwatch tells and in which it reads
something. LMCache 2024's `Store skips` lines name no engine (they are read under `--engine lmcache`), and
Ollama's journald start-up lines alone are read for their engine only (the ollama-0.29 samples have that
framing already).

"""


def section(excerpt: Excerpt) -> str:
    """One sample's README section, from its excerpt's truth."""
    truth = json.loads((WILD / f"{excerpt.excerpt}.truth.json").read_text(encoding="utf-8"))
    failure = "shows a cache failure" if truth["lines_show_failure"] else "shows no cache failure"
    return (
        f"## `{excerpt.sample}`\n\n"
        f"**Class:** {excerpt.what}.\n\n"
        f"- source: {truth['source']} (`tests/wild/{excerpt.excerpt}.log`)\n"
        f"- version: {truth['version']}\n"
        f"- truth: the excerpt {failure}; {truth['note']}\n"
    )


def make() -> list[Made]:
    """The samples and samples/README.wild.md."""
    made = [
        Made(e.sample, (WILD / f"{e.excerpt}.log").read_bytes(), f"{e.sample}: tests/wild/{e.excerpt}.log")
        for e in EXCERPTS
    ]
    readme = HEADER + "\n".join(section(e) for e in EXCERPTS)
    return [*made, Made("README.wild.md", readme.encode("utf-8"))]
