"""`hit_rate_gap`: on the same model, one entry's token hit rate is far below another's (incident 1).

Per source and model (raw values, before any label folding), over the last `window` seconds of event
time: every entry with at least `min_requests` requests gets its token hit rate
sum(cached) / sum(prompt). An entry whose rate is at least `min_gap` below the best entry's and at
most `max_ratio` times it is flagged, naming both. One engine and one model serving one entry's prompts
from cache and not another's puts the cause in what that entry's prompts carry near their front, not
in the engine. Incident 1: `/v1/messages` 15.96% vs `/v1/chat/completions` 93.11% fires; 83% vs 93%
(after the fix) does not. Entries below `min_requests` are not judged (a handful of cold requests is
not a rate).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.detectors.stable import NEVER
from kvwatch.model import Finding
from kvwatch.windows.usages import UsageGroup
from kvwatch.windows.window import Windows

CAUSE = (
    "The same engine and model reuse the cache for {high} but hardly for {low}, so what differs is the "
    "prompt {low} builds: typically a value that changes on every request near the front of the prompt. "
    "A known case: Claude Code's `x-anthropic-billing-header: ...; cch=<nonce>;` system block, which a "
    "gateway converting /v1/messages to Chat Completions joined with the other system blocks right after "
    "the tool definitions. Other causes: a conversion that reorders tools or system blocks per request, "
    'or a timestamp in the system prompt. kvwatch_pinned_cache_tokens{{entry="{low}"}} > 0 means the '
    "cached length is pinned at the position of the changing value."
)
FIX = (
    "Diff two consecutive requests of {low} as the engine receives them (after the gateway's "
    "conversion) and remove or move to the end whatever changes: drop the billing-header system block "
    "at the gateway, or set CLAUDE_CODE_ATTRIBUTION_HEADER=0 on the client. Afterwards {low}'s hit rate "
    "should come close to {high}'s."
)
#: Rates are ratios of integers: thresholds hold inclusively, without float residue (0.6 - 0.3 < 0.3).
EPSILON = 1e-9


@dataclass(frozen=True)
class Settings:
    """Thresholds; the defaults fire on incident 1's 15.96% vs 93.11% and not on 83% vs 93%."""

    enabled: bool = True
    window: float = 3600.0  # seconds of event time (the windows keep at most HORIZON = 1 h)
    min_requests: int = 20  # per entry, in the window
    min_gap: float = 0.3  # best rate - low rate, absolute
    max_ratio: float = 0.5  # low rate / best rate


@dataclass(frozen=True)
class EntryRate:
    """One entry's requests and tokens in the window."""

    entry: str
    requests: int
    prompt: int
    cached: int

    @property
    def rate(self) -> float:
        """Token hit rate sum(cached) / sum(prompt)."""
        return self.cached / self.prompt if self.prompt else 0.0


def entry_rates(group: UsageGroup, since: float, now: float) -> list[EntryRate]:
    """Per-entry totals of the group's records in (since, now], sorted by entry (those with none: out)."""
    rates = []
    for entry, usage in sorted(group.entries.items()):
        totals = usage.totals(since, now)
        if totals.requests:
            rates.append(EntryRate(entry, *totals))
    return rates


def _finding(
    source: str, model: str, low: EntryRate, high: EntryRate, *, judged: list[EntryRate], cfg: Settings
) -> Finding:
    evidence = {
        "window_seconds": cfg.window,
        "low_entry": low.entry,
        "low_hit_rate": round(low.rate, 4),
        "low_requests": low.requests,
        "low_prompt_tokens": low.prompt,
        "low_cached_tokens": low.cached,
        "high_entry": high.entry,
        "high_hit_rate": round(high.rate, 4),
        "high_requests": high.requests,
        "gap": round(high.rate - low.rate, 4),
        "entries": {e.entry: {"hit_rate": round(e.rate, 4), "requests": e.requests} for e in judged},
    }
    names = {"low": low.entry, "high": high.entry}
    return Finding(
        alert="hit_rate_gap",
        labels=(("source", source), ("entry", low.entry), ("model", model)),
        severity="warning",
        summary=(
            f"{low.entry} token hit rate {low.rate:.2%} ({low.requests} requests) vs {high.rate:.2%} on "
            f"{high.entry} ({high.requests} requests), same model {model}, last {cfg.window / 60:.0f} min"
        ),
        cause=CAUSE.format(**names),
        fix=FIX.format(**names),
        evidence=evidence,
    )


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """A finding for every entry far below the best entry of its source and model right now."""
    if not cfg.enabled:
        return []
    findings = []
    for (source, model), group in windows.usage.sorted():
        judged = [e for e in entry_rates(group, now - cfg.window, now) if e.requests >= cfg.min_requests]
        judged = [e for e in judged if e.prompt > 0]
        if len(judged) < 2:
            continue
        high = max(judged, key=lambda e: (e.rate, e.requests))
        for low in judged:
            if low is high:
                continue
            gap_ok = high.rate - low.rate >= cfg.min_gap - EPSILON
            if gap_ok and low.rate <= cfg.max_ratio * high.rate + EPSILON:
                findings.append(_finding(source, model, low, high, judged=judged, cfg=cfg))
    return findings


def until(windows: Windows, now: float, cfg: Settings) -> float:
    """Its window slides with `now`: judged again at every tick while there are usage records."""
    return now if cfg.enabled and windows.usage else NEVER
