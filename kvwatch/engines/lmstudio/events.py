"""The events LM Studio's parser makes of its lines: LM Studio's own vocabulary (the engine-neutral
values they are, or carry, are in kvwatch.model)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kvwatch.model import RequestRecord, pickle_by_fields


@dataclass(slots=True)
class LmstudioRequest(RequestRecord):
    """One LM Studio request's cache use: mlx-engine's `Prompt cache: using N/M` (text models) or
    `Prompt cache restore:` (vision/batched, with its lifetime efficiency 0-1), or its llama.cpp
    runtime's `Cache reuse summary`; `runtime` names which ("mlx", "mlx-vision", "llama.cpp")."""

    model: str = ""
    runtime: str = ""
    lifetime_efficiency: float | None = None


@dataclass(slots=True)
class LmstudioCompletion:
    """LM Studio's `Running chat completion on conversation with N messages.`: one request began."""

    source: str
    time: float
    model: str


@dataclass(slots=True)
class LmstudioCacheEvent:
    """mlx-engine dropped or trimmed its prompt cache: `clear` (with its `reason`) or `trim` (`tokens`)."""

    source: str
    time: float
    kind: Literal["clear", "trim"]
    reason: str = ""
    tokens: int = 0


@dataclass(slots=True)
class LmstudioDiskUsage:
    """mlx-engine's vision prompt cache on disk: `VLM prompt cache disk usage` (MiB in the line)."""

    source: str
    time: float
    used_bytes: float
    cap_bytes: float
    records: int


pickle_by_fields(globals())
