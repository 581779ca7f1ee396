"""The tests' sample corpora, defined once: which files under samples/ are "the sample logs".

A sample log is a file named `NAME.log` (plain text or docker json-file) or `NAME.log.N.gz` (a rotated,
gzip-compressed one). Anything else in samples/ is not one: goldens, truth files and READMEs beside
the logs, and whatever Python, pytest or an editor leaves there (`__pycache__/`, `.pytest_cache/`,
`*.swp`). Every test that lists samples asks this module, so what a run leaves in the checkout never
changes what the next run tests.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"

#: A sample log's name: `NAME.log`, or `NAME.log.N.gz` where rotated (N the rotation's number).
LOG_NAME = re.compile(r"[A-Za-z0-9][\w.-]*?\.log(?:\.\d+\.gz)?")


def sample_logs(prefix: str = "", *, rotated: bool = True) -> list[Path]:
    """The sample logs whose names start with `prefix`, sorted by name (`rotated=False`: only `NAME.log`)."""
    if not SAMPLES.is_dir():
        return []
    return sorted(
        path
        for path in SAMPLES.iterdir()
        if path.is_file()
        and path.name.startswith(prefix)
        and LOG_NAME.fullmatch(path.name)
        and (rotated or path.name.endswith(".log"))
    )


def sample(name: str) -> Path:
    """The sample log called `name` (e.g. `vllm-docker.log`); a missing one fails here, named."""
    path = SAMPLES / name
    assert LOG_NAME.fullmatch(name) and path.is_file(), f"no sample log {name} in {SAMPLES}"
    return path


def truth_captures() -> list[Path]:
    """The sample logs captured from a real llama-server with a `NAME.truth.json` of what was sent."""
    return [
        log for log in sample_logs("llamacpp-", rotated=False) if log.with_suffix(".truth.json").is_file()
    ]
