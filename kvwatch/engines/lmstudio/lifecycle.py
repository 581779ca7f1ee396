"""LM Studio failed to load a model, as its app log (`main.log`, electron-log framing) says.

LM Studio is closed source: the wording is read from its logs pasted in public issue threads
(lmstudio-ai/lmstudio-bug-tracker), in `lines.MAIN`'s framing `[2025-07-24 18:18:21.836] [error] msg`:

- a load that failed: a record on the load endpoint, `[LMSInternal][Client=LM Studio][Endpoint=loadModel]
  Error in channel handler: Error: ...` (0.3.9, #417, 2025-02: `Error: Error loading model.`; #790,
  2025-07, and #914, 2025-08, versions not stated: `Error: Received load-error`; 0.3.24-beta, #927, and
  #484, 2025-03, version not stated: `Error: Model loading aborted due to insufficient system resources.
  ...`), `[Endpoint=multiplexedLoadModel]` in 0.4.2 (#1492, 2026-02); a JavaScript stack follows;
- its root cause, where the stack names one: `- Caused By: Error: Failed to load model` (#790, #1492),
  `- Caused By: TypeError: Cannot read properties of undefined (reading 'find')` (#914).

No successful load is shown in those threads' lines: what resolves a failure is LM Studio serving again
on the same source, a chat completion or a runtime cache line (its server log's records). Each load is a
new run: a load that fails after another model served is a failed start, not a crash.
"""

from __future__ import annotations

from kvwatch.model import Event
from kvwatch.parsers.lifecycle import Lifecycle

#: The endpoints whose errors are a model that did not load (`[Endpoint=...]` tags of LMSInternal).
LOAD_ENDPOINTS = frozenset({"Endpoint=loadModel", "Endpoint=multiplexedLoadModel"})
#: A handler's error record, the failure line.
FAILED = ("Error in channel handler: ",)
#: A stack's root cause: the error after it names the failure.
CAUSED_BY = "- Caused By: "


def lifecycle(source: str) -> Lifecycle:
    """An LM Studio app's model loads."""
    return Lifecycle(source, "LM Studio", (), FAILED)


def load_line(life: Lifecycle, tags: list[str], body: str, when: float) -> list[Event]:
    """The lifecycle events of one message (its tags and body): a failed load, its root cause, or none."""
    if body.startswith(FAILED) and not LOAD_ENDPOINTS.isdisjoint(tags):
        life.restart()  # (each failure is a load of its own, tried again: the newest one's words are said)
        return life.line(body, when) or []
    if body.startswith(CAUSED_BY) and life.failing:
        return life.line(body[len(CAUSED_BY) :], when) or []
    return []
