"""`pinned_cache_length`: most requests reuse exactly the same number of tokens C while prompts grow.

A probabilistic cause (contention, eviction) never produces an exact constant; a prefix that changes
right after the first C tokens on every request does (incident 1: C = 17920 = 280 x 64, the tool
definitions before Claude Code's per-request `x-anthropic-billing-header ... cch=` line). Judged per
request group (a llama.cpp source, each server of a source that carries several, or a gateway source
and entry) over its most recent requests:
the most common non-zero cached length C covers at least `min_share` of them, their prompts are on
average at least `min_growth` x C, and they grow: either their rank correlation with time is at least
`min_trend` (one conversation growing turn by turn), or they average at least `far_growth` x C (many
sessions, each far beyond the shared C). Unrelated prompts that only share a system prompt are about
as long as it and do not grow. Known limit: unrelated prompts several times longer than a shared
system prompt (retrieval, say) look the same; raise `far_growth` or disable the detector there.

Where requests are known to be one conversation (llama.cpp: the same slot picked by similarity turn
after turn), a second rule (evidence `rule` "conversation", the first "share") fires earlier and
whatever C is against the prompt: its last `conversation_requests` requests reused the same length
(within one block when the block size is known, else within `same_within` tokens) while the prompt
grew each time. A healthy conversation reuses its previous turn, so its cached length grows too.
Known limit: three newcomers in a row, each placed on one slot for the system prompt they share with
what it holds and each with a longer prompt, look the same (their next turns break the run).

A third rule (evidence `rule` "creep") takes the break point that is not fixed but creeps: Claude
Code's `<total_tokens>` reminder changes every turn and sits a few tokens later each time, so the
cached length moves up ~13 tokens a request while prompts grow by hundreds. Over the group's recent
requests with a partial hit (all but the last token cached is a full hit), at least `min_share` of
the steps between cached lengths lie in 0 to `creep_step` tokens, prompts grow at least `creep_ratio`
times faster than the cached length (and at least that many tokens a request), and they trend up
(`min_trend`): the part recomputed each turn grows with the session. A healthy conversation reuses its
previous turn: its cached length grows as fast as its prompt.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from operator import attrgetter

from kvwatch.model import Finding
from kvwatch.windows.window import Labels, RequestPoint, Tally, Windows, newest, ordered

#: What the field has found changing early in agents' prompts (the break point's usual causes).
CAUSES = (
    "Causes found in the field: a per-request header such as Claude Code's `x-anthropic-billing-header: "
    "...; cch=<nonce>;` right after the tool definitions (a gateway that joins all system blocks into one "
    "string puts it at the front); Claude Code's `<total_tokens>` system reminder, which changes every "
    "turn (a server that moves system messages to the front of the prompt, as Ollama does, breaks the "
    "prefix there: ollama PR #17918); a date or timestamp in the system prompt; tool definitions sent in "
    "another order; on sliding-window (SWA) or hybrid models, a restore that can only go back to a saved "
    "checkpoint."
)
CAUSE = (
    "What follows the first {c} tokens changes on every request, so the prefix cache can never reuse "
    "more than those {c} tokens. " + CAUSES
)
FIX = (
    "Strip the per-request header at the gateway (e.g. drop the `x-anthropic-billing-header` system "
    "block), or set CLAUDE_CODE_ATTRIBUTION_HEADER=0 on the client; for the token reminder set "
    "CLAUDE_CODE_TOTAL_TOKENS_REMINDER=off (`ollama launch claude` does since ollama PR #17918). On "
    "llama.cpp >= b9093, point Claude Code at `/v1/messages`, which normalises the header. Keep dates out "
    "of the system prompt and the tools in one order. Afterwards cached lengths spread out again."
)
CREEP_CAUSE = (
    "The prefix breaks at a point that moves only a little each request ({rate:+.0f} tokens per request) "
    "while the prompts grow far faster: something early in the prompt changes every turn and sits a few "
    "tokens later each time. The commonest: Claude Code's `<total_tokens>` system reminder (the countdown "
    "after every tool result), moved to the front of the prompt with the other system messages. " + CAUSES
)
_CACHED = attrgetter("cached")

#: Without a known block size, C is shown in 64-token blocks (vLLM's cached lengths are commonly
#: 64-aligned, as in incident 1), else in the first smaller block that divides it.
BLOCKS = (64, 32, 16)


@dataclass(frozen=True)
class Settings:
    """Thresholds for the pinned-length signature."""

    enabled: bool = True
    min_requests: int = 8
    max_requests: int = 50
    min_share: float = 0.6
    min_growth: float = 2.0
    min_trend: float = 0.3
    far_growth: float = 4.0
    block_size: int = 0  # 0: unknown, say the largest power-of-two block that divides C
    conversation_requests: int = 3
    same_within: int = 2
    # The creeping break point (rule "creep"): cached lengths that step by 0 to `creep_step` tokens
    # between requests (the token reminder moves ~13 a turn; 256 = four 64-token blocks) for
    # `min_share` of the steps, while prompts grow at least `creep_ratio` times faster.
    creep_step: int = 256
    creep_ratio: float = 4.0

    def problems(self) -> list[str]:
        """What makes these settings unusable, as `key: reason`."""
        found = []
        if self.conversation_requests < 2:
            found.append(f"conversation_requests: must be at least 2 (got {self.conversation_requests})")
        if self.same_within < 0:
            found.append(f"same_within: must be at least 0 (got {self.same_within})")
        if self.block_size < 0:
            found.append(f"block_size: must be at least 0 (got {self.block_size})")
        if self.creep_step < 0:
            found.append(f"creep_step: must be at least 0 (got {self.creep_step})")
        if self.creep_ratio < 1:
            found.append(f"creep_ratio: must be at least 1 (got {self.creep_ratio})")
        return found


@dataclass(frozen=True)
class Assessment:
    """The state of one request group: its modal cached length, its share, and the verdict."""

    cached: int
    share: float
    pinned: bool
    points: int
    mean_prompt: float = 0.0
    trend: float = 0.0


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


def trend(values: Sequence[float]) -> float:
    """Spearman rank correlation of the values with their order (1.0: strictly growing)."""
    n = len(values)
    if n < 3:
        return 0.0
    x, y = list(range(n)), _ranks(values)
    mx, my = (n - 1) / 2.0, sum(y) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    vx = sum((a - mx) ** 2 for a in x)
    vy = sum((b - my) ** 2 for b in y)
    return 0.0 if vy == 0 else cov / (vx * vy) ** 0.5


def assess(points: Sequence[RequestPoint], cfg: Settings) -> Assessment:
    """Judge one group's most recent requests."""
    recent = newest(points, cfg.max_requests)
    nonzero = Counter(p.cached for p in recent if p.cached > 0)
    if len(recent) < cfg.min_requests or not nonzero:
        return Assessment(0, 0.0, False, len(recent))
    cached, hits = nonzero.most_common(1)[0]
    share = hits / len(recent)
    pinned = [p for p in recent if p.cached == cached]
    mean_prompt = sum(p.prompt for p in pinned) / len(pinned)
    rho = trend([p.prompt for p in pinned])
    grows = rho >= cfg.min_trend or mean_prompt >= cfg.far_growth * cached
    verdict = share >= cfg.min_share and mean_prompt >= cfg.min_growth * cached and grows
    return Assessment(cached, round(share, 4), verdict, len(recent), mean_prompt, rho)


