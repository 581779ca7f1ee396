"""A `file` source reads a docker json-file log or `docker logs -t` output as replay does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from daemon_helpers import ROOT, Kvwatch, file_source, wait_until, write_config
from prometheus_client.parser import text_string_to_metric_families

from kvwatch.daemon.feed import runs_by_kind
from kvwatch.model import LogLine
from kvwatch.sources.file import FileSource
from kvwatch.times import parse_rfc3339

STATS = (
    "(APIServer pid=1) INFO 08-18 01:12:10 [loggers.py:310] Engine 001: Avg prompt throughput: 955.5 "
    "tokens/s, Avg generation throughput: 60.7 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache "
    "usage: 45.1%, Prefix cache hit rate: 92.5%, External prefix cache hit rate: 0.0%"
)


def entry(log: str, stamp: str = "2026-08-18T01:12:10.035882799Z", stream: str = "stdout") -> bytes:
    """One json-file line as moby writes it (`<>&` escaped as Go does)."""
    body = {"log": log, "stream": stream, "time": stamp}
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n").encode()


def samples(path: Path, source: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every kvwatch_vllm_* and line-count sample of a prom exposition, by name and labels."""
    out = {}
    for family in text_string_to_metric_families(path.read_text()):
        for s in family.samples:
            if s.name.startswith(("kvwatch_vllm_", "kvwatch_lines_", "kvwatch_parse_errors")):
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    assert out and all(dict(labels).get("source") == source for _, labels in out), out
    return out


def test_a_docker_json_file_source_gives_the_metrics_replay_gives(tmp_path: Path) -> None:
    """The daemon following a container's json-file log as a `file` source: what replay gives."""
    log = tmp_path / "vllm-json.log"
    shutil.copy(ROOT / "samples" / "vllm-docker.log", log)
    replayed = tmp_path / "replay.prom"
    with replayed.open("w") as out:
        argv = [sys.executable, "-m", "kvwatch", "replay", "--format", "prom", "--source", "gpu", str(log)]
        subprocess.run(argv, cwd=ROOT, stdout=out, check=True)
    expected = samples(replayed, "gpu")
    lines = expected[("kvwatch_lines_total", (("source", "gpu"),))]
    assert (
        500 < lines and 0 < expected[("kvwatch_vllm_stats_lines_total", (("engine", "0"), ("source", "gpu")))]
    )

    cfg = write_config(tmp_path / "kv.toml", file_source("gpu", log))
    kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv.err")
    wait_until(lambda: kv.lines("gpu") == lines, what=f"{lines} lines")
    live = tmp_path / "live.prom"
    live.write_text(kv.get("/metrics")[2])
    assert 0 == kv.stop()
    assert expected == samples(live, "gpu")


def test_json_file_lines_come_decoded_with_docker_time(tmp_path: Path) -> None:
    """Entries decode into their text and docker's time; a torn line is counted, not returned."""
    log = tmp_path / "c-json.log"
    log.write_bytes(
        entry(STATS + "\n")
        + b'{"log":"torn in the mid'
        + b"\n"
        + entry("a <tag> & \u00e9\n", "2026-08-18T01:12:11Z", "stderr")
    )
    source = FileSource("c", str(log), start_at="beginning")
    got = source.poll_raw()
    assert [LogLine("c", STATS, parse_rfc3339("2026-08-18T01:12:10.035882799Z"))] == got[:1]
    assert [LogLine("c", "a <tag> & \u00e9", parse_rfc3339("2026-08-18T01:12:11Z"))] == got[1:]
    assert 1 == source.counters.malformed
    assert "pending" not in source.position()


def test_a_line_docker_cut_is_joined_across_a_restart(tmp_path: Path) -> None:
    """The head of a 16 KiB-cut line read before a restart is saved, and joined with its end after."""
    log = tmp_path / "c-json.log"
    long = "non-default args: " + "x" * 20_000
    log.write_bytes(entry(long[:16384], "2026-08-18T01:00:00Z"))
    first = FileSource("c", str(log), start_at="beginning")
    assert [] == first.poll_raw()
    saved = json.loads(json.dumps(first.position()))  # (as the position store keeps it)
    assert [long[:16384]] == [e["log"] for e in saved["pending"][str(log)]]
    first.close()

    with log.open("ab") as out:
        out.write(entry(long[16384:] + "\n", "2026-08-18T01:00:00.5Z"))
        out.write(entry(STATS + "\n"))
    again = FileSource("c", str(log), saved=saved)
    got = again.poll_raw()
    assert [long, STATS] == [line.text for line in got if isinstance(line, LogLine)]
    assert parse_rfc3339("2026-08-18T01:00:00Z") == got[0].time  # type: ignore[union-attr]
    assert "pending" not in again.position()


def test_docker_logs_t_output_saved_to_a_file(tmp_path: Path) -> None:
    """`docker logs -t` lines lose their stamp to LogLine.time, as replay reads them."""
    log = tmp_path / "vllm.txt"
    log.write_text("".join(f"2026-08-18T01:12:{10 + i:02d}.5Z {STATS}\n" for i in range(3)))
    got = FileSource("t", str(log), start_at="beginning").poll()
    assert [STATS] * 3 == [line.text for line in got]
    assert [parse_rfc3339(f"2026-08-18T01:12:{10 + i:02d}.5Z") for i in range(3)] == [
        line.time for line in got
    ]


def test_a_plain_file_is_handed_over_undecoded(tmp_path: Path) -> None:
    """Plain text stays bytes (the pipeline decodes only the lines it parses)."""
    log = tmp_path / "plain.log"
    log.write_text(f"{STATS}\nanother line\n")
    source = FileSource("p", str(log), start_at="beginning")
    assert [STATS.encode(), b"another line"] == source.poll_raw()
    assert {"pattern", "files"} == source.position().keys()


def test_runs_keep_the_order_and_stamp_lines_without_a_time() -> None:
    """A poll's items become queue runs of one kind each, in order; a decoded line with no time gets
    the read time."""
    items: list[bytes | LogLine] = [b"a", b"b", LogLine("s", "c", 5.0), LogLine("s", "d"), b"e"]
    runs = list(runs_by_kind(items, 9.0))
    assert [
        ([b"a", b"b"], True),
        ([LogLine("s", "c", 5.0), LogLine("s", "d", 9.0)], False),
        ([b"e"], True),
    ] == runs


def test_lines_without_a_marker_are_counted_undecoded_as_replay_counts_them(tmp_path: Path) -> None:
    """With the parser's markers: a complete entry holding none is a count; the rest as before."""
    from kvwatch.engines.vllm.parser import VllmParser

    long = "x" * 20_000
    log = tmp_path / "c-json.log"
    log.write_bytes(
        entry("GET /health 200\n")
        + entry("GET /metrics 200\n")
        + entry(STATS + "\n")
        + entry(long[:16384])  # a cut line: its end is decoded though it holds no marker
        + entry(long[16384:] + "\n")
        + entry("a <tag> line\n")
    )
    source = FileSource("c", str(log), start_at="beginning", markers=VllmParser.markers)
    got = source.poll_raw()
    texts = [x if isinstance(x, int) else x.text for x in got]  # type: ignore[union-attr]
    assert [2, STATS, long, 1] == texts

    plain = tmp_path / "t.log"
    plain.write_text(f"2026-08-18T01:12:10Z GET /health\n2026-08-18T01:12:11Z {STATS}\n")
    logs_t = FileSource("t", str(plain), start_at="beginning", markers=VllmParser.markers)
    assert [1, STATS] == [x if isinstance(x, int) else x.text for x in logs_t.poll_raw()]  # type: ignore[union-attr]
