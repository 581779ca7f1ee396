"""Gateway usage records as engine-neutral request records, labelled by their entry point."""

from __future__ import annotations

from kvwatch.engines.capabilities import Basis
from kvwatch.model import RequestRecord, UsageRecord


class Requests:
    """One source's `UsageRecord`s as `RequestRecord`s (kvwatch.engines.capabilities.RequestAdapter)."""

    def convert(self, event: object) -> tuple[Basis | None, RequestRecord | None]:
        """The record of a usage row (its counts are the gateway's own: no basis to count)."""
        if not isinstance(event, UsageRecord):
            return None, None
        return None, RequestRecord(
            event.source, event.time, event.prompt_tokens, event.cached_tokens, entry=event.entry
        )

    def restart(self) -> None:
        """A gateway's rows keep no per-process state."""