def blocks(cached: int, block_size: int) -> str:
    """`17920 = 280 x 64`: C in blocks of the known size, else of the first of BLOCKS that divides it."""
    for size in (block_size,) if block_size else BLOCKS:
        if size and cached % size == 0:
            return f"{cached} = {cached // size} x {size}"
    return f"{cached} (not a multiple of {block_size or 16})"


def _finding(labels: Labels, points: Sequence[RequestPoint], a: Assessment, cfg: Settings) -> Finding:
    recent = newest(points, cfg.max_requests)
    prompt_sum = sum(p.prompt for p in recent)
    mean_all = prompt_sum / len(recent)
    measured = sum(p.cached for p in recent) / prompt_sum if prompt_sum else 0.0
    evidence = {
        "rule": "share",
        "cached_tokens": a.cached,
        "blocks": blocks(a.cached, cfg.block_size),
        "pinned_share": a.share,
        "requests": a.points,
        "mean_prompt_tokens": round(mean_all, 1),
        "prompt_range": [min(p.prompt for p in recent), max(p.prompt for p in recent)],
        "implied_hit_rate": round(a.cached / mean_all, 4) if mean_all else 0.0,
        "measured_hit_rate": round(measured, 4),
        "prompt_growth_rank_correlation": round(a.trend, 3),
    }
    return Finding(
        alert="pinned_cache_length",
        labels=labels,
        severity="warning",
        summary=(
            f"{a.share:.0%} of the last {a.points} requests reused exactly {a.cached} tokens while prompts "
            f"averaged {mean_all:.0f} (hit rate {measured:.1%}, implied {a.cached / mean_all:.1%})"
        ),
        cause=CAUSE.format(c=a.cached),
        fix=FIX,
        evidence=evidence,
    )


