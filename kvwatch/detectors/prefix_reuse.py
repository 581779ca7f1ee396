"""`prefix_reuse_broken`: a server's consecutive sizeable prompts reuse almost nothing (incident 4).

Two rules, evidence `rule`: "share" when at least `min_share` of the last `requests` prompts of at least
`min_prompt` tokens reused at most `max_reuse` of themselves; "waste" when, on one slot, `waste_requests`
of its last `requests` such prompts were large (at least `large_prompt` tokens) and fully re-processed
(at most `max_reuse` reused): the third 24k-token re-processing fires, while one after a compaction or a
tool-list change (the prefix changes once, then is reused again) does not.

It judges effective reuse (n_past, the tokens actually kept), never a low or missing sim_best: the host
prompt cache can rescue a low-similarity pick, and a broken prefix usually shows as an LRU pick with no
similarity line at all. `cache reuse is not supported - ignoring n_cache_reuse` is the unrelated
chunk-shifting feature and plays no part. A source that carries several servers' requests (a journal's
`name[pid]`) is judged per server, its findings labelled with the `server`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kvwatch.model import Finding
from kvwatch.windows.window import Labels, RequestPoint, Tally, Windows, newest, ordered

CAUSE_REPROCESS = (
    "llama.cpp forces full prompt re-processing: on SWA / hybrid / recurrent models the cache can only "
    "be restored from context checkpoints, and the reusable prefix ends before every checkpoint because "
    "the prompt changes near its start on every request (typically a per-request header such as Claude "
    "Code's `x-anthropic-billing-header ... cch=`)."
)
CAUSE_PREFIX = (
    "The prompt changes near its start on every request, so only the tokens before the change can be "
    "reused (typically a per-request header such as Claude Code's `x-anthropic-billing-header ... cch=` "
    "in the first system message); slots are then picked by LRU because no slot is similar enough."
)
FIX = (
    "Remove the per-request header: CLAUDE_CODE_ATTRIBUTION_HEADER=0 on the client, or strip it in the "
    "proxy. On llama.cpp >= b9093, point Claude Code at `/v1/messages`, which normalises it (an "
    "OpenAI-compatible proxy in between does not). Not the cause: `cache reuse is not supported - "
    "ignoring n_cache_reuse` (that is --cache-reuse chunk shifting), --parallel, --swa-full."
)

# llama.cpp b9093-b9113 (llama-cpp-python 0.3.17-0.3.23), server-context.cpp: a fully cached prompt is cut
# back one token ([TAG_PROMPT_LOGITS]); a recurrent memory cannot drop its last position, the cut fails and
# the memory is cleared. b9246's update_slots looks for a context checkpoint in that case instead.
CAUSE_TRUNCATE = (
    "llama.cpp could not cut its memory back (`failed to truncate tokens with position >= N - clearing "
    "the memory`): on a recurrent or hybrid model the slot already held the request's whole prompt (the "
    "same prompt sent again: a `max_tokens: 1` cache warm-up, a retry, a regenerate), llama.cpp keeps one "
    "token to evaluate, the recurrent state cannot drop its last position, and the memory is cleared, so "
    "the prompt is processed again in full. llama.cpp b9093-b9113 (llama-cpp-python 0.3.17-0.3.23) do this."
)
FIX_TRUNCATE = (
    "Upgrade llama.cpp to b9246 or later: a fully cached prompt then restores the context checkpoint made "
    "before the prompt's end instead of clearing the memory. Until then, do not send the same prompt twice "
    "(drop cache warm-up requests; expect a retry to re-process in full)."
)


def _cause(points: Sequence[RequestPoint]) -> tuple[str, str]:
    """The cause and fix the poor points' lines show: most of them a failed truncation, most of them a
    forced full re-processing, or a prefix that breaks early."""
    if sum(p.reprocess_cause == "memory_truncate_failed" for p in points) * 2 >= len(points):
        return CAUSE_TRUNCATE, FIX_TRUNCATE
    if sum(p.full_reprocess for p in points) * 2 >= len(points):
        return CAUSE_REPROCESS, FIX
    return CAUSE_PREFIX, FIX


@dataclass(frozen=True)
class Settings:
    """Thresholds: the last `requests` requests of at least `min_prompt` tokens."""

    enabled: bool = True
    requests: int = 6
    min_prompt: int = 256
    max_reuse: float = 0.1
    min_share: float = 0.8
    large_prompt: int = 4096
    waste_requests: int = 3

    def problems(self) -> list[str]:
        """What makes these settings unusable, as `key: reason`."""
        found = []
        if self.large_prompt < 1:
            found.append(f"large_prompt: must be at least 1 (got {self.large_prompt})")
        if self.waste_requests < 1:
            found.append(f"waste_requests: must be at least 1 (got {self.waste_requests})")
        elif self.waste_requests > self.requests:
            found.append(
                f"waste_requests: must be at most requests ({self.requests}), got {self.waste_requests}"
            )
        return found


def _last_sizeable(points: Sequence[RequestPoint], cfg: Settings) -> list[RequestPoint]:
    """The last `requests` points of at least `min_prompt` tokens, oldest first."""
    if cfg.requests < 1:
        return [p for p in points if p.prompt >= cfg.min_prompt][-cfg.requests :]
    # Walk back from the newest: a tick costs O(requests), not O(window) (it runs every 10 s).
    found: list[RequestPoint] = []
    for point in reversed(points):
        if point.prompt >= cfg.min_prompt:
            found.append(point)
            if len(found) == cfg.requests:
                break
    return found[::-1]


def _poor(point: RequestPoint, cfg: Settings) -> bool:
    return point.full_reprocess or point.cached <= cfg.max_reuse * point.prompt


def _hopeless(points: Sequence[RequestPoint], cfg: Settings, wanted: float, large: int) -> bool:
    """True when fewer than `wanted` of the last `requests` sizeable points can be poor ones of at least
    `large` tokens: found walking back from the newest, as enough are not (healthy: two or three)."""
    if cfg.requests < 1:
        return False
    seen = fine = 0
    requests, min_prompt, max_reuse = cfg.requests, cfg.min_prompt, cfg.max_reuse
    for point in reversed(points):
        prompt = point.prompt
        if prompt >= min_prompt:
            # (_poor, inlined: this runs for every group at every tick its requests changed)
            if prompt < large or not (point.full_reprocess or point.cached <= max_reuse * prompt):
                fine += 1
                if requests - fine < wanted:  # (at most that many of them can be poor)
                    return True
            seen += 1
            if seen == requests:
                return False
    return False


def _judge(labels: Labels, points: Sequence[RequestPoint], cfg: Settings) -> Finding | None:
    if _hopeless(points, cfg, cfg.min_share * cfg.requests, cfg.min_prompt):
        return None
    sizeable = _last_sizeable(points, cfg)
    if len(sizeable) < cfg.requests:
        return None
    poor = [p for p in sizeable if _poor(p, cfg)]
    if len(poor) < cfg.min_share * len(sizeable):
        return None
    reprocessed = sum(p.full_reprocess for p in sizeable)
    prompt = sum(p.prompt for p in sizeable)
    reused = sum(p.cached for p in sizeable)
    evidence = {
        "rule": "share",
        "requests": len(sizeable),
        "poor_reuse_requests": len(poor),
        **_figures(sizeable),
    }
    cause, fix = _cause(sizeable)
    return Finding(
        alert="prefix_reuse_broken",
        labels=labels,
        severity="warning",
        summary=(
            f"{len(poor)} of the last {len(sizeable)} prompts reused almost nothing "
            f"({reused} of {prompt} tokens, {reprocessed} fully re-processed)"
        ),
        cause=cause,
        fix=fix,
        evidence=evidence,
    )


def _figures(points: Sequence[RequestPoint]) -> dict[str, object]:
    """The evidence both rules give of the requests they judged: per request, and over them."""
    prompt = sum(p.prompt for p in points)
    return {
        "reused_tokens": [p.cached for p in points],
        "prompt_tokens": [p.prompt for p in points],
        "reuse_ratio": round(sum(p.cached for p in points) / prompt, 4) if prompt else 0.0,
        "full_reprocess": sum(p.full_reprocess for p in points),
        "lru_selections": sum(p.selection == "lru" for p in points),
        "derived_from_timings": any(p.derived for p in points),
    }


def _wasted(point: RequestPoint, cfg: Settings) -> bool:
    return point.prompt >= cfg.large_prompt and _poor(point, cfg)


def _per_slot(
    slots: Mapping[int | None, Sequence[RequestPoint]], cfg: Settings
) -> dict[int | None, list[RequestPoint]]:
    """Each slot's last `requests` points of at least `min_prompt` tokens, oldest first (slots with one)."""
    # Each slot's own points, newest first: a tick costs O(slots x requests), not O(window).
    found: dict[int | None, list[RequestPoint]] = {}
    for slot, points in slots.items():
        recent: list[RequestPoint] = []
        sizeable = False
        for point in reversed(points):
            if point.prompt >= cfg.min_prompt:
                sizeable = True
                if len(recent) >= cfg.requests:
                    break
                recent.append(point)
        if sizeable:
            found[slot] = recent[::-1]
    return found


