"""The events Ollama's parser makes of its lines: Ollama's own vocabulary (the engine-neutral
values they are, or carry, are in kvwatch.model)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kvwatch.model import RequestRecord, pickle_by_fields


@dataclass(slots=True)
class OllamaRequest(RequestRecord):
    """One Ollama request's cache use: an MLX `cache hit`/`cache miss`, a `loading cache slot`, or a
    request its bundled llama-server logged; `runner` is the runner's port ("" when not known)."""

    runner: str = ""
    model: str = ""
    matched: int | None = None  # MLX: the trie's match, of which `cached_tokens` could be restored
    derived: bool = False  # llama-server: reuse derived from its timing lines


@dataclass(slots=True)
class OllamaAccess:
    """One `[GIN]` access line of Ollama's HTTP server: a request, its status and latency."""

    source: str
    time: float
    status: int
    seconds: float
    method: str
    path: str


@dataclass(slots=True)
class OllamaCacheEvent:
    """An Ollama runner's cache event: `clear` (removal or shift unsupported, cache dropped),
    `failed_restore` (MLX), `context_shift`, `eviction`, `fork`."""

    source: str
    time: float
    kind: Literal["clear", "failed_restore", "context_shift", "eviction", "fork"]
    runner: str = ""


@dataclass(slots=True)
class OllamaCutOff:
    """A runner's request the input ended before it finished, forced to re-process its prompt in full:
    counted in `kvwatch_ollama_full_reprocess_total` (its line said so), not as a request."""

    source: str
    time: float
    model: str


pickle_by_fields(globals())