@dataclass(frozen=True)
class Run:
    """The newest requests of one conversation that reused the same length while its prompt grew."""

    conversation: str
    points: tuple[RequestPoint, ...]
    tolerance: int

    @property
    def cached(self) -> int:
        """The pinned length: the newest request's cached tokens."""
        return self.points[-1].cached


def _same(low: int, high: int, cfg: Settings) -> bool:
    """Whether cached lengths from `low` to `high` are one length: within a block, else `same_within`."""
    return high - low < cfg.block_size if cfg.block_size else high - low <= cfg.same_within


def conversation_run(points: Sequence[RequestPoint], cfg: Settings, tally: Tally | None = None) -> Run | None:
    """The longest pinned run ending a conversation among the group's recent requests, if one is long
    enough (only requests that carry a conversation are judged; of runs as long, that of the
    conversation that shows up first). `tally`, the group's (Windows.tallies), spares gathering them."""
    tolerance = cfg.block_size - 1 if cfg.block_size else cfg.same_within
    if tally is not None and 0 < cfg.max_requests and len(tally.turns) <= cfg.max_requests:
        return _numbered_run(len(points), tally, cfg, tolerance)
    conversations: dict[str, list[RequestPoint]] = {}
    for point in newest(points, cfg.max_requests):
        if point.conversation:
            conversations.setdefault(point.conversation, []).append(point)
    best: Run | None = None
    for name, turns in conversations.items():
        run = _tail(reversed(turns), cfg)
        if len(run) >= cfg.conversation_requests and (best is None or len(run) > len(best.points)):
            best = Run(name, run, tolerance)
    return best


def _numbered_run(size: int, tally: Tally, cfg: Settings, tolerance: int) -> Run | None:
    """conversation_run read from each conversation's numbered turns: only the newest of each."""
    first = tally.added - min(size, cfg.max_requests)  # the number of the oldest recent point
    runs: list[tuple[str, tuple[RequestPoint, ...]]] = []
    for name, turns in reversed(tally.turns.items()):  # (newest last turn first)
        if turns[-1][0] < first:  # no recent turn, nor has any conversation before it in the tally's order
            break
        run = _turn_run(turns, first, cfg)
        if len(run) >= cfg.conversation_requests:
            runs.append((name, tuple(run[::-1])))
    if not runs:
        return None
    longest = max(len(points) for _, points in runs)
    tied = [(name, points) for name, points in runs if len(points) == longest]
    if len(tied) > 1:  # the conversation shown first among the recent points wins, as gathered
        tied.sort(key=lambda item: next(n for n, _ in tally.turns[item[0]] if n >= first))
    return Run(tied[0][0], tied[0][1], tolerance)


def _turn_run(turns: Sequence[tuple[int, RequestPoint]], first: int, cfg: Settings) -> list[RequestPoint]:
    """A conversation's pinned run (newest first) from its numbered turns, those numbered `first` on."""
    number, point = turns[-1]
    if number < first or point.cached <= 0 or point.cached >= point.prompt:  # (no recent turn or run)
        return []
    run = [point]
    low = high = point.cached
    for back in range(len(turns) - 2, -1, -1):  # (a deque's ends are read in constant time)
        number, point = turns[back]
        cached = point.cached
        low, high = cached if cached < low else low, cached if cached > high else high  # (min, max)
        if number < first or point.prompt >= run[-1].prompt or not _same(low, high, cfg):
            break
        run.append(point)
    return run


