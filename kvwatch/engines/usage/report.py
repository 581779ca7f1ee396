"""The gateway usage part of `replay --format text`: requests and token hit rate per entry and model."""

from __future__ import annotations

from kvwatch.report.cells import pct
from kvwatch.report.summary import SourceView


def section(view: SourceView) -> list[str] | None:
    """One row per (entry, model) of a source's usage records (None: it has none)."""
    if not view.usage:
        return None
    lines = [
        "  entry                     model                     requests  prompt tokens  cached     hit rate"
    ]
    for (entry, model), (count, prompt, cached) in sorted(view.usage.items()):
        rate = pct(cached / prompt) if prompt else "-"
        lines.append(f"  {entry:<24}  {model[:24]:<24}  {count:>8}  {prompt:>13}  {cached:>9}  {rate:>8}")
    return lines
