"""What an engine is to the rest of kvwatch: the `Engine` descriptor that each engine package declares.

Everything engine-specific is reached through a descriptor (kvwatch.engines.ENGINES): the machinery
around it (sources, the parse stage, windows, detectors, alerting) never names an engine.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from kvwatch.model import RequestRecord, SourceCounts
from kvwatch.parsers.base import Parser, ParserSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kvwatch.model import Finding
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
#: The engine's own options from a source's `[source.<name>]` table, read from a
#: kvwatch.config.fields.Fields (not imported: config imports the engines) whose unknown keys the caller
#: reports: what its parser is handed as `options`.
OptionsReader = Callable[[Any], Any]
#: An engine's metric families on a registry, as the handler of each event type they are fed.
MetricsFactory = Callable[["CollectorRegistry"], Mapping[type, Callable[[Any], None]]]
#: An engine's part of `replay --format text` for one source; None: the source holds nothing of it.
ReportSection = Callable[["SourceView"], "list[str] | None"]
#: An engine's own `no_signal` verdict from a source's facts (source name, facts): what hides its lines
#: and the engine's own setting that shows them; None: nothing hidden.
Blindness = Callable[[str, Mapping[str, str]], "Finding | None"]


#: An engine's own wording of one engine-neutral alert's finding: the finding with the cause and fix its
#: users act on (kvwatch.detectors.advice).
Advise = Callable[["Finding"], "Finding"]


#: How exactly a request's counts were read: from the engine's own lines ("exact"), derived from its
#: timings at default verbosity ("derived"), or derived for a request whose start was not read ("joined").
Basis = Literal["exact", "derived", "joined"]


@dataclass
class SourceView:
    """One source's figures over a replay (kvwatch.output.summary gathers them): what an engine's
    report section reads."""

    engine: str  # after a replay, the engines that recognised a line of it ("": none did)
    framing: str
    counts: SourceCounts
    first: float | None = None
    last: float | None = None
    parts: dict[str, Any] = field(default_factory=dict)  # engine name -> its gathering (Engine.gather)
    #: event type -> what takes it in: the observe of the part its engine owns, else of the parts of the
    #: layers the source's engine carries; found at its first event (parts are only added to, and
    #: `engine` changes only after the replay)
    gathers: dict[type, Callable[[Any], None]] = field(default_factory=dict, repr=False, compare=False)


class RequestAdapter(Protocol):
    """One source's conversion of an engine's request events into engine-neutral request records."""

    def convert(self, event: Any) -> tuple[Basis | None, RequestRecord | None]:
        """How exactly the event counts a request (None: not counted), and its record (None: its
        counts are not known, or it is no request)."""

    def restart(self) -> None:
        """The engine restarted: forget what was known of the process before."""


class Gathering(Protocol):
    """An engine's figures of one source for its report section, gathered as its events pass."""

    def observe(self, event: Any) -> None:
        """Take one of the engine's events into account."""


@dataclass(frozen=True)
class Later:
    """`module:name`, imported at its first call and called: how an engine's package names its parser,
    metrics, report and adapters without importing them (start-up loads only what a run uses: replay's
    parsing child needs no metrics, a daemon no report)."""

    target: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module, _, name = self.target.partition(":")
        return getattr(importlib.import_module(module), name)(*args, **kwargs)


@dataclass(frozen=True)
class Engine:
    """One engine kvwatch reads: its name, how to recognise and parse its log, what it feeds.

    What reads its lines sits in `home`, its parser's module, imported at first use: start-up compiles
    the regexes only of the engines whose logs are read (and of those whose sniff a log's head meets).
    """

    name: str  # the `engine =` / `--engine` value, and the metric prefix (kvwatch_<name>_...)
    display: str  # how messages and docs name it
    # The module of its parser, holding MARKERS (every line its parser can make an event of contains
    # one: the prefilter), looks_like(head) (does a file's head, its first lines decoded, read like its
    # log?) and, where its lines carry their own time, CLOCK (`kvwatch demo` rewrites it).
    home: str
    parser: ParserFactory  # (imports from `home` when called)
    events: tuple[type, ...]  # the event types its parser makes (a source's engine is known by them)
    signals: frozenset[Signal]
    metrics: MetricsFactory
    report: ReportSection | None = None
    # A fresh gathering of one source's figures (in SourceView.parts[name], for `report`); None: none.
    gather: Callable[[], Gathering] | None = None
    sniff_rank: int = 0  # auto-detection tries lower ranks first (stricter sniffs go first)
    # What every head its looks_like takes holds, in a test cheaper than importing its parser (False: not
    # its log; a replay tries each engine before the one that matches); None: none.
    sniff_hint: Callable[[str], bool] | None = None
    restart_forgets: tuple[str, ...] = ()  # startup facts a restart voids (the new process may differ)
    reuses: str | None = None  # another engine whose parser reads its lines (Ollama embeds llama-server's)
    blindness: Blindness | None = None  # its own no_signal verdict (see Blindness)
    layers: tuple[str, ...] = ()  # cache layers whose lines its log carries (LMCache inside vLLM)
    # The package holding its dashboard row and rules (dashboard.json, rules.yml, rules.test.yml; see
    # kvwatch.assets.build); None: kvwatch.engines.<name>.
    package: str | None = None
    options: OptionsReader | None = None  # reads its `[source.<name>]` table; None: it takes none
    # A fresh adapter making request records of one source's events (None: its request events, if any,
    # are RequestRecords themselves).
    requests: Callable[[], RequestAdapter] | None = None
    # Its own cause and fix for engine-neutral alerts, by alert name (kvwatch.detectors.advice).
    advice: Mapping[str, Advise] = field(default_factory=dict)

    @cached_property
    def _home(self) -> ModuleType:
        return importlib.import_module(self.home)

    @property
    def markers(self) -> tuple[str, ...]:
        """Every line its parser can make an event of contains one of these (the prefilter)."""
        return cast("tuple[str, ...]", self._home.MARKERS)

    def sniff(self, head: str) -> bool:
        """Does a file's head (its first lines, decoded) read like its log?"""
        if self.sniff_hint is not None and not self.sniff_hint(head):
            return False
        return bool(self._home.looks_like(head))

    @property
    def clock(self) -> LineClock | None:
        """Where its lines carry their own time (`kvwatch demo` rewrites it); None: nowhere."""
        return cast("LineClock | None", getattr(self._home, "CLOCK", None))
