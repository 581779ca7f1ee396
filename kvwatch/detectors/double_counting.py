"""`usage_double_counting`: Anthropic usage whose `input_tokens` include the cached tokens (incident 3).

Correct Anthropic usage reports the uncached part apart: input_tokens + cache_read_input_tokens +
cache_creation_input_tokens = the prompt. In a long Claude Code conversation with a working cache,
each turn reads the whole previous prompt from cache and adds a few hundred to a few thousand tokens,
so cache_read >> input_tokens turn after turn. A gateway that copies OpenAI `prompt_tokens` (cached
included) into `input_tokens` reports input_tokens >= cache_read on every cached turn instead.

Judged per source, entry and model (raw values) on the last `max_requests` Anthropic-shaped records
(input_tokens logged) with cache_read > 0 in the last `window` seconds. Fires on either rule:
* **upstream** (definite): at least `min_upstream` of them also carry the upstream `prompt_tokens`, and
  on at least `min_share` of those input_tokens >= upstream x (1 - `tolerance`).
* **pattern** (no upstream count logged): at least `min_requests` records, and
  1. input_tokens >= cache_read on at least `min_share` of them;
  2. the median of cache_read / input_tokens is at least `min_read_ratio` (0.8: the cached part is
     almost all of what input_tokens counts, because it is inside it and a turn adds only a few percent;
     correct usage would need 44-50% of every prompt cached to show this, and a partly evicted cache
     scatters far wider);
  3. cache_read grows with input_tokens (rank correlation at least `min_tracking`): turn after turn the
     cache holds the previous turn's prompt, and input_tokens holds it again plus the new tokens. This
     holds across compactions and interleaved conversations, and it excludes correct usage on a
     broken cache (a pinned or random cache_read with a large uncached input_tokens).
Not detectable without the upstream count: double counting on top of a pinned or mostly evicted cache
(rules 2 and 3 exclude it; pinned_cache_length or hit-rate alerts fire there instead).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kvwatch.detectors.stable import NEVER
from kvwatch.model import Finding, UsageRecord
from kvwatch.windows.usages import RECENT, Recent, UsageGroup
from kvwatch.windows.window import Windows

CAUSE = (
    "The gateway reports Anthropic usage with input_tokens that already include the cached tokens "
    "(typically the upstream OpenAI prompt_tokens copied as-is) while also reporting them in "
    "cache_read_input_tokens, so the cached part counts twice. Claude Code's auto-compaction sizes the "
    "context from input_tokens + cache_read + cache_creation (streaming `message_start` estimates can make "
    "it worse: the client keeps the larger value) and compacts early; each compaction rewrites the "
    "history, the prompt prefix changes and the next turn starts from a cold cache."
)
FIX = (
    "Report input_tokens = prompt_tokens - cache_read - cache_creation (floor 0), with the cached tokens "
    "(prompt_tokens_details.cached_tokens) in cache_read_input_tokens and the tokens written to the cache "
    "in cache_creation_input_tokens (0 when the upstream does not say); keep message_start estimates no "
    "larger than that."
)


@dataclass(frozen=True)
class Settings:
    """Thresholds of both rules (see the module docstring)."""

    enabled: bool = True
    window: float = 3600.0
    max_requests: int = 50
    min_requests: int = 10
    min_share: float = 0.8
    min_read_ratio: float = 0.8
    min_tracking: float = 0.7
    min_upstream: int = 3
    tolerance: float = 0.01

    def problems(self) -> list[str]:
        """What the usage windows cannot give: more records per entry than they keep."""
        if not 1 <= self.max_requests <= RECENT:
            return [f"max_requests: must be from 1 to {RECENT} (the records kept per entry)"]
        return []


def by_entry(group: UsageGroup, now: float, cfg: Settings) -> dict[str, list[Recent]]:
    """Per entry, its last `max_requests` Anthropic-shaped, cache-reading records of the window."""
    found = {
        entry: usage.recent(now - cfg.window, now, cfg.max_requests) for entry, usage in group.entries.items()
    }
    return {entry: records for entry, records in sorted(found.items()) if records}


#: A record as the rules read it: whole, or as the usage windows keep it.
Shaped = UsageRecord | Recent


def _inflated(record: Shaped, cfg: Settings) -> bool:
    upstream = record.upstream_prompt_tokens
    return upstream is not None and (record.input_tokens or 0) >= upstream * (1 - cfg.tolerance)


def assess(records: Sequence[Shaped], cfg: Settings) -> dict[str, Any] | None:
    """The evidence when the records show double counting, else None."""
    upstream = [r for r in records if r.upstream_prompt_tokens is not None]
    if len(upstream) >= cfg.min_upstream:
        share = sum(_inflated(r, cfg) for r in upstream) / len(upstream)
        if share >= cfg.min_share:
            return {"rule": "upstream", "requests": len(upstream), "share": round(share, 4)}
    if len(records) < cfg.min_requests:
        return None
    inputs = [r.input_tokens or 0 for r in records]
    reads = [r.cached_tokens for r in records]
    share = sum(i >= c for i, c in zip(inputs, reads, strict=True)) / len(records)
    # (imported here: statistics loads fractions and decimal, and only usage logs need it)
    from statistics import median

    ratio = median(c / i if i else 0.0 for i, c in zip(inputs, reads, strict=True))
    tracking = rank_correlation(reads, inputs)
    if share < cfg.min_share or ratio < cfg.min_read_ratio or tracking < cfg.min_tracking:
        return None
    return {
        "rule": "pattern",
        "requests": len(records),
        "share": round(share, 4),
        "median_cache_read_to_input": round(ratio, 4),
        "cache_read_input_rank_correlation": round(tracking, 3),
    }


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0
        i = j + 1
    return ranks


def rank_correlation(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rank correlation; 0.0 when either side is constant or there are fewer than 3 points."""
    if len(xs) < 3:
        return 0.0
    from statistics import StatisticsError, correlation  # (here: see assess)

    try:
        return correlation(_ranks(xs), _ranks(ys))
    except StatisticsError:
        return 0.0


