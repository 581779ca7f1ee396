"""The sample makers (scripts/samples): each sample has one maker, and a rerun gives the committed bytes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from corpora import SAMPLES, sample_logs
from llama_helpers import capture  # scripts/llamacpp/capture.py: the real captures' cases
from test_golden import golden_of
from vllm_helpers import capture_vllm  # scripts/real/capture_vllm.py: the real vLLM captures' cases

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.real import capture_lmcache, capture_sglang  # noqa: E402 - the real engines' captures
from scripts.samples.makers import make_all, makers  # noqa: E402 - the makers live beside the tests

NAMED = re.compile(r"samples/([\w.-]+?\.log(?:\.\d+\.gz)?)\b")


def named_in(doc: str) -> list[str]:
    """The sample logs a maker's docstring names (`samples/NAME.log`, `samples/NAME.log.1.gz`)."""
    return NAMED.findall(doc)


def test_named_in_reads_plain_and_rotated_names() -> None:
    """Plain and gzip-rotated names are found; the README and the golden are not sample logs."""
    doc = "Makes samples/vllm-a.log, samples/vllm-rotated.log.1.gz (+ .golden), see samples/README.vllm.md."
    assert ["vllm-a.log", "vllm-rotated.log.1.gz"] == named_in(doc)


def test_every_sample_log_has_exactly_one_maker() -> None:
    """Each samples/ log is a real capture (scripts/llamacpp/, scripts/real/) or named by one maker."""
    captures = {f"llamacpp-{case.name}.log" for case in capture.CASES}
    captures |= {f"sglang-0.5.23-real-{case.name}.log" for case in capture_sglang.CASES}
    captures.add(f"{capture_lmcache.NAME}.log")
    captures |= {f"vllm-real-{case}.log" for case in capture_vllm.CASES}
    owners: dict[str, list[str]] = {}
    for maker in makers():
        assert maker.__doc__ is not None and "\n" not in maker.__doc__.strip(), maker.__name__
        for name in named_in(maker.__doc__):
            owners.setdefault(name, []).append(maker.__name__)
    logs = {log.name for log in sample_logs()}
    assert len(logs) >= 20
    assert captures <= logs
    assert {name: [] for name in sorted(logs - captures) if name not in owners} == {}
    assert {name: who for name, who in owners.items() if len(who) != 1} == {}
    assert set(owners) <= logs - captures, "a maker names a sample that is not in samples/"
    for name in owners:
        assert golden_of(SAMPLES / name).is_file(), name


def test_each_maker_makes_what_its_docstring_names() -> None:
    """A maker's make() returns exactly the samples its docstring names (plus no other log)."""
    for maker in makers():
        made = [m.name for m in maker.make() if not m.name.endswith(".md")]
        assert sorted(named_in(maker.__doc__ or "")) == sorted(made), maker.__name__


def test_regenerating_gives_the_committed_samples(tmp_path: Path) -> None:
    """`python -m scripts.samples --out DIR` writes, byte for byte, the committed samples and READMEs."""
    done = subprocess.run(
        [sys.executable, "-m", "scripts.samples", "--out", str(tmp_path), "--quiet"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 0 == done.returncode, done.stderr
    written = sorted(p.name for p in tmp_path.iterdir())
    assert sorted(m.name for m in make_all()) == written
    assert "README.vllm.md" in written
    differ = [name for name in written if (tmp_path / name).read_bytes() != (SAMPLES / name).read_bytes()]
    assert [] == differ, f"regenerated samples differ from samples/: {differ} (diff them against {tmp_path})"
