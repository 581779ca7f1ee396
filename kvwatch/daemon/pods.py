"""`pods` sources in the daemon: one thread per source follows its pod log tree, starting a reader
(a Feeder over a kvwatch.sources.pods.ContainerSource) for each container its selectors take, and
retiring the readers of containers whose pod is gone.

A container is its own pipeline source (`<source>_<namespace>_<pod>_<container>`): its own parser
(engine detected per container, or its selector's), windows, alerts and saved position; its series carry
`namespace`, `pod`, `container` (and `role`) labels besides `source` (LabelledRegistry). A new pod is
found within SCAN seconds. A pod whose folder has been gone for GONE seconds (its reader drained its
open files meanwhile) is forgotten as a removed source is: its firing alerts resolve, its series leave
/metrics, and its position file is deleted. The source's own state file lists the containers it
followed: after a restart, a container found without a saved position appeared while kvwatch was down
and is read from its beginning, and one that went away meanwhile has its position file pruned.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from kvwatch.daemon.feed import Feeder
from kvwatch.daemon.live_alerts import LiveAlerts
from kvwatch.engines import markers_of
from kvwatch.model import EngineFact, Event
from kvwatch.pipeline import Pipeline
from kvwatch.sources.pods import ContainerSource, PodContainer, scan
from kvwatch.sources.positions import PositionStore
from kvwatch.sources.settings import PodsSettings, SourceConfig, StartAt

log = logging.getLogger("kvwatch.source")

#: Seconds between two looks at the tree.
SCAN = 2.0
#: Seconds a container's folder must be gone before it is forgotten (its reader drains meanwhile).
GONE = 3.0


class LabelledRegistry(CollectorRegistry):
    """The daemon's registry: every sample whose `source` is a pod's container gets that container's
    labels (`extra`), unless it has a label of the same name already."""

    def __init__(self, auto_describe: bool = False) -> None:
        super().__init__(auto_describe=auto_describe)
        self.extra: dict[str, dict[str, str]] = {}

    def observe(self, event: Event) -> None:
        """(A pipeline observer) A container's engine named the model it serves: its `model` label."""
        if type(event) is EngineFact and event.key == "model" and event.source in self.extra:
            self.extra[event.source] = {**self.extra[event.source], "model": event.value}

    def collect(self) -> Iterator[Metric]:
        """The metrics, with the containers' labels added."""
        extra = dict(self.extra)
        for metric in super().collect():
            if extra:
                metric.samples = [
                    s._replace(labels={**extra[s.labels["source"]], **s.labels})
                    if s.labels.get("source") in extra
                    else s
                    for s in metric.samples
                ]
            yield metric


class Host(Protocol):
    """What a pods source needs of the running daemon."""

    feeders: dict[str, Feeder]
    store: PositionStore | None
    pipeline: Pipeline
    alerts: LiveAlerts
    items: queue.Queue[object]
    registry: LabelledRegistry

    def call(self, fn: Callable[[], None], timeout: float = 30.0) -> bool:
        """Run `fn` on the pipeline thread after everything queued so far; True once done."""
        ...


def discovered(config: SourceConfig) -> set[str]:
    """The pipeline names of the containers a pods source takes now."""
    assert isinstance(config.settings, PodsSettings)
    return {c.name(config.name) for c in scan(config.settings.root, config.settings.select).values()}


