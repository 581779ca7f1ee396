"""The daemon's self-metrics, read from the feeders' plain counters at scrape time.

Sources count in plain ints on their own threads; this collector turns them into families when
Prometheus scrapes, so the hot path never touches a metric lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kvwatch import __version__
from kvwatch.daemon.feed import Feeder

#: (name, help, FileCounters field) of the per-source counters.
_COUNTERS = (
    ("kvwatch_source_read_lines", "Lines a source read (kvwatch_lines_total: lines processed).", "lines"),
    ("kvwatch_source_read_bytes", "Bytes a source read.", "bytes_read"),
    (
        "kvwatch_source_rotations",
        "Files a source moved on to after a rename, delete or re-creation.",
        "rotations",
    ),
    ("kvwatch_source_truncations", "Truncations (copytruncate) a source noticed.", "truncations"),
    (
        "kvwatch_source_malformed_lines",
        "Docker or journald entries a source could not decode (torn, not its JSON): skipped.",
        "malformed",
    ),
    (
        "kvwatch_source_partial_lines_dropped",
        "Unfinished lines dropped because their file was truncated.",
        "partial_lines_dropped",
    ),
)


class SourceStateCollector(Collector):
    """`kvwatch_source_*` per source, the queue's fill, and build info."""

    def __init__(self, feeders: Callable[[], Sequence[Feeder]], queued: Callable[[], int]) -> None:
        """Read the current feeders and the queue length through these callables."""
        self.feeders = feeders
        self.queued = queued

    def collect(self) -> Iterator[Metric]:
        """Yield every family."""
        feeders = sorted(self.feeders(), key=lambda f: f.name)
        for name, doc, field in _COUNTERS:
            family = CounterMetricFamily(name, doc, labels=["source"])
            for feeder in feeders:
                family.add_metric([feeder.name], feeder.count(field))
            yield family
        restarts = CounterMetricFamily(
            "kvwatch_source_restarts",
            "Times a source was reopened after failing, or its container or journalctl restarted.",
            labels=["source"],
        )
        up = GaugeMetricFamily(
            "kvwatch_source_up", "1 while a source is open and reading.", labels=["source"]
        )
        behind = GaugeMetricFamily(
            "kvwatch_source_behind_bytes", "Bytes written but not yet read.", labels=["source"]
        )
        last = GaugeMetricFamily(
            "kvwatch_source_last_line_timestamp_seconds",
            "Wall-clock time a source last read a line.",
            labels=["source"],
        )
        for feeder in feeders:
            restarts.add_metric([feeder.name], feeder.restarts_total())
            up.add_metric([feeder.name], float(feeder.up))
            behind.add_metric([feeder.name], float(getattr(feeder.source, "bytes_behind", 0) or 0))
            if feeder.last_line_time is not None:
                last.add_metric([feeder.name], feeder.last_line_time)
        yield from (restarts, up, behind, last)
        yield GaugeMetricFamily(
            "kvwatch_queue_batches", "Line batches waiting for the pipeline.", self.queued()
        )
        info = GaugeMetricFamily("kvwatch_build_info", "kvwatch's version; value 1.", labels=["version"])
        info.add_metric([__version__], 1.0)
        yield info
