"""Makes samples/ollama-0.30-two-runners.log (+ .golden): Ollama >= 0.30 with two bundled llama-servers."""

# Log lines are built whole from their format strings, however long.
# ruff: noqa: E501

from __future__ import annotations

from datetime import datetime, timedelta

from scripts.samples.made import Made
from scripts.samples.ollama.lines import UTC, conversation, gin, slog

# Ollama 0.30.0 (commit 9db4bdb, #16031): llm/llama_server.go `starting llama-server` (cmd with
# `--port` and `--log-verbosity 4 --no-log-prefix --no-log-timestamps`), `llama-server started in`;
# the runner's stderr is copied unchanged. Its llama.cpp is b9452 (LLAMA_CPP_VERSION): the slot/srv
# strings of b9305 ... b9934 (tools/server/server-context.cpp), trace lines included at -lv 4.
BLOBS = {
    "a": "sha256-a3de86cd1c132c822487ededd47a324c50491393e6565cd14bafa40d0b8e686f",
    "b": "sha256-dde5aa3fc5ffc17176b5e8bdc82f587b24b2678c6c66101bf7da77af9f7ccdff",
}


class Runner:
    """One llama-server: its port, task counter and the slot's cached tokens."""

    def __init__(self, port: int, blob: str) -> None:
        self.port, self.blob, self.task, self.first = port, blob, 0, True

    def start(self, t: datetime) -> list[str]:
        cmd = (
            f"/usr/local/lib/ollama/llama-server --model /usr/share/ollama/.ollama/models/blobs/{self.blob} --port {self.port}"
            " --host 127.0.0.1 --no-webui --offline -c 8192 -np 1 --log-verbosity 4 --no-log-prefix --no-log-timestamps"
        )
        return [
            slog(t, "INFO", "llama_server.go:433", "starting llama-server", ("cmd", cmd)),
            "srv    load_model: initializing, n_slots = 1, n_ctx_slot = 8192, kv_unified = 'false'",
            "slot   load_model: id  0 | task -1 | new slot, n_ctx = 8192",
            "srv    load_model: prompt cache is enabled, size limit: 8192 MiB",
            "srv  llama_server: model loaded",
            f"srv  llama_server: server is listening on http://127.0.0.1:{self.port}",
            slog(
                t + timedelta(seconds=2),
                "INFO",
                "llama_server.go:1362",
                "llama-server started in 2.00 seconds",
            ),
        ]

    def request(self, prompt: int, cached: int, generated: int) -> list[str]:
        task, self.task = self.task, self.task + 1
        pick = (
            "selected slot by LRU, t_last = -1"
            if self.first
            else f"selected slot by LCP similarity, sim_best = {cached / prompt:.3f} (> 0.100 thold), f_keep = 1.000"
        )
        self.first = False
        new = prompt - cached
        tag = f"id  0 | task {task} |"
        return [
            f"slot get_availabl: id  0 | task -1 | {pick}",
            f"slot launch_slot_: {tag} processing task, is_child = 0",
            f"slot   operator(): {tag} new prompt, n_ctx_slot = 8192, n_keep = 0, task.n_tokens = {prompt}",
            f"slot   operator(): {tag} cached n_tokens = {cached}, memory_seq_rm [{cached}, end)",
            f"slot print_timing: {tag} prompt eval time = {new * 0.36:10.2f} ms / {new:5d} tokens"
            f" ({0.36:8.2f} ms per token, {1000 / 0.36:8.2f} tokens per second)",
            f"slot print_timing: {tag}        eval time = {generated * 16.4:10.2f} ms / {generated:5d} tokens"
            f" ({16.4:8.2f} ms per token, {1000 / 16.4:8.2f} tokens per second)",
            f"slot print_timing: {tag}       total time = {new * 0.36 + generated * 16.4:10.2f} ms / {prompt + generated:5d} tokens",
            f"slot      release: {tag} stop processing: n_tokens = {prompt + generated - 1}, truncated = 0",
            "srv  update_slots: all slots are idle",
        ]


def make_log() -> str:
    """Model a chats 4 turns, model b (loaded beside it) 4, then a is reloaded on a new port for 3 more."""
    t = datetime(2026, 6, 10, 9, 0, 0, tzinfo=UTC)
    env = "map[OLLAMA_DEBUG:INFO OLLAMA_HOST:http://127.0.0.1:11434 OLLAMA_MAX_LOADED_MODELS:0]"
    out = [
        slog(t, "INFO", "routes.go:1951", "server config", ("env", env)),
        slog(t, "INFO", "routes.go:2008", "Listening on 127.0.0.1:11434 (version 0.30.2)"),
    ]
    chats = {"a": conversation(1300, 7, seed=30), "b": conversation(900, 4, seed=31)}
    plan = [("a", 39101, range(0, 4)), ("b", 41877, range(0, 4)), ("a", 44313, range(4, 7))]
    for model, port, turns in plan:
        t += timedelta(seconds=5)
        runner = Runner(port, BLOBS[model])
        out += runner.start(t)
        t += timedelta(seconds=2)
        for n in turns:
            prompt, cached, generated = chats[model][n]
            if n == turns.start:
                cached = 0  # a new process: its slot is empty
            t += timedelta(seconds=15)
            out += runner.request(prompt, cached, generated)
            seconds = (prompt - cached) * 0.00036 + generated * 0.0164
            out.append(gin(t + timedelta(seconds=seconds), 200, seconds + 0.02, "POST", "/api/chat"))
            t += timedelta(seconds=seconds)
    return "\n".join(out) + "\n"


def make() -> list[Made]:
    """The sample."""
    return [Made("ollama-0.30-two-runners.log", make_log().encode())]