class PodFleet:
    """One pods source's thread and the readers of its containers."""

    def __init__(
        self, config: SourceConfig, host: Host, adopted: Mapping[str, PodContainer] | None = None
    ) -> None:
        """Follow `config`'s tree for `host`; `adopted`: containers of the same source whose readers
        run already (a reload changed the source)."""
        assert isinstance(config.settings, PodsSettings)
        self.config, self.settings, self.host = config, config.settings, host
        self.children: dict[str, PodContainer] = dict(adopted or {})
        self.opened = threading.Event()  # set after the first look at the tree
        self.error: str | None = None
        self._gone: dict[str, float] = {}
        self._models: dict[str, str] = {}  # (the model each container served, saved with the containers)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"kvwatch-pods-{config.name}", daemon=True)

    @property
    def name(self) -> str:
        """The source's name."""
        return self.config.name

    def start(self) -> None:
        """Start following the tree."""
        self._thread.start()

    def stop(self) -> None:
        """Stop looking at the tree (the containers' readers go on until stop_children)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
            self._save(force=False)  # (a model named since the last look)

    def stop_children(self, forget: bool) -> None:
        """Stop every container's reader; with `forget`, forget them as a removed source is (positions
        kept: the source may come back)."""
        for name in sorted(self.children):
            self._retire(name, forget=forget, prune=False)

    def retire(self, name: str) -> None:
        """Stop one container's reader and forget it as a removed source is (position kept)."""
        self._retire(name, forget=True, prune=False)

    def _run(self) -> None:
        """Look at the tree every SCAN seconds until stopped."""
        saved = self.host.store.load(self.name) if self.host.store is not None else None
        known = saved.get("containers") if isinstance(saved, dict) else None
        models = saved.get("models") if isinstance(saved, dict) else None
        self._models = {str(k): str(v) for k, v in models.items()} if isinstance(models, dict) else {}
        first = not isinstance(known, list)
        for name in [] if first else sorted(set(map(str, known or [])) - set(discovered(self.config))):
            self._prune(name)  # (gone while kvwatch was down)
        looked = False
        try:
            while not self._stop.is_set():
                try:
                    self.sync("end" if first else "beginning", save=not looked)
                    looked = True
                except Exception as exc:  # a bug here must not end the source: try again
                    log.exception("source %s: looking at %s failed", self.name, self.settings.root)
                    self.error = f"{type(exc).__name__}: {exc}"
                first = False
                self.opened.set()
                self._stop.wait(SCAN)
        finally:
            self.opened.set()

    def sync(self, start_at: StartAt, *, save: bool = False) -> None:
        """One look at the tree: readers for new containers (`start_at` for one found without a saved
        position), retirement for those gone long enough; the containers followed saved when they
        changed (or `save`)."""
        root = self.settings.root
        found = {c.name(self.name): c for c in scan(root, self.settings.select).values()}
        self.error = None if root.is_dir() else f"no pod log tree at {root}"
        changed = save
        for name, container in found.items():
            self._gone.pop(name, None)
            if name not in self.children:
                self._add(name, container, self.settings.start_at if start_at == "end" else "beginning")
                changed = True
        now = time.monotonic()
        for name in sorted(set(self.children) - set(found)):
            since = self._gone.setdefault(name, now)
            if now - since >= GONE:
                log.info("source %s: %s is gone: its alerts resolve, its position is pruned", self.name, name)
                self._retire(name, forget=True, prune=True)
                del self._gone[name]
                changed = True
        self._save(force=changed)

    def _save(self, *, force: bool) -> None:
        """Save the containers followed and the models they serve, when they changed (or `force`)."""
        models = self._served()
        if not (force or models != self._models) or self.host.store is None:
            return
        self._models = models
        state = {"root": str(self.settings.root), "containers": sorted(self.children), "models": models}
        try:
            self.host.store.save(self.name, state)
        except (OSError, ValueError) as exc:
            log.error("cannot save the containers of %s: %s", self.name, exc)

    def _add(self, name: str, container: PodContainer, start_at: StartAt) -> None:
        """Start reading one container."""
        selector = self.settings.select[container.selector]
        config = SourceConfig(
            name,
            selector.engine or self.config.engine,
            "pods",
            self.settings,
            self.config.year,
            self.config.tz,
            self.config.options,
        )
        root, store = self.settings.root, self.host.store

        def opener(config: SourceConfig, saved: Mapping[str, Any] | None) -> ContainerSource:
            markers = markers_of(config.engine)
            return ContainerSource(name, root, container, start_at=start_at, saved=saved, markers=markers)

        feeder = Feeder(config, lambda: store.load(name) if store else None, self.host.items.put, opener)
        self.children[name] = container
        extra = getattr(self.host.registry, "extra", None)
        if isinstance(extra, dict):
            model = self._models.get(name)  # (told by its engine's startup lines, maybe before a restart)
            extra[name] = {**container.labels(), **({"model": model} if model else {})}
        self.host.feeders[name] = feeder
        feeder.start()
        log.info(
            "source %s: following %s/%s/%s",
            self.name,
            container.namespace,
            container.pod,
            container.container,
        )

    def _served(self) -> dict[str, str]:
        """The model each followed container's engine named (the registry's `model` labels)."""
        extra = getattr(self.host.registry, "extra", None)
        if not isinstance(extra, dict):
            return {}
        return {n: extra[n]["model"] for n in sorted(self.children) if "model" in extra.get(n, {})}

    def _retire(self, name: str, *, forget: bool, prune: bool) -> None:
        """Stop one container's reader (its last position saved); `forget`: drop its series and
        resolve its alerts; `prune`: delete its position too."""
        self.children.pop(name, None)
        feeder = self.host.feeders.pop(name, None)
        if feeder is not None:
            feeder.stop()
            feeder.join(10.0)
        if not forget:
            return
        host = self.host

        def forget_it() -> None:
            """On the pipeline thread, after its reader's last lines and position."""
            host.pipeline.forget(name)
            host.alerts.forget(name)
            extra = getattr(host.registry, "extra", None)
            if isinstance(extra, dict):
                extra.pop(name, None)
            if prune:
                self._prune(name)

        host.call(forget_it)

    def _prune(self, name: str) -> None:
        """Delete a container's position file."""
        if self.host.store is not None:
            self.host.store.forget(name)
