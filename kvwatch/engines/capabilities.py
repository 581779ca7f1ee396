"""The optional capabilities an engine may implement besides what `Engine` requires (Telegraf's
pattern: small interfaces a plugin implements, not fields it leaves empty).

An engine's package declares a subclass of kvwatch.engines.base.Engine that defines the members of each
capability it has (e.g. kvwatch/engines/vllm/__init__.py); kvwatch asks `isinstance(engine, Reports)`.
A member may be a plain value, a method, or a kvwatch.engines.base.Later naming a function of the
package imported at first use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from kvwatch.model import RequestRecord, SourceCounts

if TYPE_CHECKING:
    from kvwatch.model import Finding

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
    parts: dict[str, Any] = field(default_factory=dict)  # engine name -> its gathering (Reports.gather)
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


@runtime_checkable
class Reports(Protocol):
    """Its part of `replay --format text`: figures gathered per source as its events pass (kept in
    SourceView.parts under its name), and its section of a source's report."""

    def gather(self) -> Gathering:
        """A fresh gathering of one source's figures."""

    def section(self, view: SourceView) -> list[str] | None:
        """Its lines of the source's report; None: the source holds nothing of it."""


@runtime_checkable
class Hints(Protocol):
    """A test of a log's head cheaper than importing its parser: every head its looks_like takes
    passes it (False: not its log; a replay tries each engine before the one that matches)."""

    def hint(self, head: str) -> bool:
        """Could the head be its log?"""


@runtime_checkable
class ConvertsRequests(Protocol):
    """Its request events are no RequestRecords: an adapter per source converts them (windows)."""

    def requests(self) -> RequestAdapter:
        """A fresh adapter of one source."""


class OptionTable(Protocol):
    """A `[source.<name>]` table as an engine reads it (kvwatch.config.fields.Fields is one: not
    imported, config imports the engines): each value by key, a problem recorded with its field."""

    def get(self, key: str) -> Any:
        """The raw value of `key` (None if absent)."""

    def string(self, key: str, default: str | None = None, required: str | None = None) -> str | None:
        """A non-empty string (`required`: the reason given when it is missing)."""

    def strings(self, key: str) -> tuple[str, ...]:
        """A list of non-empty strings (absent: empty)."""

    def problem(self, key: str, why: str) -> None:
        """Record `<field>: <why>`."""


@runtime_checkable
class TakesOptions(Protocol):
    """It reads its own `[source.<name>]` table: what its parser is handed as `options`."""

    def options(self, table: OptionTable) -> Any:
        """Its options from the table (whose unknown keys the caller reports)."""


@runtime_checkable
class CarriesLayers(Protocol):
    """Its log carries the lines of cache layers (LMCache inside vLLM), read by their own parsers."""

    layers: tuple[str, ...]


@runtime_checkable
class ReusesParser(Protocol):
    """Its log embeds another engine's lines, read by that engine's parser (Ollama embeds llama-server)."""

    reuses: str


@runtime_checkable
class Advises(Protocol):
    """Its own cause and fix for engine-neutral alerts, by alert name (kvwatch.detectors.advice)."""

    advice: Mapping[str, Advise]


@runtime_checkable
class JudgesBlindness(Protocol):
    """Its own `no_signal` verdict from a source's facts."""

    def blindness(self, source: str, facts: Mapping[str, str]) -> Finding | None:
        """What hides its lines and its own setting that shows them; None: nothing hidden."""


@runtime_checkable
class ForgetsOnRestart(Protocol):
    """Startup facts a restart of it voids (the new process may differ)."""

    restart_forgets: tuple[str, ...]


@runtime_checkable
class ShipsAssets(Protocol):
    """Its dashboard row and rules (dashboard.json, rules.yml, rules.test.yml; kvwatch.assets.build)
    are in this package, not in kvwatch.engines.<name>."""

    package: str