@dataclass(slots=True)
class RunNote:
    """A group with no conversation run long enough under `cfg` (and the source's `block` size) when
    it had counted `added` points. A conversation's run ends with its newest turn and reads back no
    further than the group's recent points: a conversation that gains no turn keeps its run or loses
    some of it as points come, so only those of the points since can have grown one."""

    cfg: Settings
    block: int
    added: int


def _no_run_since(points: Sequence[RequestPoint], tally: Tally, cfg: Settings, group: Settings) -> bool:
    """Whether the group's note, with the conversations of the points since judged, says no
    conversation run is long enough (the note then counts them)."""
    note = tally.notes.get(__name__)
    if not isinstance(note, RunNote) or note.cfg is not cfg or note.block != group.block_size:
        return False
    came = tally.added - note.added
    if came > len(points) or not 0 < cfg.max_requests or len(tally.turns) > cfg.max_requests:
        return False
    first = tally.added - min(len(points), cfg.max_requests)
    names = (
        (points[-1].conversation,)
        if came == 1
        else {p.conversation for p in newest(points, came)}
        if came
        else ()
    )
    for name in names:
        if name and len(_turn_run(tally.turns[name], first, group)) >= cfg.conversation_requests:
            return False
    note.added = tally.added
    return True


def _tail(turns: Iterable[RequestPoint], cfg: Settings) -> tuple[RequestPoint, ...]:
    """A conversation's newest requests (newest last) with one cached length and growing prompts, read
    from its turns newest first."""
    run: list[RequestPoint] = []
    low = high = 0
    for point in turns:
        if not run:
            if point.cached <= 0 or point.cached >= point.prompt:
                return ()
            low = high = point.cached
        else:
            low, high = min(low, point.cached), max(high, point.cached)
            if point.prompt >= run[-1].prompt or not _same(low, high, cfg):
                break
        run.append(point)
    return tuple(run[::-1])


def _conversation_finding(labels: Labels, run: Run, cfg: Settings) -> Finding:
    prompts = [p.prompt for p in run.points]
    cached = [p.cached for p in run.points]
    measured = sum(cached) / sum(prompts)
    mean = sum(prompts) / len(prompts)
    evidence = {
        "rule": "conversation",
        "conversation": run.conversation,
        "cached_tokens": run.cached,
        "blocks": blocks(run.cached, cfg.block_size),
        "requests": len(run.points),
        "cached_lengths": cached,
        "prompt_tokens": prompts,
        "same_within_tokens": run.tolerance,
        "mean_prompt_tokens": round(mean, 1),
        "measured_hit_rate": round(measured, 4),
    }
    return Finding(
        alert="pinned_cache_length",
        labels=labels,
        severity="warning",
        summary=(
            f"{len(run.points)} consecutive requests of one conversation ({run.conversation}) reused "
            f"{run.cached} tokens each while the prompt grew from {prompts[0]} to {prompts[-1]} "
            f"(hit rate {measured:.1%})"
        ),
        cause=CAUSE.format(c=run.cached),
        fix=FIX,
        evidence=evidence,
    )


@dataclass(frozen=True)
class Creep:
    """A group's recent requests whose break point creeps slowly while their prompts grow fast."""

    points: tuple[RequestPoint, ...]
    rate: float  # cached tokens gained per request
    growth: float  # prompt tokens gained per request


def creeping(points: Sequence[RequestPoint], cfg: Settings) -> Creep | None:
    """The creep of the group's recent requests with a partial hit, if they show one (see Settings)."""
    # (a prompt sent again reuses all but its last token, which every engine computes again: SGLang
    # caps a match at the prompt's length - 1, llama-server evaluates at least one token. That is a
    # full hit, not a break point, and its unchanged length is no creep)
    recent = [p for p in newest(points, cfg.max_requests) if 0 < p.cached < p.prompt - 1]
    n = len(recent)
    if n < max(cfg.min_requests, 3):  # (a creep needs a few steps, whatever min_requests allows)
        return None
    cached = [p.cached for p in recent]
    prompts = [p.prompt for p in recent]
    steps = [b - a for a, b in pairwise(cached)]
    small = sum(1 for step in steps if 0 <= step <= cfg.creep_step)
    if small < cfg.min_share * len(steps):
        return None
    rate = (cached[-1] - cached[0]) / (n - 1)
    growth = (prompts[-1] - prompts[0]) / (n - 1)
    # (a break point that does not move is the share rule's to judge: a creep moves a token a request)
    if rate < 1.0 or growth < cfg.creep_ratio * rate:
        return None
    if trend(prompts) < cfg.min_trend:
        return None
    return Creep(tuple(recent), round(rate, 1), round(growth, 1))


