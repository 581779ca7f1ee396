"""What an engine is to the rest of kvwatch: the `Engine` descriptor that each engine package declares
(its few required fields; the optional capabilities are in kvwatch.engines.capabilities).

Everything engine-specific is reached through a descriptor (kvwatch.engines.ENGINES): the machinery
around it (sources, the parse stage, windows, detectors, alerting) never names an engine.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from kvwatch.engines.capabilities import Hints
from kvwatch.parsers.base import Parser, ParserSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kvwatch.parsers.clock import LineClock

#: The engine-neutral signals an engine's events can carry; detectors judge these, `no_signal` asks
#: which of them an engine can produce:
#: - "server_requests": request records of one server (prompt, cached, computed tokens, slot or
#:   conversation where known, full re-processing): prefix_reuse_broken, pinned_cache_length;
#: - "derived_requests": ... some of which it may only derive at its default verbosity (less exact);
#: - "gateway_requests": request records per entry point and model: hit_rate_gap, usage_double_counting;
#: - "cache_rate": periodic cache-rate samples with the traffic they cover: prefix_hit_rate_low, and
#:   `no_signal` when they stop (or are switched off);
#: - "offload": offload store/load counters: write_only_offload.
Signal = Literal["server_requests", "derived_requests", "gateway_requests", "cache_rate", "offload"]

#: A parser for one source: (source name, settings, the engine's own options from the config or None;
#: AS_LAYER when the parser reads a cache layer's lines inside another engine's log).
ParserFactory = Callable[[str, ParserSettings, Any], Parser]
#: The options a layer's parser is made with (kvwatch.engines.layer_parsers).
AS_LAYER = "as-layer"
#: An engine's metric families on a registry, as the handler of each event type they are fed.
MetricsFactory = Callable[["CollectorRegistry"], Mapping[type, Callable[[Any], None]]]


@dataclass(frozen=True)
class Later:
    """`module:name`, imported at its first call and called: how an engine's package names its parser,
    metrics, report and adapters without importing them (start-up loads only what a run uses: replay's
    parsing child needs no metrics, a daemon no report)."""

    target: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module, _, name = self.target.partition(":")
        return getattr(importlib.import_module(module), name)(*args, **kwargs)


class ParserHome(Protocol):
    """What an engine's `home` module (its parser's) holds besides the parser: the prefilter and the
    sniff; where its lines carry their own time, it also holds CLOCK (a kvwatch.parsers.clock.LineClock
    that `kvwatch demo` rewrites)."""

    MARKERS: tuple[str, ...]  # every line its parser can make an event of contains one

    def looks_like(self, head: str) -> bool:
        """Does a file's head (its first lines, decoded) read like its log?"""


@dataclass(frozen=True)
class Engine:
    """One engine kvwatch reads: its name, how to recognise and parse its log, what it feeds. These are
    all an engine must declare; what it may add are the small capabilities of
    kvwatch.engines.capabilities, which its package implements on a subclass of this (as Telegraf's
    plugins implement optional interfaces).

    What reads its lines sits in `home`, its parser's module (a ParserHome), imported at first use:
    start-up compiles the regexes only of the engines whose logs are read (and of those whose sniff a
    log's head meets).
    """

    name: str  # the `engine =` / `--engine` value, and the metric prefix (kvwatch_<name>_...)
    display: str  # how messages and docs name it
    home: str  # the module of its parser (a ParserHome)
    parser: ParserFactory  # (imports from `home` when called)
    events: tuple[type, ...]  # the event types its parser makes (a source's engine is known by them)
    signals: frozenset[Signal]
    metrics: MetricsFactory
    sniff_rank: int = 0  # auto-detection tries lower ranks first (stricter sniffs go first)

    @cached_property
    def _home(self) -> ParserHome:
        return cast("ParserHome", importlib.import_module(self.home))

    @property
    def markers(self) -> tuple[str, ...]:
        """Every line its parser can make an event of contains one of these (the prefilter)."""
        return self._home.MARKERS

    def sniff(self, head: str) -> bool:
        """Does a file's head (its first lines, decoded) read like its log? (An engine that hints, a
        capabilities.Hints, is asked its cheaper hint first.)"""
        if isinstance(self, Hints) and not self.hint(head):
            return False
        return bool(self._home.looks_like(head))

    @property
    def clock(self) -> LineClock | None:
        """Where its lines carry their own time (`kvwatch demo` rewrites it); None: nowhere."""
        return cast("LineClock | None", getattr(self._home, "CLOCK", None))
