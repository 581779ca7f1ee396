"""kvwatch's own per-source line counts, kept as plain ints on the hot path and exported at scrape time."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from kvwatch.model import SourceCounts

_FAMILIES = (
    ("kvwatch_lines", "Log lines read, per source.", "lines"),
    ("kvwatch_lines_recognized", "Lines a parser recognised, per source.", "recognized"),
    ("kvwatch_parse_errors", "Lines of a known shape with unusable values, per source.", "errors"),
    ("kvwatch_lines_truncated", "Lines cut at the line-size cap, per source.", "truncated"),
)


class SourceCountsCollector(Collector):
    """Exports SourceCounts of every source as counters."""

    def __init__(self) -> None:
        self.counts: dict[str, SourceCounts] = {}

    def of(self, source: str) -> SourceCounts:
        """The counts of a source, created at zero on first use."""
        counts = self.counts.get(source)
        if counts is None:
            counts = self.counts[source] = SourceCounts()
        return counts

    def adopt(self, source: str, counts: SourceCounts) -> None:
        """Export counts made before the metrics were (replay starts reading first)."""
        self.counts[source] = counts

    def collect(self) -> Iterator[Metric]:
        """Yield one counter family per count."""
        for name, doc, attr in _FAMILIES:
            family = CounterMetricFamily(name, doc, labels=["source"])
            for source, counts in sorted(self.counts.items()):
                family.add_metric([source], getattr(counts, attr))
            yield family