def _creep_finding(labels: Labels, creep: Creep) -> Finding:
    cached = [p.cached for p in creep.points]
    prompts = [p.prompt for p in creep.points]
    measured = sum(cached) / sum(prompts)
    return Finding(
        alert="pinned_cache_length",
        labels=labels,
        severity="warning",
        summary=(
            f"the cached length crept from {cached[0]} to {cached[-1]} tokens "
            f"({creep.rate:+.0f} per request) over {len(cached)} requests while prompts grew from "
            f"{prompts[0]} to {prompts[-1]} "
            f"({creep.growth:+.0f} per request; hit rate {measured:.1%})"
        ),
        cause=CREEP_CAUSE.format(rate=creep.rate),
        fix=FIX,
        evidence={
            "rule": "creep",
            "cached_tokens": cached[-1],
            "creep_tokens_per_request": creep.rate,
            "prompt_growth_tokens_per_request": creep.growth,
            "requests": len(cached),
            "cached_range": [cached[0], cached[-1]],
            "prompt_range": [prompts[0], prompts[-1]],
            "measured_hit_rate": round(measured, 4),
        },
    )


def _may_be_pinned(points: Sequence[RequestPoint], cfg: Settings, top: int | None = None) -> bool:
    """False when assess() cannot find the group pinned: too few requests, or its most common
    non-zero cached length covers too few of them (most groups, most ticks: a cheaper count). `top`,
    when given, is how many of all the group's points share their commonest positive cached length:
    none of the recent ones can do better, so below the share it settles the matter without a count."""
    size = len(points) if cfg.max_requests <= 0 else min(len(points), cfg.max_requests)
    if (
        top is not None
        and cfg.max_requests > 0
        and size
        and (size < cfg.min_requests or top / size < cfg.min_share)
    ):
        return False
    recent = newest(points, cfg.max_requests)
    if len(recent) < cfg.min_requests:
        return False
    counts = Counter(map(_CACHED, recent))  # (counted in C; then the lengths assess() leaves out)
    for cached in [cached for cached in counts if cached <= 0]:
        del counts[cached]
    return bool(counts) and max(counts.values()) / len(recent) >= cfg.min_share


def group_settings(windows: Windows, labels: Labels, cfg: Settings) -> Settings:
    """The settings for one request group: the block size its source printed unless one is set."""
    block = cfg.block_size or int(windows.source(dict(labels)["source"]).facts.get("block_size", 0))
    return dataclasses.replace(cfg, block_size=block) if block != cfg.block_size else cfg


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """A finding for every request group whose cached length is pinned right now."""
    # (`now` unread: kvwatch.detectors.Memo reuses the findings while the windows' version holds)
    if not cfg.enabled:
        return []
    findings = []
    for labels, points in ordered(windows.requests):
        tally = windows.tallies[labels]
        if _may_be_pinned(points, cfg, tally.top):
            verdict = assess(points, cfg)
            if verdict.pinned:
                findings.append(_finding(labels, points, verdict, group_settings(windows, labels, cfg)))
                continue
        if tally.conversations:  # (else no recent point carries one either)
            group_cfg = group_settings(windows, labels, cfg)
            if not _no_run_since(points, tally, cfg, group_cfg):
                run = conversation_run(points, group_cfg, tally)
                if run is not None:
                    findings.append(_conversation_finding(labels, run, group_cfg))
                    continue
                tally.notes[__name__] = RunNote(cfg, group_cfg.block_size, tally.added)
        creep = creeping(points, cfg)
        if creep is not None:
            findings.append(_creep_finding(labels, creep))
    return [windows.server_of(finding) for finding in findings]  # (Finding.server: one incident, one alert)
