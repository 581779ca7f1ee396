"""The gateway usage part of `replay --format text`: requests and token hit rate per entry and model."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvwatch.engines.capabilities import SourceView
from kvwatch.engines.cells import pct
from kvwatch.model import UsageRecord


@dataclass
class Figures:
    """One source's usage records summed per (entry, model): [requests, prompt tokens, cached tokens]."""

    totals: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def observe(self, event: object) -> None:
        """Add one usage record."""
        if isinstance(event, UsageRecord):
            totals = self.totals.setdefault((event.entry, event.model), [0, 0, 0])
            totals[0] += 1
            totals[1] += event.prompt_tokens
            totals[2] += event.cached_tokens


def section(view: SourceView) -> list[str] | None:
    """One row per (entry, model) of a source's usage records (None: it has none)."""
    figures: Figures | None = view.parts.get("usage")
    if figures is None or not figures.totals:
        return None
    lines = [
        "  entry                     model                     requests  prompt tokens  cached     hit rate"
    ]
    for (entry, model), (count, prompt, cached) in sorted(figures.totals.items()):
        rate = pct(cached / prompt) if prompt else "-"
        lines.append(f"  {entry:<24}  {model[:24]:<24}  {count:>8}  {prompt:>13}  {cached:>9}  {rate:>8}")
    return lines
