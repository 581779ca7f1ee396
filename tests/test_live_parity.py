"""The live daemon reading every sample log gives the metrics `kvwatch replay` gives for it.

One daemon follows each plain sample (text, docker json-file) as a `file` source with `engine = auto`,
from its beginning; each sample's replay is the reference. Compared: every kvwatch_* sample labelled
with the source, except the reader's own `kvwatch_source_*` counters, the `*_timestamp_seconds` gauges
and `kvwatch_alert_firing`: a daemon with nothing new to read judges its alerts at the wall clock's
time (a log months old has no signal now), replay at the log's last line. The docker sample is also
piped to `--stdin` (as json-file entries and as `docker logs -t` output) and followed as a container's
log by a `docker` source.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from corpora import sample_logs
from daemon_helpers import ROOT, Kvwatch, wait_until, write_config
from prometheus_client.parser import text_string_to_metric_families

from kvwatch.cli import main
from kvwatch.daemon.sources import QUIET

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
LOGS = sample_logs(rotated=False)


def compared(exposition: str) -> Samples:
    """The samples this test compares, by name and labels; values to 14 significant digits (a float
    sum, such as LMCache's store seconds, differs in its last bits by where the daemon's syncs ended a
    stretch of sums; whole counts up to 1e14 stay exact)."""
    out: Samples = {}
    for family in text_string_to_metric_families(exposition):
        for s in family.samples:
            if (
                s.name.startswith("kvwatch_")
                and "source" in s.labels
                and not s.name.startswith(("kvwatch_source_", "kvwatch_alert_firing"))
                and "timestamp" not in s.name
            ):
                out[(s.name, tuple(sorted(s.labels.items())))] = float(f"{s.value:.14g}")
    return out


@pytest.mark.slow
def test_every_sample_log_followed_live_gives_the_metrics_replay_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Same counters, gauges and histograms per source, live as in replay."""
    assert len(LOGS) >= 20
    expected: Samples = {}
    for log in LOGS:
        assert 0 == main(["replay", "--format", "prom", "--year", "2026", "--source", log.stem, str(log)])
        expected.update(compared(capsys.readouterr().out))
    body = "".join(
        f'[[source]]\nname = "{log.stem}"\nengine = "auto"\ntype = "file"\npath = "{log}"\n'
        'start_at = "beginning"\nyear = 2026\n'
        for log in LOGS
    )
    kv = Kvwatch(["--config", str(write_config(tmp_path / "kv.toml", body))], tmp_path / "kv.err")
    lines = {key: value for key, value in expected.items() if key[0] == "kvwatch_lines_total"}
    assert len(LOGS) == len(lines)

    def caught_up() -> bool:
        # Every line read, and every figure there: sums a parser holds back (LMCache's in a carrier's
        # log) reach the metrics at the daemon's next sync, one sync after their lines at most.
        live = compared(kv.get("/metrics")[2])
        return all(live.get(key) == value for key, value in expected.items())

    # (a log the detection rule leaves undecided until its end, llama.cpp's or an LMCache MP server's
    # shorter than the rule's head, is decided once quiet: QUIET seconds, then the next sync)
    wait_until(caught_up, 15 + 2 * QUIET, what="every sample read")
    live = compared(kv.get("/metrics")[2])
    assert 0 == kv.stop()
    for log in LOGS:  # (per source: a difference names its sample)
        mine = {key: value for key, value in live.items() if dict(key[1])["source"] == log.stem}
        theirs = {key: value for key, value in expected.items() if dict(key[1])["source"] == log.stem}
        assert theirs == mine, log.name


def logs_t(json_file: Path) -> bytes:
    """`docker logs -t` output of a json-file log (entry by entry: a cut line keeps its glued stamps)."""
    out = []
    for line in json_file.read_bytes().splitlines():
        entry = json.loads(line)
        out.append(f"{entry['time']} {entry['log']}".encode())
    return b"".join(out)


