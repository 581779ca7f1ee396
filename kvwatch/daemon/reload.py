"""SIGHUP: move a running daemon to a new, already validated config without resetting any counter.

Sources: a removed or changed source's feeder is stopped and its last position saved before a
changed one reopens (so it resumes exactly there); new sources start. A removed source is forgotten:
its firing alerts resolve at once (evidence `reason: source_removed`), its series leave /metrics;
its position file stays, so the source resumes there if it comes back. Detector settings, silences
and notifiers are swapped on the pipeline thread, between two items; notifier queues are closed and
rebuilt from their spools, so nothing pending is lost. The server address and the state directory
are read at start only: a change is logged and waits for a restart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from prometheus_client import Counter

from kvwatch.config.types import Config
from kvwatch.daemon.feed import Feeder
from kvwatch.daemon.live_alerts import LiveAlerts, silences_of
from kvwatch.daemon.setup import Prepared, build_deliveries
from kvwatch.pipeline import Pipeline

log = logging.getLogger("kvwatch")


class Running(Protocol):
    """What a reload reads and changes in the running daemon."""

    config: Config
    feeders: dict[str, Feeder]
    pipeline: Pipeline
    alerts: LiveAlerts
    counter: Counter

    def call(self, fn: Callable[[], None], timeout: float = 30.0) -> bool:
        """Run `fn` on the pipeline thread after everything queued so far; True once done."""
        ...

    def start_feeder(self, name: str) -> None:
        """Start reading the configured source `name`."""
        ...


def apply_reload(daemon: Running, config: Config, prepared: Prepared) -> None:
    """Apply `config` to `daemon` (main thread)."""
    old = daemon.config
    if (old.server, old.state_dir) != (config.server, config.state_dir):
        log.warning("reload: [server] and state_dir changes take effect at the next restart")
    wanted = {s.name: s for s in config.sources}
    removed = sorted(name for name in daemon.feeders if name not in wanted)
    stopping = [f for name, f in daemon.feeders.items() if wanted.get(name) != f.config]
    for feeder in stopping:
        feeder.stop()
    for feeder in stopping:
        feeder.join()
        del daemon.feeders[feeder.name]
        log.info("reload: source %s stopped", feeder.name)

    def forget() -> None:
        """On the pipeline thread, once their final positions are saved: removed sources forgotten."""
        for name in removed:
            daemon.pipeline.forget(name)
            daemon.alerts.forget(name)
            log.info("reload: source %s removed: alerts resolved, series dropped, position kept", name)

    daemon.call(forget)  # (after their final positions are saved, before a changed source reopens)
    # Keep the running server, state and alert-timing settings; take everything else from the new file.
    daemon.config = replace(config, server=old.server, state_dir=old.state_dir, alerting=old.alerting)
    for name in wanted:
        if name not in daemon.feeders:
            daemon.start_feeder(name)
            log.info("reload: source %s started", name)

    def swap() -> None:
        """On the pipeline thread: detectors, silences, notifiers."""
        daemon.pipeline.settings = prepared.detectors
        daemon.alerts.silences = silences_of(config)
        for delivery in daemon.alerts.deliveries:
            delivery.close(2.0)
        daemon.alerts.deliveries = build_deliveries(prepared, daemon.config, daemon.counter)

    daemon.call(swap)
