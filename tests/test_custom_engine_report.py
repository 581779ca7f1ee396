"""`kvwatch replay --format text` gives a configured engine's source a figures section as a built-in
engine's: per engine its cache-rate and offload samples with the figures its patterns set, its requests
and the last of them. Expected figures are read from the logs here, by hand, not by kvwatch's code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from daemon_helpers import write_config

from kvwatch.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "custom-engines"


pytestmark = pytest.mark.usefixtures("registry")  # (tests/conftest.py)


def section(capsys: pytest.CaptureFixture[str], config: Path, log: Path) -> list[str]:
    """The lines of the one source's section after its three heading lines, up to its alerts."""
    assert 0 == main(["replay", "--config", str(config), "--format", "text", str(log)])
    report, _ = capsys.readouterr().out.split("\nalerts: ")
    return report.splitlines()[3:]


def test_kvbm_shows_each_worker_with_its_last_host_and_disk_rates(capsys: pytest.CaptureFixture[str]) -> None:
    """The example KVBM log: per worker, two samples a line (the host and the disk pattern), the last
    disk rate as prefix and the last host rate as external; no column its patterns do not set."""
    lines = re.findall(
        r"KVBM \[(worker-\d)\] Cache Hit Rates - Host: ([\d.]+)% .*?Disk: ([\d.]+)%",
        (EXAMPLES / "kvbm.log").read_text(),
    )
    workers = sorted({worker for worker, _, _ in lines})
    assert ["worker-0", "worker-1"] == workers
    expected = [["engine", "cache-rate", "samples", "prefix", "external"]]
    for worker in workers:
        mine = [(host, disk) for w, host, disk in lines if w == worker]
        host, disk = mine[-1]
        expected.append([worker, str(2 * len(mine)), f"{float(disk):.1f}%", f"{float(host):.1f}%"])
    got = section(capsys, EXAMPLES / "kvbm.toml", EXAMPLES / "kvbm.log")
    assert expected == [line.split() for line in got]


def test_trtllm_shows_each_rank_with_its_last_scheduled_requests(capsys: pytest.CaptureFixture[str]) -> None:
    """The example TensorRT-LLM log: per rank, one sample an iteration line and the last line's
    scheduled requests as running (the only figure besides throughputs its pattern sets)."""
    lines = re.findall(
        r"rank = (\d+), .*num_scheduled_requests: (\d+)", (EXAMPLES / "trtllm.log").read_text()
    )
    expected = [["engine", "cache-rate", "samples", "running"]]
    for rank in sorted({rank for rank, _ in lines}):
        mine = [scheduled for r, scheduled in lines if r == rank]
        expected.append([rank, str(len(mine)), mine[-1]])
    got = section(capsys, EXAMPLES / "trtllm.toml", EXAMPLES / "trtllm.log")
    assert expected == [line.split() for line in got]


#: A made-up server's request and offload lines.
TOY = r"""
[[engine]]
name = "toy"
markers = ["req ", "tier "]
time = { group = "t", format = "epoch" }

[[engine.pattern]]
name = "request"
event = "request"
regex = '''req t=(?P<t>[\d.]+) prompt=(?P<prompt>\d+) cached=(?P<cached>\d+)'''
fields = { prompt_tokens = "prompt", cached_tokens = "cached" }

[[engine.pattern]]
name = "tier"
event = "offload"
regex = '''tier t=(?P<t>[\d.]+) w=(?P<w>\w+) stored=(?P<s>\d+)KiB loaded=(?P<l>\d+)KiB'''
fields.store_bytes = { group = "s", unit = "KiB" }
fields.load_bytes = { group = "l", unit = "KiB" }
fields.engine = "w"
"""


def test_requests_and_offloads_of_a_configured_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Offload samples per worker with the KiB summed as bytes (no lookups column: no pattern sets it),
    workers beyond 16 sharing `other`; the requests' totals and the last 10 requests."""
    log = tmp_path / "toy.log"
    requests = [(1767225600 + i, 1000 + 100 * i, 100 * i) for i in range(12)]
    tiers = [(1767225600 + i, f"w{i % 18:02d}", 4 * (i + 1), i % 2) for i in range(36)]
    log.write_text(
        "".join(f"req t={t} prompt={p} cached={c}\n" for t, p, c in requests)
        + "".join(f"tier t={t} w={w} stored={s}KiB loaded={lo}KiB\n" for t, w, s, lo in tiers)
    )
    got = section(capsys, write_config(tmp_path / "toy.toml", TOY), log)
    rows: dict[str, list[int]] = {}
    for _, worker, stored, loaded in tiers:
        row = rows.setdefault(worker if worker in rows or len(rows) < 16 else "other", [0, 0, 0])
        row[0], row[1], row[2] = row[0] + 1, row[1] + 1024 * stored, row[2] + 1024 * loaded
    kb = lambda n: f"{n / 1000:.1f} KB" if n >= 1000 else f"{n} B"  # noqa: E731 - decimal units, as cells.size
    offloads = [["engine", "offload", "samples", "stored", "loaded"]] + [
        [w, str(n), *kb(s).split(), *kb(lo).split()]
        for w, (n, s, lo) in sorted(rows.items(), key=lambda r: (r[0] == "other", r[0]))
    ]
    assert 17 == len(offloads) - 1 and "other" == offloads[-1][0]
    assert offloads == [line.split() for line in got[: len(offloads)]]
    prompt, cached = sum(p for _, p, _ in requests), sum(c for _, _, c in requests)
    rest = got[len(offloads) :]
    assert f"  requests 12: prompt tokens {prompt}, cached {cached} ({100 * cached / prompt:.1f}%)" == rest[0]
    assert "  requests (last 10 of 12)" == rest[1]
    assert ["time", "prompt", "cached", "new", "hit", "rate"] == rest[2].split()
    last = [line.split() for line in rest[3:]]
    assert [[str(p), str(c), str(p - c), f"{100 * c / p:.1f}%"] for _, p, c in requests[2:]] == [
        cells[1:] for cells in last
    ]
    assert "2026-01-01T00:00:11Z" == last[-1][0]