def _example(record: Shaped) -> dict[str, int]:
    reported = record.input_tokens or 0
    prompt = record.upstream_prompt_tokens if record.upstream_prompt_tokens is not None else reported
    return {
        "input_tokens": reported,
        "cache_read_input_tokens": record.cached_tokens,
        "cache_creation_input_tokens": record.cache_creation_tokens,
        "correct_input_tokens": max(0, prompt - record.cached_tokens - record.cache_creation_tokens),
    }


def _finding(
    source: str, entry: str, model: str, records: Sequence[Shaped], verdict: dict[str, Any]
) -> Finding:
    last = records[-1]
    examples = [_example(r) for r in records[-3:]]
    # What clients add up (input + read + creation) against the real prompt (the upstream count, or
    # input_tokens itself, which holds the whole prompt when it double counts).
    seen = sum((r.input_tokens or 0) + r.cached_tokens + r.cache_creation_tokens for r in records)
    true = sum(
        r.upstream_prompt_tokens if r.upstream_prompt_tokens is not None else (r.input_tokens or 0)
        for r in records
    )
    over = seen / true if true else 0.0
    evidence = {**verdict, "examples": examples, "context_overstatement": round(over, 2)}
    return Finding(
        alert="usage_double_counting",
        labels=(("source", source), ("entry", entry), ("model", model)),
        severity="warning",
        summary=(
            f"input_tokens include the cached tokens on {verdict['share']:.0%} of {verdict['requests']} "
            f"responses (last: input_tokens {last.input_tokens}, cache_read_input_tokens "
            f"{last.cached_tokens}); clients see the context {over:.1f}x as full as it is"
        ),
        cause=CAUSE,
        fix=FIX,
        evidence=evidence,
    )


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """A finding for every source, entry and model whose Anthropic usage double counts right now."""
    if not cfg.enabled:
        return []
    findings = []
    for (source, model), group in windows.usage.sorted():
        for entry, records in by_entry(group, now, cfg).items():
            verdict = assess(records, cfg)
            if verdict is not None:
                findings.append(_finding(source, entry, model, records, verdict))
    return findings


def until(windows: Windows, now: float, cfg: Settings) -> float:
    """Its window slides with `now`: judged again at every tick while there are usage records."""
    return now if cfg.enabled and windows.usage else NEVER
