"""llama-server's start and death, as b11434's `tools/server/server.cpp` and `server-context.cpp` log them.

Ready: `srv    main: model loaded` (its HTTP server listens before the model loads, so `listening on`
is no proof). Failed: `srv    load_model: failed to load model, '<path>'`, `main: exiting due to model
loading error`, `failed to load models on startup` (router mode), `exiting due to HTTP server error`.
The cause comes before those: the run's first error line (`gguf_init_from_file: failed to open GGUF
file '<path>' (No such file or directory)`, `llama_model_load: error loading model: ...`).
Builds of 2023-10 to 2024-09 (examples/server/server.cpp, `load_model`: `LOG_ERROR("unable to load
model", {{"model", params.model}})`) say `unable to load model`: a JSON line until early 2024
(`{"timestamp":...,"level":"ERROR","function":"load_model",...,"message":"unable to load model",...}`,
llama.cpp#3744), then `ERR [ load_model] unable to load model | tid=... model="..."`.
"""

from __future__ import annotations

from kvwatch.parsers.lifecycle import Lifecycle

READY = ("model loaded",)
FAILED = (
    "failed to load model,",
    "exiting due to model loading error",
    "failed to load models on startup",
    "exiting due to HTTP server error",
    "unable to load model",
)
#: Failure lines only llama-server writes: one is enough to tell its log (a pasted start failure may
#: hold no other line of it). Its function column padded (Ollama 0.1.32-0.1.48's copy of server.cpp
#: wrote `[load_model]` unpadded) and its JSON key `message`.
OWN_FAILURES = ("exiting due to model loading error", "  load_model] unable to load model",
                '"message":"unable to load model"')  # fmt: skip
#: Substrings of every line read here (the parser's markers add them): those above, and the error lines
#: that may come before them.
MARKERS = ("model loaded", "failed to", "exiting due", "error loading", "error:", "unable to load model")


def lifecycle(source: str) -> Lifecycle:
    """A llama-server run's lifecycle."""
    return Lifecycle(source, "llama.cpp", READY, FAILED, before=True)


def worth_reading(text: str) -> bool:
    """Whether a srv line the fast paths would only clock holds one of these words."""
    return "model loaded" in text or "failed to" in text or "exiting due" in text or "unable to load" in text


def names_engine(body: str) -> bool:
    """Whether a message is a failure line only llama-server writes (OWN_FAILURES)."""
    return any(word in body for word in OWN_FAILURES) and any(word in body for word in FAILED)
