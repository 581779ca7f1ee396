"""llama.cpp's part of `replay --format text`: one aligned row per request record."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from kvwatch.engines.capabilities import SourceView
from kvwatch.engines.llamacpp.events import LlamaRequest

#: The text report keeps the last this many llama.cpp requests per source (memory stays bounded).
MAX_ROWS = 5000

# `notes` flags what numbers hide: server=NAME[PID] (a journal of several), full-reprocess, restores=N,
# prompt-cache (rescue), derived
HEADER = (
    "time",
    "slot",
    "prompt",
    "reused",
    "new",
    "selection",
    "sim",
    "keep",
    "eval time",
    "notes",
)
_LEFT = {"time", "selection", "notes"}  # text columns; numbers align right


@dataclass
class Figures:
    """One source's request records: how many, and the last MAX_ROWS of them."""

    requests: deque[LlamaRequest] = field(default_factory=lambda: deque(maxlen=MAX_ROWS))
    count: int = 0

    def observe(self, event: object) -> None:
        """Keep one request record."""
        if isinstance(event, LlamaRequest):
            self.requests.append(event)
            self.count += 1


def section(view: SourceView) -> list[str] | None:
    """The count and table of a source's last request records (None: it has none)."""
    figures: Figures | None = view.parts.get("llamacpp")
    if figures is None or not figures.count:
        return None
    shown = len(figures.requests)
    note = "" if shown == figures.count else f" (last {shown} shown)"
    lines = [f"  requests {figures.count}{note}"]
    lines.extend("  " + row for row in requests_table(list(figures.requests)).splitlines())
    return lines


def requests_table(records: Sequence[LlamaRequest]) -> str:
    """The records as a text table, in the order given, columns padded to their widest cell."""
    rows = [HEADER, *(_row(record) for record in records)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = []
    for row in rows:
        cells = (
            cell.ljust(width) if name in _LEFT else cell.rjust(width)
            for name, cell, width in zip(HEADER, row, widths, strict=True)
        )
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def _row(record: LlamaRequest) -> tuple[str, ...]:
    """One record's cells; `-` where the log did not say."""
    moment = datetime.fromtimestamp(record.time, timezone.utc)
    when = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    notes = [
        f"server={record.server}" if record.server is not None else "",  # (one of a journal's several)
        "full-reprocess" if record.full_reprocess else "",
        f"restores={record.checkpoint_restores}" if record.checkpoint_restores else "",
        "prompt-cache" if record.prompt_cache_rescue else "",
        "derived" if record.derived else "",
    ]
    return (
        when,
        str(record.slot),
        _int(record.prompt_tokens),
        _int(record.reused_tokens),
        _int(record.new_tokens),
        record.selection,
        _ratio(record.sim_best),
        _ratio(record.f_keep),
        "-" if record.prompt_eval_seconds is None else f"{record.prompt_eval_seconds:.3f} s",
        " ".join(note for note in notes if note),
    )


def _int(value: int | None) -> str:
    """An integer cell."""
    return "-" if value is None else str(value)


def _ratio(value: float | None) -> str:
    """A 0-1 ratio cell, three decimals as llama.cpp prints them."""
    return "-" if value is None else f"{value:.3f}"
