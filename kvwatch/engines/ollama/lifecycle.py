"""Ollama's model runner started or died, as its slog records say (`msg=` and `error=`).

Ready: `msg="llama runner started in 2.31 seconds"` (llm/server.go, in the samples' real framing).
Failed: `msg="error loading llama server"` with `error="llama runner process has terminated: ..."`
(server/sched.go, llm/server.go): the runner exited before it served; its `error=` is the cause.
Ollama 0.1.x said both through Go's standard logger: `error starting llama runner: <cause>` (llm/llama.go
of v0.1.17, ollama#1703) and the same `llama runner started in N seconds`.
Checked against Ollama's log lines quoted in public issue threads, not its Go sources (which PyPI does
not carry): a wording this does not know leaves the alert unsaid, never wrong.
"""

from __future__ import annotations

from kvwatch.parsers.lifecycle import Lifecycle

READY = ("llama runner started in",)
FAILED = (
    "error loading llama server",
    "llama runner process has terminated",
    "llama runner terminated",
    "error starting llama runner",
)


def lifecycle(source: str) -> Lifecycle:
    """An Ollama server's runner lifecycle."""
    return Lifecycle(source, "Ollama", READY, FAILED)
