"""What a notifier's queue shows a person and Prometheus: failing or not, why, and what waits.

`Delivery.status()` takes a `Status`; the landing page lists them and `NotifierCollector` turns them
into `kvwatch_notifier_*` gauges at scrape time. A status names its receiver by scheme and host only
(the rest of a webhook URL is a credential).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


@dataclass(frozen=True, slots=True)
class Status:
    """One notifier's state; times are wall-clock Unix seconds."""

    name: str
    receiver: str  # scheme://host[:port]
    pending: int  # alerts waiting to be sent
    pending_bytes: int  # their size as spooled
    failing_since: float | None = None  # the first failed attempt of the current failure
    reason: str = ""  # the last failed attempt's reason (http_404, connection, ...), "" when not failing
    detail: str = ""  # its text, scrubbed of the URL
    delivered: int = 0  # alerts delivered since kvwatch started
    dropped: int = 0  # alerts dropped since kvwatch started (rejected payloads, a full queue)
    last_drop: str = ""  # why the last one was dropped (http_400, overflow, ...)

    @property
    def failing(self) -> bool:
        """Whether its last attempt failed and alerts are held for a retry."""
        return self.failing_since is not None


class NotifierCollector(Collector):
    """`kvwatch_notifier_failing`, `kvwatch_notifier_pending_alerts` and `kvwatch_notifier_pending_bytes`
    per notifier, from the statuses of the deliveries running now (a reload replaces them)."""

    def __init__(self, statuses: Callable[[], Sequence[Status]]) -> None:
        """Read the current statuses through `statuses`."""
        self.statuses = statuses

    def collect(self) -> Iterator[Metric]:
        """Yield the three families."""
        statuses = sorted(self.statuses(), key=lambda s: s.name)
        families = (
            ("kvwatch_notifier_failing", "1 while a notifier's receiver fails and its alerts are held.",
             [float(s.failing) for s in statuses]),
            ("kvwatch_notifier_pending_alerts", "Alerts a notifier holds, waiting to be sent.",
             [float(s.pending) for s in statuses]),
            ("kvwatch_notifier_pending_bytes", "Size of the alerts a notifier holds, as spooled.",
             [float(s.pending_bytes) for s in statuses]),
        )  # fmt: skip
        for name, doc, values in families:
            family = GaugeMetricFamily(name, doc, labels=["notifier"])
            for status, value in zip(statuses, values, strict=True):
                family.add_metric([status.name], value)
            yield family