def _waste(
    labels: Labels, slots: Mapping[int | None, Sequence[RequestPoint]], cfg: Settings
) -> Finding | None:
    """The slot with the most full re-processings of large prompts, when it has `waste_requests`."""
    for points in slots.values():
        if not _hopeless(points, cfg, cfg.waste_requests, cfg.large_prompt):
            break
    else:
        return None
    worst: tuple[int | None, list[RequestPoint], list[RequestPoint]] | None = None
    for slot, recent in sorted(
        _per_slot(slots, cfg).items(), key=lambda item: (item[0] is None, item[0] or 0)
    ):
        wasted = [p for p in recent if _wasted(p, cfg)]
        if len(wasted) >= cfg.waste_requests and (worst is None or len(wasted) > len(worst[2])):
            worst = slot, recent, wasted
    if worst is None:
        return None
    slot, recent, wasted = worst
    prompt = sum(p.prompt for p in wasted)
    reused = sum(p.cached for p in wasted)
    where = "" if slot is None else f" on slot {slot}"
    cause, fix = _cause(wasted)
    evidence = {
        "rule": "waste",
        "slot": slot,
        "requests": len(recent),
        "large_prompt": cfg.large_prompt,
        "wasted_requests": len(wasted),
        "reprocessed_tokens": prompt - reused,
        **_figures(wasted),
    }
    return Finding(
        alert="prefix_reuse_broken",
        labels=labels,
        severity="warning",
        summary=(
            f"{len(wasted)} of the last {len(recent)} prompts{where} were large and re-processed in full "
            f"({reused} of {prompt} tokens reused, {prompt - reused} computed again)"
        ),
        cause=cause,
        fix=fix,
        evidence=evidence,
    )


