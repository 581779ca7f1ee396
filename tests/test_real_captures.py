"""The committed real captures (samples/README.real.md) say what their runs did, beyond matching goldens."""

from __future__ import annotations

import json
import re

import pytest
from corpora import SAMPLES
from test_golden import golden_of

from kvwatch.cli import main


def replay(name: str, capsys: pytest.CaptureFixture[str]) -> str:
    """`kvwatch replay --format golden` of a sample."""
    assert 0 == main(["replay", "--format", "golden", "--year", "2026", str(SAMPLES / name)])
    return capsys.readouterr().out


def total(golden: str, metric: str) -> float:
    """The sum of a metric's samples in a golden."""
    return sum(float(v) for v in re.findall(rf"^{metric}{{[^}}]*}} (\S+)$", golden, re.M))


def test_lmcache_engine_capture_agrees_with_its_driver(capsys: pytest.CaptureFixture[str]) -> None:
    """LMCache's real log: the loads kvwatch reads are what the engine's API returned, none a failure."""
    ops = json.loads((SAMPLES / "lmcache-0.5.6-real-engine.truth.json").read_text())
    out = replay("lmcache-0.5.6-real-engine.log", capsys)
    loads = [op for op in ops if op["op"] == "retrieve"]
    assert sum(op["retrieved"] for op in loads) == total(out, "kvwatch_lmcache_retrieved_tokens_total")
    assert sum(op["tokens"] for op in loads) == total(out, "kvwatch_lmcache_retrieve_required_tokens_total")
    assert 0.0 == total(out, "kvwatch_lmcache_retrieve_short_total")
    assert "ALERT" not in out


@pytest.mark.parametrize(
    ("name", "fired"),
    [
        ("sglang-0.5.23-real-healthy.log", set()),
        ("sglang-0.5.23-real-nonce.log", {"prefix_reuse_broken"}),
        ("sglang-0.5.23-real-restart.log", {"prefix_cache_disabled"}),
    ],
)
def test_sglang_captures_fire_what_their_runs_did(name: str, fired: set[str]) -> None:
    """The healthy capture fires nothing; the nonce one `prefix_reuse_broken`; the restart without radix
    cache `prefix_cache_disabled`."""
    golden = golden_of(SAMPLES / name).read_text()
    alerts = set(re.findall(r"^ALERT \S+ firing (\w+)", golden, re.M))
    assert fired <= alerts <= fired | {"pinned_cache_length"}, alerts
