"""llama-server's start and death, as b11434's `tools/server/server.cpp` and `server-context.cpp` log them.

Ready: `srv    main: model loaded` (its HTTP server listens before the model loads, so `listening on`
is no proof). Failed: `srv    load_model: failed to load model, '<path>'`, `main: exiting due to model
loading error`, `failed to load models on startup` (router mode), `exiting due to HTTP server error`.
The cause comes before those: the run's first error line (`gguf_init_from_file: failed to open GGUF
file '<path>' (No such file or directory)`, `llama_model_load: error loading model: ...`).
"""

from __future__ import annotations

from kvwatch.parsers.lifecycle import Lifecycle

READY = ("model loaded",)
FAILED = (
    "failed to load model,",
    "exiting due to model loading error",
    "failed to load models on startup",
    "exiting due to HTTP server error",
)
#: Substrings of every line read here (the parser's markers add them): those above, and the error lines
#: that may come before them.
MARKERS = ("model loaded", "failed to", "exiting due", "error loading", "error:")


def lifecycle(source: str) -> Lifecycle:
    """A llama-server run's lifecycle."""
    return Lifecycle(source, "llama.cpp", READY, FAILED, before=True)


def worth_reading(text: str) -> bool:
    """Whether a srv line the fast paths would only clock holds one of these words."""
    return "model loaded" in text or "failed to" in text or "exiting due" in text
