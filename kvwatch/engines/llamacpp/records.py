"""llama.cpp's request records as engine-neutral ones: each slot's conversations numbered as they go."""

from __future__ import annotations

from kvwatch.engines.llamacpp.events import LlamaRequest
from kvwatch.model import Basis, RequestRecord


class Requests:
    """One source's `LlamaRequest`s as `RequestRecord`s (kvwatch.model.RequestAdapter)."""

    def __init__(self) -> None:
        """No conversation seen yet."""
        # (server, slot) -> its conversation number: two servers' slot 0 hold different conversations
        self.conversations: dict[tuple[str | int | None, int], int] = {}

    def convert(self, event: object) -> tuple[Basis | None, RequestRecord | None]:
        """How exactly the record was read, and the record (None when the log did not give its counts)."""
        if not isinstance(event, LlamaRequest):
            return None, None
        # A request whose slot pick was not seen began before the first line read (a daemon started at
        # the end of a -lv 4 log): its reuse lines were missed, which says nothing of the verbosity.
        basis: Basis = (
            "exact" if not event.derived else "joined" if event.selection == "unknown" else "derived"
        )
        # The slot's next request continues its conversation when llama.cpp placed it there by
        # similarity to what the slot holds; any other pick (LRU, by id, a prompt restored from the host
        # cache) may bring another conversation, so it starts a new one.
        slot, server = event.slot, event.server
        number = self.conversations.get((server, slot), 0)
        if event.selection != "lcp" or event.prompt_cache_rescue:
            number += 1
            self.conversations[server, slot] = number
        if event.prompt_tokens is None or event.reused_tokens is None:
            return basis, None
        return basis, RequestRecord(
            event.source,
            event.time,
            event.prompt_tokens,
            event.reused_tokens,
            full_reprocess=event.full_reprocess,
            reprocess_cause="memory_truncate_failed" if event.truncate_failed else "",
            slot=slot,
            conversation=f"slot {slot} #{number}" if server is None else f"{server} slot {slot} #{number}",
            selection=event.selection,
            derived=event.derived,
            server=None if server is None else str(server),
        )

    def restart(self) -> None:
        """A restarted server's slots hold nothing of the conversations before."""
        self.conversations.clear()
