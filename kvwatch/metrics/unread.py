"""`kvwatch_unknown_fields_total`: fields kvwatch does not know on lines it reads, per engine and shape."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kvwatch.engines.families import Family
from kvwatch.model import UnreadFields


class UnreadFamily:
    """Counts UnreadFields events: an engine upgrade that adds fields shows here, not as silence."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.unknown = Family(
            "kvwatch_unknown_fields",
            "Fields kvwatch does not know on lines of a shape it reads (the rest of the line is read), "
            "per engine and sanitised shape.",
            "counter",
            ("source", "engine", "shape"),
            registry,
        )

    def apply(self, ev: UnreadFields) -> None:
        """Count one line's unknown fields."""
        self.unknown.inc((ev.source, ev.engine, ev.shape), ev.count)
