"""Bad input end to end: never a crash, never a wrong metric; each case counted or ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvwatch.cli import main

GOOD = (
    "(APIServer pid=1) INFO 08-18 01:22:08 [loggers.py:310] Engine 000: Avg prompt throughput: 3.0 "
    "tokens/s, Avg generation throughput: 1.0 tokens/s, Running: 9 reqs, Waiting: 0 reqs, GPU KV cache "
    "usage: 31.2%, Prefix cache hit rate: 86.9%"
)


def replay_json(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, float]:
    """Replay one file; return {sample name: value} of the unlabelled-by-engine view."""
    assert 0 == main(["replay", "--format", "json", "--year", "2026", str(path)])
    body = json.loads(capsys.readouterr().out)["metrics"]
    return {name: series[0]["value"] for name, series in body.items() if series}


def test_plain_file_with_every_kind_of_garbage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """nan, inf, 1e400, negative, non-UTF-8, a torn line and a 10 MB line: one good stats line survives."""
    path = tmp_path / "bad.log"
    lines = [
        GOOD.replace("86.9%", "nan%").encode(),
        GOOD.replace("3.0 tokens/s", "inf tokens/s").encode(),
        GOOD.replace("3.0 tokens/s", "1e400 tokens/s").encode(),
        GOOD.replace("31.2%", "-5.0%").encode(),
        b"\xff\xfe\xfd throughput: \x80",
        GOOD[:120].encode(),  # torn
        b"throughput: " + b"9" * (10 << 20),  # 10 MB
        GOOD.encode(),
    ]
    path.write_bytes(b"\n".join(lines))  # and no final newline
    metrics = replay_json(capsys, path)
    assert (8, 1, 1, 0.869) == (
        metrics["kvwatch_lines_total"],
        metrics["kvwatch_vllm_stats_lines_total"],
        metrics["kvwatch_lines_truncated_total"],
        metrics["kvwatch_vllm_prefix_cache_hit_ratio"],
    )
    assert metrics["kvwatch_parse_errors_total"] >= 5


def test_docker_file_with_foreign_json_and_cut_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON that is not docker's and an entry cut by the end of the file are parse errors, nothing else."""
    entry = json.dumps({"log": GOOD + "\n", "stream": "stdout", "time": "2026-08-18T01:22:08.5Z"})
    path = tmp_path / "c-json.log"
    path.write_text(entry + "\n" + '{"msg": "throughput: 1"}\n' + entry[:60])
    metrics = replay_json(capsys, path)
    assert (3, 2, 1) == (
        metrics["kvwatch_lines_total"],
        metrics["kvwatch_parse_errors_total"],
        metrics["kvwatch_vllm_stats_lines_total"],
    )