@pytest.mark.parametrize("framing", ["docker-json", "docker-t"])
def test_a_docker_log_piped_to_stdin_gives_the_metrics_replay_gives(
    framing: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tail -F <id>-json.log | kvwatch run --stdin`, or `docker logs -t -f`: read as replay reads it."""
    log = tmp_path / "vllm.log"
    sample = ROOT / "samples" / "vllm-docker.log"
    log.write_bytes(sample.read_bytes() if framing == "docker-json" else logs_t(sample))
    assert 0 == main(["replay", "--format", "prom", "--year", "2026", "--source", "stdin", str(log)])
    expected = compared(capsys.readouterr().out)
    assert 0 < expected[("kvwatch_vllm_stats_lines_total", (("engine", "0"), ("source", "stdin")))]
    read, write = os.pipe()
    kv = Kvwatch(["--stdin", "--engine", "vllm"], tmp_path / "kv.err", stdin=read)
    os.close(read)
    writer = threading.Thread(target=lambda: os.write(write, log.read_bytes()))
    writer.start()
    lines = ("kvwatch_lines_total", (("source", "stdin"),))
    wait_until(lambda: compared(kv.get("/metrics")[2]).get(lines) == expected[lines], what="every line")
    live = compared(kv.get("/metrics")[2])
    writer.join()
    os.close(write)  # (end of input: the daemon exits)
    assert 0 == kv.stop()
    assert expected == live


def test_a_container_followed_by_a_docker_source_gives_the_metrics_replay_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The docker sample as a container's json-file log under a docker root, engine auto."""
    from test_docker_source import Container

    sample = ROOT / "samples" / "vllm-docker.log"
    assert 0 == main(["replay", "--format", "prom", "--year", "2026", "--source", "gpu", str(sample)])
    expected = compared(capsys.readouterr().out)
    box = Container(tmp_path / "docker", "vllm", "2026-08-19T06:39:00.1Z")
    assert box.fh is not None
    box.fh.write(sample.read_bytes())
    body = (
        f'[[source]]\nname = "gpu"\ntype = "docker"\ncontainer = "vllm"\n'
        f'docker_root = "{tmp_path / "docker"}"\nstart_at = "beginning"\nyear = 2026\n'
    )
    kv = Kvwatch(["--config", str(write_config(tmp_path / "kv.toml", body))], tmp_path / "kv.err")
    lines = ("kvwatch_lines_total", (("source", "gpu"),))
    wait_until(lambda: compared(kv.get("/metrics")[2]).get(lines) == expected[lines], what="every line")
    live = compared(kv.get("/metrics")[2])
    assert 0 == kv.stop()
    assert expected == live


def long_usage_log(path: Path) -> Path:
    """A gateway usage log whose middle row is 3 MiB long (the prompt logged), its numbers at its end."""
    prompt = 'def handler(event):\n    return {"ok": True, "path": "logs\\\\today"}\n' * 48_000

    def row(second: int, prompt_tokens: int, cached: int, content: str) -> str:
        return json.dumps(
            {
                "ts": f"2026-08-20T08:00:{second:02d}Z",
                "path": "/v1/chat/completions",
                "status": 200,
                "request": {"model": "m", "messages": [{"role": "user", "content": content}]},
                "response": {
                    "model": "m",
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "prompt_tokens_details": {"cached_tokens": cached},
                    },
                },
            }
        )

    rows = [row(1, 1000, 800, "hi"), row(2, 912_345, 4_321, prompt), row(3, 2000, 1900, "again")]
    assert len(rows[1]) > 3 << 20
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.slow  # a 3 MiB line through a daemon: ~3 s
def test_a_line_past_the_cap_is_cut_and_parsed_alike_live_and_in_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 3 MiB line is cut to its head and tail, counted once, and its numbers (at its end) are read
    the same by replay and by a daemon following the file."""
    log = long_usage_log(tmp_path / "gateway.log")
    assert 0 == main(["replay", "--format", "prom", "--source", "gw", str(log)])
    expected = compared(capsys.readouterr().out)
    key = ("model", "m"), ("entry", "/v1/chat/completions"), ("source", "gw")
    labels = tuple(sorted(key))
    assert (1.0, 3.0, 915_345.0, 7_021.0) == (
        expected[("kvwatch_lines_truncated_total", (("source", "gw"),))],
        expected[("kvwatch_lines_recognized_total", (("source", "gw"),))],
        expected[("kvwatch_usage_prompt_tokens_total", labels)],
        expected[("kvwatch_usage_cached_tokens_total", labels)],
    )
    body = (
        f'[[source]]\nname = "gw"\nengine = "auto"\ntype = "file"\npath = "{log}"\nstart_at = "beginning"\n'
    )
    kv = Kvwatch(["--config", str(write_config(tmp_path / "kv.toml", body))], tmp_path / "kv.err")
    lines = ("kvwatch_lines_total", (("source", "gw"),))
    wait_until(lambda: compared(kv.get("/metrics")[2]).get(lines) == 3.0, what="the log read")
    live = compared(kv.get("/metrics")[2])
    assert 0 == kv.stop()
    assert expected == live
