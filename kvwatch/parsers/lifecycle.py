"""Whether an engine came up or died, from its own lines: engine-neutral `EngineReady` / `EngineFailed`.

An engine's parser hands each message to its source's `Lifecycle`, built with the engine's own words
(its package names them, read in its sources): `ready`, lines only a start that reached serving prints;
`failed`, its last words. The error named is the root cause where the log shows one: with `before`, the
first error line of the run that came before the failure line (llama.cpp prints the cause, then `failed
to load model`); else the first exception line after it (a Python traceback: `Name: message`), and until
one comes, the failure line itself. `phase` is "startup" until the run served, "crash" after.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from kvwatch.model import EngineFailed, EngineReady, Event
from kvwatch.parsers.text import holds_any

#: A traceback's exception line: `pkg.Name: message` or a bare `Name`, the name ending as exceptions do.
EXCEPTION = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*)?(?:Error|Exception|Exit|Interrupt|Fault)(?:: .*)?$"
)
#: An error line printed before the failure (`before`): an error or a failure, not a warning about one.
_ERRORISH = re.compile(r"\berror\b|\bfailed\b", re.I)
#: The longest error text kept.
MAX_ERROR = 500


class Lifecycle:
    """One source's engine run: served yet, failing now, and its first error line."""

    def __init__(
        self,
        source: str,
        engine: str,
        ready: tuple[str, ...],
        failed: tuple[str, ...],
        *,
        before: bool = False,
        stopping: tuple[str, ...] = (),
    ) -> None:
        self.source, self.engine = source, engine
        self.ready_words, self.failed_words, self.before = ready, failed, before
        self.stopping_words = stopping
        self.stopping = False  # told to stop (SIGTERM): what its shutdown tears down is no failure
        self.served = False
        self.failing = False  # a failure line was seen this run
        self.named = False  # ... and its root cause named
        self.first_error = ""  # (before) the run's first error line so far

    def __eq__(self, other: object) -> bool:
        """Equal state (a parser's state is compared whole: two ways of parsing the same lines agree)."""
        return type(other) is type(self) and vars(other) == vars(self)

    __hash__ = None  # type: ignore[assignment]  # (mutable)

    def dump(self) -> dict[str, Any]:
        """The run's state as JSON, saved with a parser's position (a restart of kvwatch goes on with it)."""
        return {"served": self.served, "failing": self.failing, "named": self.named,
                "stopping": self.stopping, "first_error": self.first_error}  # fmt: skip

    def load(self, state: Mapping[str, Any]) -> None:
        """Go on from a `dump()` (a missing key: as at a run's start)."""
        self.served, self.failing = state.get("served") is True, state.get("failing") is True
        self.named, self.stopping = state.get("named") is True, state.get("stopping") is True
        self.first_error = str(state.get("first_error", ""))

    def restart(self) -> None:
        """A new run began: nothing of the old one applies."""
        self.served = self.failing = self.named = self.stopping = False
        self.first_error = ""

    def cause(self) -> str:
        """The KV connector or offload setting blamed ("" here: an engine's subclass may know one)."""
        return ""

    def serving(self, when: float) -> list[Event]:
        """The engine proves it serves (a stats or batch line): after a failure, that it is ready again
        (where no start line said so); else nothing to say."""
        failing = self.failing
        self.served = True
        self.failing = self.named = False
        self.first_error = ""
        return [EngineReady(self.source, when, self.engine)] if failing else []

    def line(self, message: str, when: float) -> list[Event] | None:
        """The events of a message that says the engine came up or died (None: it says neither)."""
        self.seen(message)
        if holds_any(message, self.ready_words):
            if self.served and not self.failing:
                return None
            self.serving(when)
            return [EngineReady(self.source, when, self.engine)]
        text = message.strip()
        if self.stopping_words and holds_any(message, self.stopping_words):
            self.stopping = True
            return []
        if holds_any(message, self.failed_words):
            if self.failing or self.stopping:  # (an echo of the failure already stated; a shutdown's)
                return []
            self.failing = True
            self.named = bool(self.first_error)
            return [self._failed(self.first_error or text, when)]
        if self.failing and not self.named and EXCEPTION.match(text):
            self.named = True
            return [self._failed(text, when)]
        if self.before and not self.failing and not self.first_error and _ERRORISH.search(text):
            self.first_error = text
        return None

    def seen(self, message: str) -> None:
        """Every message handed in, first (a subclass notes what it needs, e.g. a traceback's modules)."""

    def _failed(self, error: str, when: float) -> EngineFailed:
        phase: Literal["startup", "crash"] = "crash" if self.served else "startup"
        return EngineFailed(self.source, when, self.engine, phase, error[:MAX_ERROR], self.cause())
