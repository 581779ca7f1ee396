"""The events a gateway usage log's parser makes of its lines besides its engine-neutral request
records (kvwatch.model.UsageRecord)."""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.model import pickle_by_fields


@dataclass(slots=True)
class UsageSkipped:
    """A usage-log row that is no completed request (an error row, another row type, no usage)."""

    source: str
    time: float
    reason: str


pickle_by_fields(globals())
