"""Ollama's part of `replay --format text`: requests and hit rate per model, the runners' cache events,
the HTTP requests, the last requests."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kvwatch.engines.capabilities import SourceView
from kvwatch.engines.cells import pct, table, tokens
from kvwatch.engines.ollama.events import OllamaAccess, OllamaCacheEvent, OllamaRequest
from kvwatch.times import iso

#: Rows kept per source: models (then "other"), and the last requests shown.
MAX_MODELS = 16
LAST = 10

_MODELS = ("model", "requests", "prompt tokens", "cached", "hit rate", "full reprocess")
_LAST = ("time", "runner", "model", "slot", "prompt", "cached", "new", "hit rate", "notes")
_RUNNER_EVENTS = ("clear", "context_shift", "eviction", "fork")  # the Go runner's; MLX's: failed_restore


@dataclass
class Figures:
    """One source's Ollama events, summed: per model [requests, prompt, cached, full reprocess,
    llama-server requests] (the Go and MLX runners never say whether they re-processed in full)."""

    models: dict[str, list[int]] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)  # cache event kind -> count (the parser's five)
    http: dict[str, int] = field(default_factory=dict)  # status class -> count
    mlx: bool = False  # an MLX runner's lines were seen: failed restores are counted
    runner: bool = False  # the Go runner's lines were seen: its clears, shifts, evictions, forks are counted
    last: deque[OllamaRequest] = field(default_factory=lambda: deque(maxlen=LAST))

    def observe(self, event: object) -> None:
        """Take one Ollama event into account."""
        if isinstance(event, OllamaRequest):
            model = event.model
            if model not in self.models and len(self.models) >= MAX_MODELS:
                model = "other"
            totals = self.models.setdefault(model, [0, 0, 0, 0, 0])
            totals[0] += 1
            totals[1] += event.prompt_tokens
            totals[2] += event.cached_tokens
            totals[3] += event.full_reprocess
            if event.conversation:  # only llama-server's records name one; only it logs a full re-process
                totals[4] += 1
            elif event.matched is None:
                self.runner = True
            else:
                self.mlx = True
            self.last.append(event)
        elif isinstance(event, OllamaCacheEvent):
            self.events[event.kind] = self.events.get(event.kind, 0) + 1
            if event.kind == "failed_restore":
                self.mlx = True
            else:
                self.runner = True
        elif isinstance(event, OllamaAccess):
            status = f"{event.status // 100}xx"
            self.http[status] = self.http.get(status, 0) + 1


def section(view: SourceView) -> list[str] | None:
    """A source's Ollama figures (None: it has none)."""
    figures: Figures | None = view.parts.get("ollama")
    if figures is None:
        return None
    lines = []
    if figures.http:
        classes = ", ".join(f"{status} {count}" for status, count in sorted(figures.http.items()))
        lines.append(f"  http requests {sum(figures.http.values())} ({classes})")
    requests = sum(totals[0] for totals in figures.models.values())
    if figures.models:
        lines.append(f"  requests with a cache line {requests}")
        rows: list[tuple[str, ...]] = [
            (model[:32] or "-", str(count), str(prompt), str(cached), pct(cached / prompt) if prompt else "-",
             str(full) if llama else "-")
            for model, (count, prompt, cached, full, llama) in sorted(figures.models.items())
        ]  # fmt: skip
        lines.extend("  " + row for row in table(_MODELS, rows, frozenset({"model"})))
    kinds = (_RUNNER_EVENTS if figures.runner else ()) + (("failed_restore",) if figures.mlx else ())
    if kinds:
        counted = ", ".join(f"{kind.replace('_', ' ')}s {figures.events.get(kind, 0)}" for kind in kinds)
        lines.append(f"  cache events: {counted}")
    if figures.last:
        note = "" if len(figures.last) == requests else f" (last {len(figures.last)} of {requests})"
        lines.append(f"  requests{note}")
        rows = [_row(record) for record in figures.last]
        lines.extend(
            "    " + row for row in table(_LAST, rows, frozenset({"time", "runner", "model", "notes"}))
        )
    return lines or None


def _row(record: OllamaRequest) -> tuple[str, ...]:
    """One request's cells; `-` where the log did not say."""
    prompt, cached = record.prompt_tokens, record.cached_tokens
    notes = [
        f"matched={record.matched}" if record.matched is not None else "",
        "full-reprocess" if record.full_reprocess else "",
        "derived" if record.derived else "",
    ]
    return (
        iso(record.time),
        record.runner or "-",
        record.model[:32] or "-",
        "-" if record.slot is None else str(record.slot),
        *tokens(prompt, cached),
        " ".join(note for note in notes if note),
    )
