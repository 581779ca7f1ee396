"""The spool: one JSON file per notifier in the state directory, its pending alerts in order.

Every change rewrites the whole file atomically (write a temporary file, fsync, rename, fsync the
directory), so after a crash the file is either the old or the new list, never a torn one. A file
that cannot be read is moved aside as `<name>.corrupt` and logged, and the notifier starts empty.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path

from kvwatch.atomic import write_atomic
from kvwatch.model import Alert
from kvwatch.notify.payload import alert_from_record, alert_to_record

log = logging.getLogger(__name__)
VERSION = 1
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class Spool:
    """The pending alerts of one notifier, kept in `<state_dir>/notify-<name>.json`."""

    def __init__(self, state_dir: str | os.PathLike[str], name: str) -> None:
        """Spool for notifier `name`; the name must be usable as a file name."""
        if not _NAME.match(name):
            raise ValueError(f"notifier name {name!r}: letters, digits, '_', '.', '-' only")
        self.name = name
        self.path = Path(state_dir) / f"notify-{name}.json"

    def load(self) -> list[Alert]:
        """The pending alerts in the file; [] if there is none or it is unreadable (moved aside)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        try:
            data = json.loads(text)
            if data.get("version") != VERSION:
                raise ValueError(f"version {data.get('version')!r}")
            return [alert_from_record(record) for record in data["pending"]]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            aside = self.path.with_name(self.path.name + ".corrupt")
            os.replace(self.path, aside)
            log.error("notifier %s: spool unreadable (%s), moved to %s", self.name, exc, aside)
            return []

    def save(self, pending: Sequence[Alert]) -> None:
        """Replace the file's content with `pending`, atomically and durably."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        records = [alert_to_record(alert) for alert in pending]
        body = {"version": VERSION, "notifier": self.name, "pending": records}
        data = json.dumps(body, ensure_ascii=False, indent=1)
        write_atomic(self.path, data)
