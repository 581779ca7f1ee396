"""`kvwatch replay` as users call it: formats, streams, exit codes, the JSON contract, promtool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import jsonschema
import pytest
from contract_helpers import check_contract_rows, check_promtool_clean
from corpora import sample_logs

from kvwatch.cli import main

ROOT = Path(__file__).resolve().parents[1]

LINES = [
    "(APIServer pid=1) INFO 08-18 01:19:47 [api_server.py:1900] vLLM API server version 0.26.0",
    "(EngineCore pid=9) INFO 08-18 01:19:48 [factory.py:62] Creating v1 connector with name: "
    "OffloadingConnector and engine_id: x",
    "(EngineCore pid=9) INFO 08-18 01:19:49 [kv_cache_utils.py:1087] GPU KV cache size: 1,000 tokens",
    "(APIServer pid=1) INFO 08-18 01:22:08 [loggers.py:310] Engine 000: Avg prompt throughput: 3.0 "
    "tokens/s, Avg generation throughput: 1.0 tokens/s, Running: 9 reqs, Waiting: 0 reqs, GPU KV cache "
    "usage: 31.2%, Prefix cache hit rate: 86.9%, External prefix cache hit rate: 0.0%",
    "(APIServer pid=1) INFO 08-18 01:22:08 [metrics.py:103] KV Transfer metrics: "
    "vllm:kv_offload_store_bytes=300",
    'INFO:     172.17.0.4:51541 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
]


def contract_dir() -> Path:
    """The contracts others rely on, kept in the repository: docs/contract."""
    return Path(__file__).resolve().parents[1] / "docs" / "contract"


@pytest.fixture
def vllm_log(tmp_path: Path) -> Path:
    """A small vLLM log file."""
    path = tmp_path / "vllm.log.1"
    path.write_text("\n".join(LINES) + "\n")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; return status, stdout, stderr."""
    status = main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_json_output_matches_the_contract(vllm_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--format json` validates against replay.schema.json and carries exposition names."""
    status, out, err = run(capsys, "replay", "--format", "json", "--year", "2026", str(vllm_log))
    body = json.loads(out)
    schema = json.loads((contract_dir() / "replay.schema.json").read_text())
    jsonschema.validate(body, schema)
    expected = [{"labels": {"engine": "0", "source": "vllm"}, "value": 300.0}]
    assert (0, "", expected) == (
        status,
        err,
        body["metrics"]["kvwatch_vllm_kv_offload_store_bytes_total"],
    )
    assert [] == body["alerts"]


def test_contract_metric_names_types_and_labels(vllm_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every vLLM and self metric of metrics.txt exists with its type and labels."""
    status, out, _ = run(capsys, "replay", "--format", "prom", "--year", "2026", str(vllm_log))
    assert check_contract_rows(out, ("kvwatch_vllm_", "kvwatch_lines", "kvwatch_parse")) > 0
    assert 0 == status


def test_promtool_check_metrics_is_clean(vllm_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`promtool check metrics` reports nothing on kvwatch's exposition, and there is no _created."""
    _, out, _ = run(capsys, "replay", "--format", "prom", "--year", "2026", str(vllm_log))
    check_promtool_clean(out)
    assert "_created" not in out


def test_missing_file_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing file: one line on stderr, nothing on stdout, exit 2."""
    status, out, err = run(capsys, "replay", str(tmp_path / "nope.log"))
    assert (2, "", 1) == (status, out, err.count("\n"))
    assert "nope.log" in err


def test_source_flag_and_merge_by_time(
    vllm_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Several files under one `--source` are one timeline; the later gauge value wins."""
    later = tmp_path / "b.log"
    later.write_text(LINES[3].replace("01:22:08", "01:30:00").replace("86.9%", "10.0%") + "\n")
    status, out, _ = run(
        capsys,
        "replay",
        "--format",
        "json",
        "--year",
        "2026",
        "--source",
        "x",
        str(later),
        str(vllm_log),
    )
    ratio = json.loads(out)["metrics"]["kvwatch_vllm_prefix_cache_hit_ratio"]
    assert (0, [{"labels": {"engine": "0", "source": "x"}, "value": 0.1}]) == (status, ratio)


def test_python_dash_m_works(vllm_log: Path) -> None:
    """`python -m kvwatch` is the same entry point; text goes to stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "kvwatch", "replay", "--year", "2026", str(vllm_log)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (0, True) == (done.returncode, "source vllm (engine vllm, plain)" in done.stdout)


@pytest.mark.slow
def test_a_pipe_replays_as_its_file_does(tmp_path: Path) -> None:
    """`-` (standard input) and a pipe named by path (`<(zcat ...)` is one) give what the file gives,
    the pipe read once (its head is needed twice: engine and framing, then the whole); the source is
    named after the path (`stdin`, the fd's number) unless --source says otherwise."""
    sample = ROOT / "samples" / "vllm-docker.log"
    base = [sys.executable, "-m", "kvwatch", "replay", "--format", "json", "--year", "2026"]

    def replay(*argv: str, stdin: bytes | None = None, fds: tuple[int, ...] = ()) -> tuple[int, str, str]:
        done = subprocess.run([*base, *argv], input=stdin, capture_output=True, check=False, pass_fds=fds)
        return done.returncode, done.stdout.decode(), done.stderr.decode()

    expected = replay("--source", "s", str(sample))
    assert 0 == expected[0] and expected[1]
    assert expected == replay("--source", "s", "-", stdin=sample.read_bytes())
    read, write = os.pipe()
    feeder = threading.Thread(target=lambda: (os.write(write, sample.read_bytes()), os.close(write)))
    feeder.start()  # (the sample is bigger than a pipe's buffer: written while kvwatch reads)
    try:
        status, out, err = replay(f"/dev/fd/{read}", fds=(read,))
    finally:
        os.close(read)
        feeder.join()
    assert (0, "") == (status, err)
    assert json.loads(out)["metrics"] == json.loads(expected[1].replace('"s"', f'"{read}"'))["metrics"]
    status, _, err = replay("-", stdin=b"")
    assert (
        3,
        "kvwatch: no known engine recognised the 0 lines of - "
        "(tried: vllm, llamacpp, usage, sglang, ollama, lmstudio, lmcache)\n",
    ) == (
        status,
        err,
    )


@pytest.mark.parametrize("start", ["nan", "inf", "1e30", "253402300800", "10000-01-01T00:00:00Z"])
def test_a_start_past_year_9999_is_refused(
    vllm_log: Path, capsys: pytest.CaptureFixture[str], start: str
) -> None:
    """--start anchors relative clocks: beyond 1970-9999, or not finite, it is refused (exit 2), as
    --year is; a time that far made the detectors' 10 s grid loop for ever."""
    with pytest.raises(SystemExit) as refused:
        main(["replay", "--start", start, str(vllm_log)])
    assert 2 == refused.value.code
    assert "argument --start" in capsys.readouterr().err


@pytest.mark.slow
def test_more_files_than_open_files_allowed(tmp_path: Path) -> None:
    """Hundreds of small rotated logs, more than the process may hold open (a replay merges every file
    by time): each is closed by the read that meets its end, so the replay counts every line."""
    sample = (ROOT / "samples" / "llamacpp-healthy-two-slots.log").read_bytes()
    paths = []
    for i in range(300):
        path = tmp_path / f"llama.log.{i}"
        path.write_bytes(sample)
        paths.append(str(path))

    def low_limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    argv = [sys.executable, "-m", "kvwatch", "replay", "--format", "json", "--engine", "llamacpp", *paths]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, preexec_fn=low_limit)
    assert (0, "") == (done.returncode, done.stderr)
    lines = json.loads(done.stdout)["metrics"]["kvwatch_lines_total"]
    assert [{"labels": {"source": "llama"}, "value": 300.0 * sample.count(b"\n")}] == lines


def test_alerts_in_json_follow_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    """The write-only sample's alert transition validates and names evidence, cause and fix."""
    sample = Path(__file__).resolve().parents[1] / "samples" / "vllm-write-only-offload.log"
    status, out, _ = run(capsys, "replay", "--format", "json", "--year", "2026", str(sample))
    body = json.loads(out)
    jsonschema.validate(body, json.loads((contract_dir() / "replay.schema.json").read_text()))
    (alert,) = body["alerts"]
    assert (0, "write_only_offload", "firing", "2026-08-18T01:27:00Z") == (
        status,
        alert["alert"],
        alert["state"],
        alert["at"],
    )
    assert (0, "EAGLE/MTP [2]") == (
        alert["evidence"]["loaded_bytes_window"],
        alert["evidence"]["excluded_kv_groups"],
    )
    firing = body["metrics"]["kvwatch_alert_firing"]
    labels = {"alert": "write_only_offload", "source": "vllm-write-only-offload", "engine": "0"}
    assert [{"labels": labels, "value": 1.0}] == firing


@pytest.mark.slow
def test_text_report_shows_token_hit_rate_by_entry(capsys: pytest.CaptureFixture[str]) -> None:
    """For a gateway usage log the text report gives requests, tokens and hit rate per entry and model."""
    sample = Path(__file__).resolve().parents[1] / "samples" / "usage-newapi.log"
    status, out, _ = run(capsys, "replay", str(sample))
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("/v1/")]
    assert (0, [["/v1/chat/completions", "93.5%"], ["/v1/messages", "15.8%"]]) == (
        status,
        [[row[0], row[-1]] for row in rows],
    )


def _engine_row(out: str, engine: str) -> list[str]:
    """The cells of one engine's row in the text report's vLLM table."""
    (row,) = [line.split() for line in out.splitlines() if line.split()[:1] == [engine] and "%" in line]
    return row


def test_text_report_says_unknown_when_kv_lines_carry_no_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """KV lines with NIXL telemetry only (no byte key) report stored and loaded as unknown, not 0 B."""
    nixl = (
        "(APIServer pid=1) INFO 11-04 13:32:{s} [metrics.py:108] KV Transfer metrics: NixlConnector="
        "{{'Num successful transfers': 4, 'Avg xfer time (ms)': np.float64(18.639), "
        "'Avg MB per transfer': np.float64(359.0), 'Throughput (MB/s)': np.float64(19260.721)}}"
    )
    path = tmp_path / "nixl.log"
    path.write_text("\n".join([LINES[3], nixl.format(s="20"), nixl.format(s="30")]) + "\n")
    status, out, _ = run(capsys, "replay", "--year", "2026", str(path))
    assert (0, ["2", "unknown", "unknown"]) == (status, _engine_row(out, "0")[-3:])
    assert " 0 B" not in out


def test_text_report_prints_known_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    """Where the KV lines carry byte keys (aggregated stats, MultiConnector) the sums are printed."""
    samples = ROOT / "samples"
    for name, engine, expected in [
        ("vllm-aggregated", "all", ["31", "136.4", "GB", "16.5", "GB"]),
        ("vllm-multiconnector", "0", ["8", "2.1", "GB", "0", "B"]),
    ]:
        status, out, _ = run(capsys, "replay", str(samples / f"{name}.log"))
        assert (0, expected) == (status, _engine_row(out, engine)[-5:]), name


def test_a_replay_without_the_text_report_gives_the_same_metrics_and_alerts() -> None:
    """`--format prom`, `json` and `golden` leave the text report's gathering out: metrics, alerts and
    line counts are those of a replay that gathers it, for every sample."""
    from kvwatch.output.exposition import golden_lines
    from kvwatch.parsers.base import ParserSettings
    from kvwatch.replay import plan, replay

    gathered = []
    for path in sample_logs(rotated=False):
        outcomes = []
        for report in (True, False):
            result = replay(plan([str(path)], "auto", None), ParserSettings(now_year=2026), report=report)
            counts = {k: c.parsed() for k, c in result.summary.counts.items()}
            outcomes.append((golden_lines(result.registry, result.alerts), counts))
            parts = [part for view in result.summary.sources.values() for part in view.parts]
            if report:
                gathered.append(bool(parts))
            else:
                assert [] == parts, path.name
        assert outcomes[0] == outcomes[1], path.name
    assert all(gathered) and len(gathered) > 40
