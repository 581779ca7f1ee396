"""Makes samples/ollama-0.29-debug.log and samples/ollama-0.29-default.log (+ .golden): Ollama <= 0.29 under journald."""

# Log lines are built whole from their format strings, however long.
# ruff: noqa: E501

from __future__ import annotations

from datetime import datetime, timedelta

from scripts.samples.made import Made
from scripts.samples.ollama.lines import UTC, conversation, gin, journald, slog

# Ollama <= 0.29 (before commit 9db4bdb, #16031): runner/ollamarunner/cache.go:151 `loading cache slot`
# (DEBUG), llm/server.go `starting runner`, server/routes.go `server config` and `Listening on`.
PID = 1187
BLOB = "sha256-6a0746a1ec1aef3e7ec53868f220ff6e389f6f8ef87a01d77c96807de94ca2aa"


def make_log(debug: bool) -> str:
    """A coding chat of 10 turns on one slot; cache lines only when OLLAMA_DEBUG=1."""
    t = datetime(2026, 5, 4, 14, 2, 11, 52000, tzinfo=UTC)
    out: list[str] = []

    def line(text: str) -> None:
        out.append(journald(t, PID, text))

    level = "DEBUG" if debug else "INFO"
    env = f"map[CUDA_VISIBLE_DEVICES: OLLAMA_DEBUG:{level} OLLAMA_HOST:http://127.0.0.1:11434 OLLAMA_KEEP_ALIVE:5m0s]"
    line(slog(t, "INFO", "routes.go:1302", "server config", ("env", env)))
    line(slog(t, "INFO", "routes.go:1353", "Listening on 127.0.0.1:11434 (version 0.29.1)"))
    for i, (prompt, cached, generated) in enumerate(conversation(2410, 10, seed=29)):
        t += timedelta(seconds=20 + i)
        if i == 0:
            cmd = f"/usr/local/bin/ollama runner --ollama-engine --model /usr/share/ollama/.ollama/models/blobs/{BLOB} --port 40121"
            line(slog(t, "INFO", "server.go:433", "starting runner", ("cmd", cmd)))
            t += timedelta(seconds=2, milliseconds=310)
            line(slog(t, "INFO", "server.go:1288", "llama runner started in 2.31 seconds"))
        start = t
        if debug:
            t += timedelta(milliseconds=40)
            pairs = (("id", 0), ("cache", cached if i else 0), ("prompt", prompt), ("used", cached))
            line(
                slog(t, "DEBUG", "cache.go:151", "loading cache slot", *pairs, ("remaining", prompt - cached))
            )
        t += timedelta(seconds=(prompt - cached) / 900 + generated / 40)
        line(gin(t, 200, (t - start).total_seconds() + 0.0123, "POST", "/api/chat"))
    return "\n".join(out) + "\n"


def make() -> list[Made]:
    """Both samples."""
    return [
        Made("ollama-0.29-debug.log", make_log(True).encode()),
        Made("ollama-0.29-default.log", make_log(False).encode()),
    ]
