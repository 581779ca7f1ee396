"""`kvwatch run`: sources -> bounded queue -> one pipeline thread; scheduler ticks; HTTP; signals; systemd.

Threads and who owns what:
  - one Feeder thread per source (daemon.feed): owns its source; polls it and puts lines and
    positions on the queue, blocking while the queue is full (backpressure, nothing dropped);
  - the pipeline thread (daemon.loop): owns parsers, metrics, windows, the AlertBook, alert state and
    saved positions; it holds `lock` while it handles an item, and scrapes take the same lock;
  - the apscheduler thread: its jobs only set a flag and wake the pipeline (tick, sync, heartbeat),
    or send systemd a STATUS line;
  - HTTP threads serve /metrics, / and /healthz; one Delivery thread per notifier sends alerts;
  - the main thread handles signals: SIGHUP reloads, SIGTERM/SIGINT drain and stop. Its handlers
    only set a flag, and it sleeps on a kvwatch.daemon.wakeup.Wakeup, never on a lock a handler could want.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from urllib.parse import urlsplit

from apscheduler.schedulers.background import BackgroundScheduler
from prometheus_client import PlatformCollector, ProcessCollector

from kvwatch import __version__
from kvwatch.atomic import unwritable
from kvwatch.config import load_config
from kvwatch.config.types import Config, ConfigError
from kvwatch.daemon.feed import Feeder
from kvwatch.daemon.live_alerts import LiveAlerts, silences_of
from kvwatch.daemon.loop import STOP, WAKE, Call, PipelineLoop
from kvwatch.daemon.metrics import SourceStateCollector
from kvwatch.daemon.pods import LabelledRegistry, PodFleet, discovered
from kvwatch.daemon.probes import ProbeCollector, Probes
from kvwatch.daemon.queue import LineQueue
from kvwatch.daemon.reload import apply_reload
from kvwatch.daemon.sdnotify import SystemdNotifier
from kvwatch.daemon.setup import Prepared, build_deliveries, prepare
from kvwatch.daemon.wakeup import Wakeup
from kvwatch.engines import markers_of
from kvwatch.forensic.live import landing_charts, window_report
from kvwatch.metrics import Metrics
from kvwatch.model import Finding
from kvwatch.notify.delivery import notifications_counter
from kvwatch.notify.status import NotifierCollector
from kvwatch.pipeline import Pipeline
from kvwatch.sources.positions import PositionStore
from kvwatch.web.config import load_web_config
from kvwatch.web.exporter import Exporter, warn_if_exposed
from kvwatch.web.landing import ProbeRow, SourceRow, landing_page

log = logging.getLogger("kvwatch")

SYNC_INTERVAL = 5.0
HEARTBEAT = 1.0
STALE = 30.0  # /healthz fails when the pipeline thread has not finished an item for this long
STOP_WAIT = 5.0


@dataclass(frozen=True)
class Options:
    """What the command line may change."""

    listen: tuple[tuple[str, int], ...] = ()  # (address, port) each; () takes [server]'s; "" every interface
    web_config: Path | None = None  # instead of server.web_config
    sync_interval: float = SYNC_INTERVAL
    persist: bool = True  # False: no positions or alert state (stdin without a config file)


class Daemon:
    """One running kvwatch; `run()` blocks until stopped and returns the exit status."""

    def __init__(self, config: Config, prepared: Prepared, options: Options) -> None:
        """Build everything and bind the HTTP port; nothing runs yet."""
        self.config, self.options = config, options
        # Positions, alert state and queued notifications live there: without it a restart would
        # repeat lines and a webhook outage would lose alerts, so refuse rather than run without.
        problem = unwritable(config.state_dir, create=True) if options.persist else None
        if problem is not None:
            raise OSError(f"{problem}; positions, alert state and queued notifications are kept there")
        self.registry = LabelledRegistry(auto_describe=True)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        timings = config.alerting
        self.pipeline = Pipeline(
            Metrics(self.registry),
            settings=prepared.detectors,
            resolve_after=timings.resolve_after,
            observers=[self.registry.observe],  # (a pod's container's model, from its engine: a label)
        )
        self.items: queue.Queue[object] = LineQueue()
        self.lock = threading.Lock()
        self.systemd = SystemdNotifier()
        self.counter = notifications_counter(self.registry)
        self.alerts = LiveAlerts(
            config.state_dir,
            self.pipeline.book,
            repeat=timings.repeat_interval,
            suppress_older_than=timings.suppress_older_than,
        )
        self.alerts.silences = silences_of(config)
        self.alerts.labels_of = lambda source: self.registry.extra.get(source, {})  # (a pod's labels)
        store = PositionStore(config.state_dir) if options.persist else None
        self.store = store
        self.loop = PipelineLoop(
            self.pipeline,
            alerts=self.alerts,
            store=store,
            items=self.items,
            lock=self.lock,
            heartbeat=self._beat,
            ended=self._ended,
        )
        self.feeders: dict[str, Feeder] = {}
        self.fleets: dict[str, PodFleet] = {}  # `pods` sources, whose containers' feeders are in feeders
        self.registry.register(SourceStateCollector(lambda: list(self.feeders.values()), self.items.qsize))
        self.probes = Probes(prepared.probes, lambda: self.pipeline.settings.probe_prefix_miss, self._hold)
        self.registry.register(ProbeCollector(self.probes))
        self.registry.register(NotifierCollector(lambda: [d.status() for d in self.alerts.deliveries]))
        self._prepared = prepared
        self._finished: set[str] = set()
        self._started = False  # every configured source's feeder has tried to open (READY=1 was sent)
        self._last_beat = time.monotonic()
        self._last_ping = 0.0
        # Set by the signal handlers (and _ended), read by the main loop: plain flags, no lock (see wakeup).
        self.stopping = self.reloading = False
        self._wakeup = Wakeup()
        self._status = (0, time.monotonic())
        (address, port), *more = options.listen or ((config.server.listen_address, config.server.port),)
        web_config = options.web_config or config.server.web_config
        web = load_web_config(web_config) if web_config else None
        self.exporter = Exporter(
            address,
            port,
            self.registry,
            lock=self.lock,
            page=self._page,
            report=self._report,
            health=self._health,
            ready=self._ready,
            web=web,
            more=more,
        )
        for host, _ in ((address, port), *more):
            warn_if_exposed(host, web is not None and bool(web.users))

    def run(self) -> int:
        """Start, wait for signals, stop; 0 on a clean stop."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.on_stop)
        signal.signal(signal.SIGHUP, self.on_reload)
        self._wakeup.install()
        if self.options.persist:
            self.alerts.load()
        self.alerts.deliveries = build_deliveries(self._prepared, self.config, self.counter)
        configured = {source.name for source in self.config.sources}
        for source in self.config.sources:  # (a pods source's containers there now)
            configured |= discovered(source) if source.type == "pods" else set()
        for gone in sorted(self.pipeline.book.sources() - configured):  # (removed while kvwatch was down)
            log.info("source %s is no longer configured: its restored alerts resolve", gone)
            self.alerts.forget(gone)
        self.loop.thread.start()
        self.exporter.start()
        log.info("kvwatch %s listening on %s", __version__, " ".join(self.exporter.urls))
        for source in self.config.sources:
            self.start_feeder(source.name)
        for fleet in list(self.fleets.values()):
            fleet.opened.wait(10.0)
        for feeder in list(self.feeders.values()):
            feeder.opened.wait(10.0)
        scheduler = self._schedule()
        self._started = True
        self.systemd.notify("READY=1", self._status_line())
        while not self.stopping:
            self._wakeup.wait(1.0)
            if self.reloading:
                self.reloading = False
                self.reload()
        scheduler.shutdown(wait=False)
        try:
            return self._shutdown()
        finally:
            self._wakeup.close()

    def _schedule(self) -> BackgroundScheduler:
        """The jobs: detector tick, position sync, heartbeat (watchdog) and STATUS; they only wake."""
        scheduler = BackgroundScheduler(timezone="UTC")
        beat = min(HEARTBEAT, (self.systemd.watchdog_interval() or HEARTBEAT) / 2)
        jobs = (
            (self._due(self.loop.tick_due), 10.0),
            (self._due(self.loop.sync_due), self.options.sync_interval),
        )
        for job, seconds in (*jobs, (self._poke, beat), (self._send_status, 5.0)):
            scheduler.add_job(job, "interval", seconds=seconds, max_instances=1, coalesce=True)
        self.probes.schedule(scheduler)
        scheduler.start()
        return scheduler

    def _hold(self, name: str, findings: list[Finding]) -> None:
        """A probe's alert decision, applied on the pipeline thread (after what is queued already)."""
        self.items.put(Call(lambda: self.loop.hold(f"probe:{name}", findings), threading.Event()))

    def _due(self, flag: threading.Event) -> Callable[[], None]:
        """A job that raises `flag` and wakes the pipeline."""

        def job() -> None:
            flag.set()
            self._poke()

        return job

    def _poke(self) -> None:
        """Wake the pipeline; a full queue means it is busy and beats anyway."""
        with contextlib.suppress(queue.Full):
            self.items.put_nowait(WAKE)

    def _beat(self) -> None:
        """Called by the pipeline thread after each item: the watchdog ping comes from here."""
        now = time.monotonic()
        self._last_beat = now
        interval = self.systemd.watchdog_interval()
        if interval is not None and now - self._last_ping >= interval:
            self._last_ping = now
            self.systemd.notify("WATCHDOG=1")

    def _health(self) -> tuple[bool, str]:
        """Alive and heartbeating?"""
        if not self.loop.thread.is_alive():
            return False, "pipeline thread is not running"
        age = time.monotonic() - self._last_beat
        if age > STALE:
            return False, f"pipeline has not finished an item for {age:.0f} s"
        return True, "ok"

    def _ready(self) -> tuple[bool, str]:
        """Has every configured source started (tried to open, as before READY=1)? Else which not."""
        feeders: dict[str, Feeder | PodFleet] = {**self.feeders, **self.fleets}
        waiting = sorted(
            s.name
            for s in self.config.sources
            if s.name not in feeders or not feeders[s.name].opened.is_set()
        )
        if waiting:
            return False, f"sources not started yet: {', '.join(waiting)}"
        if not self._started:
            return False, "starting"
        # Started, and ready: a source that is down is retried (kvwatch_source_up says so too), named here.
        down = sorted(f"{f.name} ({f.error})" for f in list(feeders.values()) if f.error is not None)
        return True, f"ok; down, retrying: {'; '.join(down)}" if down else "ok"

    def _page(self) -> str:
        """The landing page (the exporter calls it under the pipeline's lock)."""
        now = time.time()
        windows, counts = self.pipeline.windows.sources, self.pipeline.metrics.sources.counts
        rows = []
        for f in sorted(list(self.feeders.values()), key=lambda f: f.name):
            window, count = windows.get(f.name), counts.get(f.name)
            engine: str = f.config.engine
            if engine == "auto":
                engine = f"auto: {window.kind}" if window is not None and window.kind else "auto (deciding)"
            lines, recognized, errors = count.parsed() if count is not None else (0, 0, 0)
            last = window.last_event if window is not None else None
            row = SourceRow(f.name, f.config.type, engine, f.up, f.error, last, lines, recognized, errors)
            rows.append(row)
        silences = self.alerts.silences
        firing = [(a, any(s.mutes(a, now) for s in silences)) for a in self.pipeline.book.firing()]
        charts = landing_charts(self.pipeline.windows, [alert for alert, _ in firing])
        missing = {a.labels.get("probe") for a, _ in firing if a.alert == "probe_prefix_miss"}
        notifiers = [delivery.status() for delivery in self.alerts.deliveries]
        return landing_page(
            __version__,
            rows,
            firing,
            now,
            charts=charts,
            probes=self._probe_rows(missing),
            notifiers=notifiers,
        )

    def _probe_rows(self, missing: set[str | None]) -> list[ProbeRow]:
        """Each `[[probe]]`'s row of the landing page (under the probes' lock); `missing`: the probes whose
        probe_prefix_miss fires."""
        rows = []
        with self.probes.lock:
            for probe, _ in self.probes.probes:
                state = self.probes.states.get(probe.name)
                if state is None:
                    continue
                split = urlsplit(probe.url)  # (no user, password or query: they may hold a secret)
                port = f":{split.port}" if split.port else ""
                endpoint = f"{split.scheme}://{split.hostname}{port}{split.path}"
                if probe.attribution_header and probe.nonce_form != "billing-header":
                    endpoint += f" (nonce_form {probe.nonce_form})"
                rows.append(
                    ProbeRow(probe.name, endpoint, state.last_at, state.last_outcome, state.last_verdict,
                             state.share, probe.name in missing)
                )  # fmt: skip
        return rows

    def _report(self) -> str:
        """`/report`: the report of the windows and firing alerts (called under the pipeline's lock)."""
        windows = self.pipeline.windows
        counts = dict(self.pipeline.metrics.sources.counts)
        engines = {name: window.kind for name, window in windows.sources.items()}
        return window_report(windows, counts, engines, list(self.pipeline.book.firing()), __version__)

    def _status_line(self) -> str:
        """`STATUS=` for systemctl status: sources up, lines per second, alerts firing."""
        lines = sum(c.lines for c in list(self.pipeline.metrics.sources.counts.values()))
        before, since = self._status
        now = time.monotonic()
        self._status = (lines, now)
        rate = (lines - before) / max(now - since, 1e-3)
        feeders = list(self.feeders.values())
        up = sum(f.up for f in feeders)
        return f"STATUS={up}/{len(feeders)} sources up, {rate:.1f} lines/s, {self.loop.firing} alerts firing"

    def _send_status(self) -> None:
        """The STATUS job."""
        self.systemd.notify(self._status_line())

    def start_feeder(self, name: str) -> None:
        """Start reading the configured source `name`."""
        source = next(s for s in self.config.sources if s.name == name)
        if source.type == "pods":  # (a reader per container, started by the source's own thread)
            fleet = self.fleets[name] = PodFleet(source, self)
            fleet.start()
            return
        markers_of(source.engine)  # (its parsers' modules load here, not while the source opens)
        store = self.store
        feeder = Feeder(source, lambda: store.load(name) if store else None, self.items.put)
        self.feeders[name] = feeder
        feeder.start()

    def _ended(self, name: str) -> None:
        """A source's input ended (pipeline thread): stop once every source has ended."""
        self._finished.add(name)
        if set(self.feeders) <= self._finished:
            self.stopping = True
            self._wakeup.poke()

    def on_stop(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM/SIGINT: stop the main loop (a flag only: the wakeup fd wakes it)."""
        self.stopping = True

    def on_reload(self, signum: int, frame: FrameType | None) -> None:
        """SIGHUP: reload on the main loop (a flag only: the wakeup fd wakes it)."""
        self.reloading = True

    def reload(self) -> None:
        """SIGHUP: apply a new config without resetting counters; an invalid one is refused."""
        if self.config.path is None:
            log.info("SIGHUP: no config file to reload (stdin mode)")
            return
        self.systemd.notify("RELOADING=1", f"MONOTONIC_USEC={time.monotonic_ns() // 1000}")
        try:
            config = load_config(self.config.path)
            prepared = prepare(config)
        except ConfigError as exc:
            log.error("reload refused; the running config stays:\n%s", exc)
        else:
            apply_reload(self, config, prepared)
            self.probes.replace(prepared.probes)
            log.info("reloaded %s", config.path)
        self.systemd.notify("READY=1", self._status_line())

    def call(self, fn: Callable[[], None], timeout: float = 30.0) -> bool:
        """Run `fn` on the pipeline thread after everything queued so far; True once done."""
        done = threading.Event()
        self.items.put(Call(fn, done))
        return done.wait(timeout)

    def _shutdown(self) -> int:
        """Drain: stop the feeders, process what they read, save positions and alerts; 0 if clean."""
        self.systemd.notify("STOPPING=1")
        log.info("stopping: draining %d queued batches", self.items.qsize())
        for fleet in self.fleets.values():
            fleet.stop()
        for feeder in self.feeders.values():
            feeder.stop()
        for feeder in self.feeders.values():
            feeder.join(STOP_WAIT)
        self.items.put(STOP)
        self.loop.thread.join(STOP_WAIT * 2)
        for delivery in self.alerts.deliveries:
            delivery.close(2.0)
        self.exporter.stop()
        self.systemd.close()
        clean = not self.loop.thread.is_alive()
        for name, counts in sorted(self.pipeline.metrics.sources.counts.items()):
            log.info("source %s: %d lines processed by this run", name, counts.lines)
        log.info("stopped" if clean else "stopped before the pipeline finished draining")
        return 0 if clean else 1
