"""Shapes the real excerpts of tests/wild showed kvwatch: Ollama 0.1.x's Go log lines and Msty's pino
records, llama-server 2023-24's `unable to load model`, llama.cpp under `docker compose logs`, and what
an unfinished llama.cpp request had shown when the input ended."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from kvwatch.cli import main


def replay(tmp_path: Path, text: str, *extra: str) -> dict[str, Any]:
    """`kvwatch replay --format json` of `text` written to a file."""
    log = tmp_path / "excerpt.log"
    log.write_text(text, encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["replay", "--format", "json", "--year", "2026", *extra, str(log)])
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


def transitions(report: dict[str, Any], alert: str) -> list[tuple[str, str]]:
    """The (state, error) of each transition of `alert`."""
    return [(a["state"], a["evidence"].get("error", "")) for a in report["alerts"] if a["alert"] == alert]


def value(report: dict[str, Any], metric: str) -> float | None:
    """The sum of a family's samples, None when it is absent."""
    samples = report["metrics"].get(metric)
    return sum(s["value"] for s in samples) if samples else None


OLLAMA_01 = (
    "Dec 24 23:40:00 host ollama[3974]: 2023/12/24 23:40:00 routes.go:1014: Listening on 127.0.0.1:11434"
    " (version 0.1.17)\n"
    "Dec 24 23:48:35 host ollama[3974]: 2023/12/24 23:48:35 llama.go:459: error starting llama runner:"
    " llama runner process has terminated\n"
    "Dec 24 23:48:35 host ollama[3974]: [GIN] 2023/12/24 - 23:48:35 | 500 |  1.332430527s |       127.0.0.1 |"
    ' POST     "/api/generate"\n'
)


def test_ollama_01_go_log_failure_fires_and_a_later_start_resolves(tmp_path: Path) -> None:
    """Ollama 0.1.x's `error starting llama runner` fires engine_start_failed; `llama runner started in`
    later resolves it."""
    report = replay(tmp_path, OLLAMA_01)
    error = "error starting llama runner: llama runner process has terminated"
    assert transitions(report, "engine_start_failed") == [("firing", error)]
    later = (
        "Dec 24 23:58:00 host ollama[3974]: 2023/12/24 23:58:00 llama.go:555: llama runner started in"
        " 2.500000 seconds\n"
        "Dec 25 00:08:00 host ollama[3974]: [GIN] 2023/12/25 - 00:08:00 | 200 |  1.3s |       127.0.0.1 |"
        ' POST     "/api/generate"\n'
    )  # (the alert resolves once the failure has been gone for 120 s of log time)
    report = replay(tmp_path, OLLAMA_01 + later)
    assert [s for s, _ in transitions(report, "engine_start_failed")] == ["firing", "resolved"]


def test_ollama_01_go_log_without_journald_keeps_its_own_time(tmp_path: Path) -> None:
    """Without a transport prefix, the Go log line's own date and time are the event's."""
    report = replay(
        tmp_path,
        "2023/12/24 23:48:35 llama.go:459: error starting llama runner: boom\n",
        "--engine",
        "ollama",
    )
    assert report["alerts"][0]["evidence"]["failed_at"] == "2023-12-24T23:48:35+00:00"


def test_msty_pino_records_are_read_as_the_ollama_lines_they_carry(tmp_path: Path) -> None:
    """A pino JSON record's `msg` is read as Ollama's line, at the record's time when the line has none."""
    records = [
        {"level": 50, "time": 1752516972751, "pid": 1, "hostname": "h",
         "msg": 'time=2025-07-14T19:16:12.750+01:00 level=ERROR source=sched.go:457 msg="error loading llama'
                ' server" error="llama runner process has terminated: exit status 2"\n'},
        {"level": 30, "time": 1752516972752, "pid": 1, "hostname": "h",
         "msg": '[GIN] 2025/07/14 - 19:16:12 | 500 |    1.5308332s |       127.0.0.1 |'
                ' POST     "/api/chat"\n'},
    ]  # fmt: skip
    report = replay(tmp_path, "".join(json.dumps(r) + "\n" for r in records))
    assert transitions(report, "engine_start_failed") == [
        ("firing", "error loading llama server: llama runner process has terminated: exit status 2")
    ]
    assert report["metrics"]["kvwatch_ollama_http_requests_total"][0]["labels"]["code"] == "5xx"


def test_llama_server_2023_unable_to_load_model_alone_names_the_engine_and_fires(tmp_path: Path) -> None:
    """The 2023 server's JSON `unable to load model` (and its 2024 text form) is a start failure, and
    enough to tell a llama-server log with no other line of it."""
    json_line = (
        '{"timestamp":1698069462,"level":"ERROR","function":"load_model","line":558,'
        '"message":"unable to load model","model":"models/7B/ggml-model-f16.gguf"}\n'
    )
    text_line = (
        'ERR [              load_model] unable to load model | tid="1" timestamp=1717000000 model="m.gguf"\n'
    )
    for line in (json_line, text_line):
        report = replay(tmp_path, "llama_init_from_gpt_params: error: failed to load model 'm.gguf'\n" + line)
        assert report["alerts"][0]["evidence"]["engine"] == "llama.cpp"  # (told without --engine)
        assert transitions(report, "engine_start_failed") == [
            ("firing", "llama_init_from_gpt_params: error: failed to load model 'm.gguf'")
        ]