@dataclass(slots=True)
class Note:
    """A group found healthy under `cfg` when it had counted `added` points: at most `poor` poor ones
    among its last `requests` sizeable ones, and on any slot at most `wasted` wasted ones among its own.

    Each point that comes adds at most one to either count (it enters those last ones, pushing the
    oldest out; a point leaving the group only takes one out): while both stay under what fires the
    rules (the share of `requests`, `waste_requests`), neither rule can fire, without a look at the rest."""

    cfg: Settings
    added: int
    poor: int
    wasted: int


def _still_healthy(points: Sequence[RequestPoint], tally: Tally, cfg: Settings) -> bool:
    """Whether the group's note, with the points that came since counted in, says it is still healthy
    (the note then counts them)."""
    note = tally.notes.get(__name__)
    if not isinstance(note, Note) or note.cfg is not cfg:
        return False
    came = tally.added - note.added
    if came > len(points):  # (more came than the group keeps: which left is not known)
        return False
    poor, wasted = note.poor, note.wasted
    for point in (points[-1],) if came == 1 else newest(points, came) if came else ():
        if _poor(point, cfg):
            poor += point.prompt >= cfg.min_prompt
            wasted += point.prompt >= cfg.large_prompt
    if poor < cfg.min_share * cfg.requests and wasted < cfg.waste_requests:
        note.added, note.poor, note.wasted = tally.added, poor, wasted
        return True
    return False


def _note(
    points: Sequence[RequestPoint], slots: Mapping[int | None, Sequence[RequestPoint]], cfg: Settings
) -> Note:
    """The counts of a Note, of a group neither rule fires on."""
    poor = sum(_poor(p, cfg) for p in _last_sizeable(points, cfg))
    wasted = max(
        (sum(_wasted(p, cfg) for p in recent) for recent in _per_slot(slots, cfg).values()), default=0
    )
    return Note(cfg, 0, poor, wasted)


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """A finding for every source of server request records whose prefix reuse is broken right now."""
    # (`now` unread: kvwatch.detectors.Memo reuses the findings while the windows' version holds)
    if not cfg.enabled:
        return []
    findings = []
    for labels, points in ordered(windows.requests):
        tally = windows.tallies[labels]
        if _still_healthy(points, tally, cfg):  # (first: nothing found either way, and it costs least)
            continue
        named = dict(labels)
        if "entry" in named:  # (a gateway's entry: the usage detectors judge those)
            continue
        source = named["source"]
        if "server_requests" not in windows.engines.signals(windows.source(source).kind):
            continue
        slots = windows.slots[labels]
        finding = _judge(labels, points, cfg) or _waste(labels, slots, cfg)
        if finding is not None:
            findings.append(finding)
        elif cfg.requests >= 1:  # (the rules' own reading of fewer: see _last_sizeable)
            note = tally.notes[__name__] = _note(points, slots, cfg)
            note.added = tally.added
    return [windows.server_of(finding) for finding in findings]  # (Finding.server: one incident, one alert)
