"""What windows and detectors know of the engines, handed in by whoever builds them (the pipeline
passes the registry's answers, kvwatch.engines.FACTS): they name no engine and import no registry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kvwatch.model import Advise, Blindness, RequestAdapter


class EngineFacts(Protocol):
    """The engines' facts by engine name (an unknown name or "" has none of them)."""

    def owner(self, kind: type) -> str | None:
        """The engine whose events include this type (None: an engine-neutral event)."""

    def converts(self, engine: str) -> bool:
        """Whether its request events are converted by a per-source adapter (they are no RequestRecords)."""

    def requests(self, engine: str) -> RequestAdapter | None:
        """A fresh request adapter of one source (None: the engine converts no requests)."""

    def forgets(self, engine: str) -> tuple[str, ...]:
        """The source facts its restart makes stale."""

    def signals(self, engine: str) -> frozenset[str]:
        """The engine-neutral signals it can produce."""

    def layers(self, engine: str) -> tuple[str, ...]:
        """The layers (other engines) whose lines its log carries."""

    def blindness(self, engine: str) -> Blindness | None:
        """Its own no_signal verdict (None: it has none)."""

    def advice(self, engine: str) -> Mapping[str, Advise]:
        """Its wording of engine-neutral alerts' findings, by alert name."""
