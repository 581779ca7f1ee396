"""Metrics derived from detector state at scrape time: alerts firing, pinned cache length and share."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from kvwatch.alerts import AlertBook
from kvwatch.detectors import pinned_cache
from kvwatch.windows.window import Windows


class AlertCollector(Collector):
    """`kvwatch_alert_firing{alert,source,...}`: 1 while firing, 0 once resolved."""

    def __init__(self, book: AlertBook) -> None:
        self.book = book

    def collect(self) -> Iterator[Metric]:
        """One gauge; each alert carries its own label set (engine, entry, ... as they apply)."""
        family = GaugeMetricFamily("kvwatch_alert_firing", "1 while an alert fires, 0 after it resolved.")
        for _, tracked in sorted(self.book.tracked.items()):
            alert = tracked.alert
            labels = {"alert": alert.alert, **alert.labels}
            family.samples.append(Sample("kvwatch_alert_firing", labels, float(alert.state == "firing")))
        yield family


class PinnedCollector(Collector):
    """`kvwatch_pinned_cache_tokens` (C while pinned, else 0) and `..._share_ratio` per request group."""

    def __init__(self, windows: Windows, settings: Callable[[], pinned_cache.Settings]) -> None:
        self.windows = windows
        self.settings = settings

    def collect(self) -> Iterator[Metric]:
        """Assess every request group now."""
        tokens = GaugeMetricFamily(
            "kvwatch_pinned_cache_tokens",
            "Cached length most recent requests are pinned at (0 when none is).",
        )
        share = GaugeMetricFamily(
            "kvwatch_pinned_cache_share_ratio",
            "Share of recent requests whose cached length equals the most common non-zero one.",
        )
        cfg = self.settings()
        for labels, points in sorted(self.windows.requests.items()):
            verdict = pinned_cache.assess(points, cfg)
            length = verdict.cached if verdict.pinned else 0
            if not length:  # (one conversation pinned, by the detector's second rule)
                run = pinned_cache.conversation_run(
                    points, pinned_cache.group_settings(self.windows, labels, cfg)
                )
                length = run.cached if run is not None else 0
            tokens.samples.append(Sample(tokens.name, dict(labels), float(length)))
            share.samples.append(Sample(share.name, dict(labels), verdict.share))
        yield tokens
        yield share
