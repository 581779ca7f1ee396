"""The sample corpus (tests/corpora.py): the logs in samples/, whatever else a run leaves there."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import corpora
import pytest
from corpora import LOG_NAME, sample_logs


@pytest.mark.parametrize(
    "name, log",
    [
        ("vllm-docker.log", True),
        ("vllm-rotated.log.1.gz", True),
        ("vllm-rotated.golden", False),
        ("README.vllm.md", False),
        ("llamacpp-jsonl.truth.json", False),
        ("__init__.py", False),
        ("__pycache__", False),
        (".pytest_cache", False),
        (".vllm-docker.log.swp", False),
        ("vllm-docker.log~", False),
        ("vllm-rotated.log.1.gz.tmp", False),
    ],
)
def test_a_sample_log_is_named_name_log_or_name_log_n_gz(name: str, log: bool) -> None:
    """`NAME.log` and `NAME.log.N.gz` are sample logs; goldens, READMEs, caches and editor files are not."""
    assert log == bool(LOG_NAME.fullmatch(name))


def test_what_python_and_pytest_leave_in_samples_changes_no_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Importing samples/ as a package (its __pycache__) and a cache folder add nothing to the corpus."""
    copy = tmp_path / "samples"
    copy.mkdir()
    (copy / "__init__.py").write_text('"""data"""\n')
    (copy / "vllm-a.log").write_text("x\n")
    (copy / "vllm-a.golden").write_text("x\n")
    (copy / "vllm-b.log.1.gz").write_bytes(gzip.compress(b"x\n"))
    monkeypatch.setattr(corpora, "SAMPLES", copy)
    before = sample_logs()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(  # as `kvwatch demo` does in a user's environment: bytecode written
        [sys.executable, "-c", "import samples"], cwd=copy.parent, env=env, capture_output=True, check=False
    )
    assert 0 == done.returncode, done.stderr
    assert (copy / "__pycache__").is_dir()
    (copy / ".pytest_cache").mkdir()
    (copy / ".pytest_cache" / "README.md").write_text("x\n")
    assert ["vllm-a.log", "vllm-b.log.1.gz"] == [p.name for p in before] == [p.name for p in sample_logs()]
    assert ["vllm-a.log"] == [p.name for p in sample_logs(rotated=False)]


def test_the_repository_has_its_samples() -> None:
    """The real corpus is not empty: every engine's samples and the rotated gzip one are found."""
    names = [p.name for p in sample_logs()]
    assert len(names) >= 40
    assert "vllm-rotated.log.1.gz" in names
    for engine in ("vllm-", "llamacpp-", "lmcache-", "sglang-", "ollama-", "lmstudio-", "usage-"):
        assert sample_logs(engine), engine
