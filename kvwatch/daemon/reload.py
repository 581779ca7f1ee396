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
import queue
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from prometheus_client import Counter

from kvwatch.config.types import Config
from kvwatch.daemon.feed import Feeder
from kvwatch.daemon.live_alerts import LiveAlerts, silences_of
from kvwatch.daemon.pods import LabelledRegistry, PodFleet
from kvwatch.daemon.setup import Prepared, build_deliveries
from kvwatch.pipeline import Pipeline
from kvwatch.sources.pods import PodContainer, scan
from kvwatch.sources.positions import PositionStore
from kvwatch.sources.settings import PodsSettings, SourceConfig

log = logging.getLogger("kvwatch")


class Running(Protocol):
    """What a reload reads and changes in the running daemon."""

    config: Config
    feeders: dict[str, Feeder]
    fleets: dict[str, PodFleet]
    store: PositionStore | None
    items: queue.Queue[object]
    registry: LabelledRegistry
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
    children = reload_pods(daemon, wanted)  # (a pods source's containers: its own to start and stop)
    feeders = {name: f for name, f in list(daemon.feeders.items()) if name not in children}
    removed = sorted(name for name in feeders if name not in wanted)
    stopping = [f for name, f in feeders.items() if wanted.get(name) != f.config]
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
        if name not in daemon.feeders and name not in daemon.fleets:
            daemon.start_feeder(name)
            log.info("reload: source %s started", name)

    def swap() -> None:
        """On the pipeline thread: detectors, silences, notifiers."""
        daemon.pipeline.settings = prepared.detectors
        daemon.alerts.silences = silences_of(config)
        old = daemon.alerts.deliveries
        for delivery in old:
            delivery.close(2.0, handing_over=True)
        daemon.alerts.deliveries = build_deliveries(prepared, daemon.config, daemon.counter, old)

    daemon.call(swap)


def reload_pods(daemon: Running, wanted: dict[str, SourceConfig]) -> set[str]:
    """Stop the pods sources removed or changed (a removed one's containers forgotten as a removed
    source is; a changed one's handed to its successor, which keeps those its selectors still take);
    returns the names of the containers still followed."""
    for name, fleet in list(daemon.fleets.items()):
        if wanted.get(name) == fleet.config:
            continue
        fleet.stop()
        del daemon.fleets[name]
        if name not in wanted or wanted[name].type != "pods":
            fleet.stop_children(forget=True)
            log.info("reload: source %s removed: its containers' alerts resolved, series dropped", name)
            continue
        successor = daemon.fleets[name] = PodFleet(wanted[name], daemon, _kept(fleet, wanted[name]))
        successor.start()
        log.info("reload: source %s changed", name)
    return {child for fleet in daemon.fleets.values() for child in fleet.children}


def _kept(fleet: PodFleet, config: SourceConfig) -> dict[str, PodContainer]:
    """The containers of `fleet` the changed source still takes alike (same engine and labels); the
    others' readers are stopped and forgotten (the successor starts them anew if it takes them)."""
    assert isinstance(config.settings, PodsSettings)
    now = scan(config.settings.root, config.settings.select)
    kept = {}
    for name, container in list(fleet.children.items()):
        again = now.get(name.removeprefix(f"{fleet.name}_"))
        same_engine = (
            again is not None
            and (config.settings.select[again.selector].engine or config.engine)
            == fleet.host.feeders[name].config.engine
        )
        if again is not None and same_engine and again.labels() == container.labels():
            kept[name] = container
        else:
            fleet.retire(name)
    return kept
