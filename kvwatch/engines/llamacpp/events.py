"""The events llama.cpp's parser makes of its lines: llama.cpp's own vocabulary (the engine-neutral
values they are, or carry, are in kvwatch.model)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kvwatch.model import pickle_by_fields


@dataclass(slots=True)
class LlamaRequest:
    """One llama.cpp request joined from its slot lines.

    Token counts are None when the log did not show them; `derived` marks counts inferred from the
    timing lines at default verbosity (less exact than `memory_seq_rm`). `server` names the process
    (and router port) that served it where one source carries several (a journal's `name[pid]`).
    """

    source: str
    time: float
    slot: int
    task: int
    prompt_tokens: int | None
    reused_tokens: int | None
    new_tokens: int | None
    selection: Literal["lcp", "lru", "id", "unknown"]
    sim_best: float | None = None
    f_keep: float | None = None
    prompt_cache_rescue: bool = False
    full_reprocess: bool = False
    checkpoint_restores: int = 0
    prompt_eval_seconds: float | None = None
    derived: bool = False
    server: str | int | None = None
    truncate_failed: bool = False  # `failed to truncate tokens ... clearing the memory` (b9093-b9113)


@dataclass(slots=True)
class LlamaCutOff:
    """A request, or a slot pick waiting for its task, that the input ended before it finished: what its
    lines had already shown, counted although no record will come (not a completed request)."""

    source: str
    time: float
    full_reprocess: bool
    lru: bool


pickle_by_fields(globals())
