"""Makes samples/ollama-0.1-embedded.log (+ .golden): Ollama 0.1.48's embedded 2024 server at OLLAMA_DEBUG=1."""

# Log lines are built whole from their format strings, however long.
# ruff: noqa: E501

from __future__ import annotations

from datetime import datetime, timedelta

from scripts.samples.made import Made
from scripts.samples.ollama.lines import UTC, conversation, gin, journald, slog

# Ollama 0.1.48: llm/server.go `starting llama server` (cmd; `--verbose` only with OLLAMA_DEBUG), its
# runner llm/ext_server/server.cpp + utils.hpp server_log: `LEVEL [function] msg | k=v` (ordered_json:
# tid, timestamp, then the call's keys), DEBUG `slot progression`, `kv cache rm [p0, end)`, print_timings.
PID = 903
BLOB = "sha256-8eeb52dfb3bb9aefdf9d1ef24b3bdbcfbe82238798c4b918278320b6fcef18fe"
TID = '"139912345678912"'


def server_log(level: str, function: str, msg: str, when: datetime, *pairs: tuple[str, object]) -> str:
    """utils.hpp server_log, text form (server_log_json = false)."""
    extra = "".join(f" {k}={v}" for k, v in pairs)
    return f"{level} [{function}] {msg} | tid={TID} timestamp={int(when.timestamp())}{extra}"


def make_log() -> str:
    """Eight turns of one chat on slot 0 under journald."""
    t = datetime(2024, 6, 28, 16, 40, 3, tzinfo=UTC)
    out: list[str] = []

    def line(text: str) -> None:
        out.append(journald(t, PID, text, host="gpu01"))

    line(slog(t, "INFO", "routes.go:1064", "Listening on 127.0.0.1:11434 (version 0.1.48)"))
    t += timedelta(seconds=6)
    cmd = f"/tmp/ollama2315/runners/cuda_v11/ollama_llama_server --model /usr/share/ollama/.ollama/models/blobs/{BLOB} --ctx-size 8192 --batch-size 512 --embedding --log-disable --verbose --parallel 1 --port 35611"
    line(slog(t, "INFO", "server.go:368", "starting llama server", ("cmd", cmd)))
    line(
        server_log(
            "INFO",
            "main",
            "HTTP server listening",
            t,
            ("n_threads_http", '"7"'),
            ("port", '"35611"'),
            ("hostname", '"127.0.0.1"'),
        )
    )
    for task, (prompt, cached, generated) in enumerate(conversation(850, 8, seed=148)):
        t += timedelta(seconds=25)
        new = prompt - cached
        ids = (("slot_id", 0), ("task_id", task))
        line(server_log("DEBUG", "launch_slot_with_data", "slot is processing task", t, *ids))
        line(
            server_log(
                "DEBUG",
                "update_slots",
                "slot progression",
                t,
                ("ga_i", 0),
                ("n_past", cached),
                ("n_past_se", 0),
                ("n_prompt_tokens_processed", new),
                *ids,
            )
        )
        line(server_log("DEBUG", "update_slots", "kv cache rm [p0, end)", t, *ids, ("p0", cached)))
        t += timedelta(seconds=new / 1000)
        ms = new * 1.0
        text = f"prompt eval time     = {ms:10.2f} ms / {new:5d} tokens ({1.0:8.2f} ms per token, {1000.0:8.2f} tokens per second)"
        line(
            server_log(
                "DEBUG",
                "print_timings",
                text,
                t,
                *ids,
                ("t_prompt_processing", ms),
                ("n_prompt_tokens_processed", new),
                ("t_token", 1.0),
                ("n_tokens_second", 1000.0),
            )
        )
        t += timedelta(seconds=generated / 40)
        line(
            server_log(
                "DEBUG",
                "update_slots",
                "slot released",
                t,
                *ids,
                ("n_ctx", 8192),
                ("n_past", prompt + generated - 1),
                ("n_system_tokens", 0),
                ("n_cache_tokens", prompt + generated),
                ("truncated", "false"),
            )
        )
        line(gin(t, 200, new / 1000 + generated / 40 + 0.01, "POST", "/api/chat"))
    return "\n".join(out) + "\n"


def make() -> list[Made]:
    """The sample."""
    return [Made("ollama-0.1-embedded.log", make_log().encode())]