def test_llamacpp_under_docker_compose_prefix(tmp_path: Path) -> None:
    """`docker compose logs -t` lines (`service  | <time> `) are read, at their time."""
    lines = [
        "[42835] 0.05.314.871 I slot launch_slot_: id  0 | task 0 | processing task, is_child = 0",
        "[42835] 0.05.383.697 I slot print_timing: id  0 | task 0 |",
        "[42835] prompt eval time =      68.80 ms /    30 tokens (    2.29 ms per token,   436.05 tokens"
        " per second)",
        "[42835]        eval time =       0.00 ms /     1 tokens (    0.00 ms per token, 1000000.00 tokens"
        " per second)",
        "[42835]       total time =      68.80 ms /    31 tokens",
        "[42835] 0.05.383.726 I slot      release: id  0 | task 0 | stop processing: n_tokens = 30,"
        " truncated = 0",
    ]  # fmt: skip
    text = "".join(f"llama-cpp  | 2026-05-17T14:00:26.2343{n}Z {line}\n" for n, line in enumerate(lines))
    report = replay(tmp_path, text)
    assert value(report, "kvwatch_llamacpp_requests_total") == 1
    assert value(report, "kvwatch_llamacpp_prompt_tokens_total") == 30
    assert value(report, "kvwatch_vllm_stats_lines_total") is None


def test_an_unfinished_request_counts_its_forced_reprocessing_and_lru_pick_not_itself(tmp_path: Path) -> None:
    """When the input ends mid-request, its `forcing full prompt re-processing` and an LRU pick still
    waiting for its task are counted; neither is a completed request."""
    text = (
        "slot get_availabl: id  1 | task -1 | selected slot by LRU, t_last = 1285608281393\n"
        "slot launch_slot_: id  0 | task 730 | processing task, is_child = 0\n"
        "slot update_slots: id  0 | task 730 | new prompt, n_ctx_slot = 32768, n_keep = 0,"
        " task.n_tokens = 6300\n"
        "slot apply_checkp: id  0 | task 730 | n_past = 819, slot.prompt.tokens.size() = 6258, seq_id = 0,"
        " pos_min = 6257\n"
        "slot apply_checkp: id  0 | task 730 | forcing full prompt re-processing due to lack of cache data\n"
    )  # fmt: skip
    report = replay(tmp_path, text, "--engine", "llamacpp")
    assert value(report, "kvwatch_llamacpp_full_reprocess_total") == 1
    assert value(report, "kvwatch_llamacpp_lru_selections_total") == 1
    assert value(report, "kvwatch_llamacpp_requests_total") == 0


def test_an_ollama_runner_request_cut_off_counts_its_forced_reprocessing(tmp_path: Path) -> None:
    """Under Ollama, a runner's request the input ends in the middle of still counts its forced full
    re-processing (kvwatch_ollama_full_reprocess_total), not as a request."""
    text = (
        'time=2026-08-01T07:02:30.000Z level=INFO source=server.go:1 msg="starting llama-server"'
        ' cmd="/usr/bin/llama-server --model /m/blobs/sha256-1 --port 40001"\n'
        "slot   operator(): id  0 | task 75 | forcing full prompt re-processing due to lack of cache data\n"
        "slot   operator(): id  0 | task 75 | cached n_tokens = 0, memory_seq_rm [0, end)\n"
        '[GIN] 2026/08/01 - 07:02:38 | 200 |      36.318µs |       127.0.0.1 | HEAD     "/"\n'
    )
    report = replay(tmp_path, text, "--engine", "ollama")
    assert value(report, "kvwatch_ollama_full_reprocess_total") == 1
    assert value(report, "kvwatch_ollama_requests_total") == 0


def test_ollama_gin_local_time_takes_the_offset_slog_printed(tmp_path: Path) -> None:
    """gin prints local time without a zone: with no `tz` set it is placed by the offset of slog's
    `time=` (+02:00 here), not read as UTC two hours later."""
    text = (
        'time=2025-07-16T20:07:57.610+02:00 level=ERROR source=sched.go:489 msg="error loading llama'
        ' server" error="llama runner process has terminated: exit status 2"\n'
        '[GIN] 2025/07/16 - 20:07:58 | 500 |    720.9988ms |       127.0.0.1 | POST     "/api/generate"\n'
    )
    log = tmp_path / "excerpt.log"
    log.write_text(text, encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["replay", "--year", "2026", str(log)])
    assert "events 2025-07-16T18:07:57.61Z .. 2025-07-16T18:07:58Z" in out.getvalue(), out.getvalue()


def test_sglang_scheduler_dying_after_a_batch_is_a_crash(tmp_path: Path) -> None:
    """An SGLang batch line proves the server served: its scheduler's death after it is a crash, named
    by the traceback's last exception."""
    text = (
        "[2025-06-26 02:16:20 TP0] Decode batch. #running-req: 1, #token: 2102, token usage: 0.51,"
        " cuda graph: True, gen throughput (token/s): 93.51, #queue-req: 0\n"
        "[2025-06-26 02:16:20 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "scheduler.py", line 254, in match_prefix_lmcache\n'
        '    raise ValueError("Failed to allocate token prealloc indices")\n'
        "ValueError: Failed to allocate token prealloc indices\n"
    )
    report = replay(tmp_path, text)
    alert = report["alerts"][0]
    assert (alert["alert"], alert["evidence"]["phase"]) == ("engine_start_failed", "crash")
    assert alert["evidence"]["error"] == "ValueError: Failed to allocate token prealloc indices"
