"""A kubelet's pod log tree: which containers a `pods` source follows, and one container's reader.

The tree (kubelet `pkg/kubelet/kuberuntime`): `<root>/<namespace>_<pod>_<uid>/<container>/<restart>.log`,
each file in the CRI framing (kvwatch.sources.cri). A restarted container writes `<restart+1>.log` beside
the last one; the kubelet rotates a file by renaming it to `<restart>.log.YYYYMMDD-HHMMSS` and reopening
(never copytruncate), then gzips the older rotated files; a deleted pod's folder goes away. Namespaces,
pods and containers are named with lowercase letters, digits, `-` and `.`, never `_`, so a folder's name
splits on `_` into its three parts, and `<source>_<namespace>_<pod>_<container>` names one container of
one source uniquely: the pipeline's source (its series, windows, alerts and saved position). A pod
recreated under the same name (a StatefulSet's) is the same series: its files are found through any uid.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kvwatch.sources.compressed import head_of
from kvwatch.sources.docker_json import Entry
from kvwatch.sources.file import FileSource, natural
from kvwatch.sources.positions import FP_SIZE, FilePosition, Identity, fingerprint
from kvwatch.sources.settings import PodSelector, StartAt

#: Seconds between two looks for a container's new files (a restart's `<n>.log`): a poll in between
#: reads the files already open.
RESCAN = 2.0
#: Seconds a container's reader waits between polls when nothing was read: its lines reach the pipeline
#: in batches, not one wake-up per line (a busy container writes hundreds a second).
PAUSE = 1.0


@dataclass(frozen=True, slots=True)
class PodContainer:
    """One container of the tree, as a selector matched it: `selector` is that selector's index."""

    namespace: str
    pod: str
    container: str
    selector: int
    role: str | None = None

    def name(self, source: str) -> str:
        """The pipeline's name for this container of `source`."""
        return f"{source}_{self.namespace}_{self.pod}_{self.container}"

    def labels(self) -> dict[str, str]:
        """The labels its series carry besides `source` (role only where a selector's roles tell one)."""
        labels = {"namespace": self.namespace, "pod": self.pod, "container": self.container}
        if self.role is not None:
            labels["role"] = self.role
        return labels

    def pattern(self, root: str | os.PathLike[str]) -> str:
        """The glob of its live files, under any uid of its pod."""
        return os.path.join(root, f"{self.namespace}_{self.pod}_*", self.container, "*.log")


def matches(selector: PodSelector, namespace: str, pod: str, container: str) -> bool:
    """Whether the selector's globs take this container."""
    return (
        fnmatch.fnmatchcase(namespace, selector.namespace)
        and fnmatch.fnmatchcase(pod, selector.pod)
        and fnmatch.fnmatchcase(container, selector.container)
    )


def role_of(selector: PodSelector, pod: str) -> str | None:
    """The role the first of the selector's pod-name globs that matches tells, if any."""
    return next((role for role, pattern in selector.roles if fnmatch.fnmatchcase(pod, pattern)), None)


def scan(root: str | os.PathLike[str], selectors: Sequence[PodSelector]) -> dict[str, PodContainer]:
    """The containers of the tree the selectors take (the first that matches decides), by their
    `<namespace>_<pod>_<container>`; none when the tree cannot be read."""
    found: dict[str, PodContainer] = {}
    try:
        pods = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return found
    for pod_dir in pods:
        parts = pod_dir.name.split("_")
        if len(parts) != 3 or not pod_dir.is_dir():
            continue
        namespace, pod, _ = parts
        wanted = [i for i, s in enumerate(selectors) if fnmatch.fnmatchcase(namespace, s.namespace)]
        if not wanted:
            continue
        try:
            containers = sorted(e.name for e in os.scandir(pod_dir.path) if e.is_dir())
        except OSError:  # (deleted between the two looks)
            continue
        for container in containers:
            index = next((i for i in wanted if matches(selectors[i], namespace, pod, container)), None)
            key = f"{namespace}_{pod}_{container}"
            if index is not None and key not in found:
                found[key] = PodContainer(namespace, pod, container, index, role_of(selectors[index], pod))
    return found


class ContainerSource(FileSource):
    """One container's log files (`<restart>.log` under any uid of its pod), followed as a `file`
    source follows a glob: rotations, restarts and its saved position as there, each file's framing
    told from its head (CRI). It looks for new files at most every RESCAN seconds and waits PAUSE
    seconds between idle polls (no file watcher: a node may run dozens of containers)."""

    def __init__(
        self,
        name: str,
        root: str | os.PathLike[str],
        container: PodContainer,
        *,
        start_at: StartAt = "end",
        saved: Mapping[str, Any] | None = None,
        markers: tuple[str, ...] | None = None,
    ) -> None:
        """Follow `container`'s files under `root`, resuming from `saved`."""
        self.container = container
        self._found: list[str] = []
        self._scanned = -RESCAN
        self._pause = threading.Event()
        super().__init__(name, container.pattern(root), start_at=start_at, saved=saved, markers=markers)

    def watched(self) -> list[str]:
        """Nothing: polled every PAUSE seconds instead."""
        return []

    def wait(self, timeout: float) -> None:
        """Wait PAUSE seconds before the next poll (whatever the reader's `timeout`: a stop waits that
        long at most)."""
        self._pause.wait(PAUSE)

    def _add(
        self, path: str, saved: list[FilePosition] | None, start_at: StartAt, pending: Sequence[Entry] = ()
    ) -> None:
        """Follow one live file; read from its beginning (new since the last save, or asked for), its
        older rotated files come first, oldest first, plain or compressed: a container found late, or
        rotated while kvwatch was down, loses none of its lines."""
        if not saved and (saved is not None or start_at == "beginning"):
            oldest = oldest_rotated(path)
            saved = [oldest] if oldest is not None else saved
        super()._add(path, saved, start_at, pending)

    def _matches(self) -> list[str]:
        """The container's live files, looked for at most every RESCAN seconds."""
        now = time.monotonic()
        if now - self._scanned >= RESCAN:
            self._scanned = now
            self._found = sorted((p for p in glob.glob(self.pattern) if os.path.isfile(p)), key=natural)
        return self._found


def oldest_rotated(path: str) -> FilePosition | None:
    """The start of the oldest rotated file of a live file (`<n>.log.YYYYMMDD-HHMMSS`, or it gzipped), as
    a saved position (kvwatch.sources.filetail.FileTail then reads it and every later one in turn); None
    when there is none."""
    directory, base = os.path.split(path)
    try:
        names = [n for n in os.listdir(directory) if n.startswith(base + ".") and not n.endswith(".tmp")]
    except OSError:
        return None
    for name in sorted(names, key=lambda n: n.removesuffix(".gz")):
        try:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            head = head_of(fd) if name.endswith(".gz") else os.pread(fd, FP_SIZE, 0)
        finally:
            os.close(fd)
        return FilePosition(Identity(st.st_dev, st.st_ino, len(head), fingerprint(head)), 0)
    return None
