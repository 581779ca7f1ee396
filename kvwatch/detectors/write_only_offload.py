"""`write_only_offload`: a KV offload tier that stores and stores and never loads back (incident 2).

Per engine, over its last `min_intervals` stats intervals with prefill flowing (within the windows'
horizon): KV lines with byte counts (unknown is not zero: a connector that reports no bytes is never
judged), stored bytes at least `min_store_bytes`, no bytes loaded, and the External prefix cache hit
rate 0.0% on every line that reports it. A connector that counts KV blocks instead of bytes (vLLM's
SimpleCPUOffloadConnector) is judged the same way in its unit: at least `min_store_blocks` blocks stored
(or being stored) and none loaded back. Idle time changes nothing (there is no new evidence), so the
alert resolves when loads appear or External rises above 0, not when traffic pauses.

An external tier that logs its lookups and stores in tokens (an offload layer, e.g. LMCache: its byte
counts are missing from some releases and modes) is judged per source on its last `min_lookups` lookups:
none found a prefix, nothing was loaded, its busiest worker stored at least `min_store_tokens` new tokens
meanwhile, and no stats line of the span shows an External prefix cache hit rate above 0.0%.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import takewhile

from kvwatch.model import Finding
from kvwatch.windows.window import EngineWindow, SourceWindow, StatsPoint, Windows, ordered

CAUSE_HYBRID = (
    "The startup log names KV groups whose trailing chunk is excluded from offloading ({groups}: `KV "
    "offloading: EAGLE/MTP draft attention groups [...] detected.`, which vLLM 0.24-0.33 follow with "
    "`... excluded from offloading` and 0.34 does not). vLLM's OffloadingConnector "
    "looks a prefix up in every KV group (full attention, sliding window, EAGLE/MTP draft) and reports "
    "no hit when any group misses; the excluded groups never store their trailing chunk, so every "
    "lookup misses and the stored full-attention prefixes are never loaded."
)
CAUSE_UNKNOWN = (
    "Every lookup of the offload tier misses. Known cause: with hybrid or speculative-decoding models "
    "the connector rejects a hit when any KV group misses (look for `KV offloading: EAGLE/MTP draft "
    "attention groups [...] detected` at startup: vLLM 0.24-0.33 add `... excluded from offloading`, "
    "0.34 prints only that much; or for hybrid KV warnings). Other causes: prompts that never repeat "
    "beyond what the GPU cache already holds."
)
FIX = (
    "Take the upstream fix for the connector's lookup (promote the full-attention hit and recompute "
    "the rest), or turn the offload off (drop --kv-offloading-size / the OffloadingConnector "
    "kv_transfer_config): it pins host RAM and spends PCIe bandwidth for nothing. Success looks like "
    "kvwatch_vllm_kv_offload_load_bytes_total > 0 or an External prefix cache hit rate above 0%."
)
FIX_BLOCKS = (
    "Take the upstream fix for the connector's lookup, or turn the offload off (drop "
    "--kv-offloading-size, VLLM_USE_SIMPLE_KV_OFFLOAD or the SimpleCPUOffloadConnector "
    "kv_transfer_config): it pins host RAM and spends PCIe bandwidth for nothing. Success looks like "
    "kvwatch_vllm_kv_offload_load_blocks_total > 0 or an External prefix cache hit rate above 0%."
)


CAUSE_TIER = (
    "Every lookup of the external KV cache misses although it keeps storing new chunks. Causes to check: "
    "the chunk key holds the layout (LMCache's CacheEngineKey has world_size and worker_id), so a reader "
    "with another TP size or worker count never hits what a writer stored; writer and reader hash "
    "settings differ (PYTHONHASHSEED, pre_caching_hash_algorithm); the backend (remote URL, Mooncake "
    "master, disk path) is not the one lookups ask; or prompts never share a prefix of one chunk or more."
)
FIX_TIER = (
    "Give writer and reader the same TP size, hash seed and hash algorithm, and point lookups at the "
    "store being written; or turn the tier off. Success looks like LMCache hit tokens > 0 on repeated "
    "prompts, Retrieved lines, and kvwatch_lmcache_retrieved_tokens_total rising."
)


@dataclass(frozen=True)
class Settings:
    """Thresholds; defaults fire on ~4 minutes of steady traffic (24 busy stats intervals), or on an
    external tier's last 24 lookups with 20,000 tokens stored."""

    enabled: bool = True
    min_intervals: int = 24
    min_store_bytes: float = 1e9
    min_store_blocks: int = 64
    min_prompt_throughput: float = 1.0
    min_lookups: int = 24
    min_store_tokens: int = 20_000


def _last_busy(eng: EngineWindow, cfg: Settings) -> list[tuple[float, float]]:
    """(time, prompt throughput) of the newest `min_intervals` busy lines, oldest first."""
    # Walk back from the newest line: a tick costs O(min_intervals), not O(window).
    busy: list[tuple[float, float]] = []
    threshold, wanted = cfg.min_prompt_throughput, cfg.min_intervals
    for point in reversed(eng.stats):
        for prompt in reversed(point.prompts):
            if prompt >= threshold:
                busy.append((point.time, prompt))
                if len(busy) == wanted:
                    return busy[::-1]
    return busy[::-1]


def _cleared(eng: EngineWindow, cfg: Settings) -> bool:
    """Whether _judge certainly finds nothing: too few busy lines, or since the oldest of them a
    load or an External hit (walks back from the newest point without building lists: this runs
    for every engine at every tick, and a healthy tier loads something every few intervals)."""
    if cfg.min_intervals < 1:
        return False
    count, oldest = 0, None
    threshold, wanted = cfg.min_prompt_throughput, cfg.min_intervals  # locals: read once, not per line
    for point in reversed(eng.stats):
        prompts = point.prompts
        if len(prompts) == 1:  # (nearly every point: one line per engine and second, no inner loop)
            if prompts[0] >= threshold:
                count += 1
                if count == wanted:
                    oldest = point.time
                    break
            continue
        for prompt in reversed(prompts):
            if prompt >= threshold:
                count += 1
                if count == wanted:
                    oldest = point.time
                    break
        if oldest is not None:
            break
    if oldest is None:
        return True
    for kv in reversed(eng.kv):
        if kv.time < oldest:
            break
        if kv.load > 0 or kv.load_blocks > 0:  # byte and block counts are never negative
            return True
    for point in reversed(eng.stats):
        if point.time < oldest:
            break
        if point.external_lines and point.external_max > 0:
            return True
    return False


def _clear(eng: EngineWindow, cfg: Settings) -> bool:
    """_cleared's verdict, from the engine's marks while its stats and KV points are each in time
    order (as Windows.observe keeps them, with the newest that loaded and the newest with an External
    hit; out of order: _cleared's walks).

    In time order, the walks' "a load or an External hit at or after the oldest busy line" holds
    exactly when the newer of those two marks is at or after it: so only the stats points after that
    mark are counted, and a healthy tier has a few of them (not `min_intervals`, nor the KV walk)."""
    loaded, external = eng.loaded, eng.external
    if eng.disorder or (loaded is not None and loaded.load <= 0 and loaded.load_blocks <= 0):  # (taken back)
        return _cleared(eng, cfg)
    if cfg.min_intervals < 1:
        return False
    mark = -math.inf
    if loaded is not None:
        mark = loaded.time
    if external is not None and external.time > mark:
        mark = external.time
    count = 0
    threshold, wanted = cfg.min_prompt_throughput, cfg.min_intervals
    for point in reversed(eng.stats):
        if point.time <= mark:  # the oldest busy line, if any, is at or before the mark
            return True
        prompts = point.prompts
        if len(prompts) == 1:
            if prompts[0] >= threshold:
                count += 1
                if count == wanted:  # the oldest busy line is after the mark
                    return False
            continue
        for prompt in prompts:
            if prompt >= threshold:
                count += 1
                if count == wanted:
                    return False
    return True


def _judge(
    source: str, engine: str, eng: EngineWindow, win: SourceWindow, *, now: float, cfg: Settings
) -> Finding | None:
    busy = _last_busy(eng, cfg)
    if not busy or len(busy) < cfg.min_intervals:  # (min_intervals 0: every busy line, if any)
        return None
    # The KV line of an interval is logged right after its stats line, at the same second.
    oldest = busy[0][0]
    stats = list(takewhile(lambda s: s.time >= oldest, reversed(eng.stats)))  # (newest first)
    kv = [k for k in takewhile(lambda k: k.time >= oldest, reversed(eng.kv)) if k.counted or k.block_lines]
    if not kv:
        return None
    stored = sum(k.store for k in kv)
    loaded = sum(k.load for k in kv) + sum(k.load_blocks for k in kv)
    blocks = sum(k.store_blocks for k in kv)
    hit = any(s.external_lines and s.external_max > 0 for s in stats)
    if loaded > 0 or hit:
        return None
    if stored < cfg.min_store_bytes:
        if blocks < cfg.min_store_blocks or not any(k.block_lines for k in kv):
            return None
        return _finding(
            source,
            engine,
            win=win,
            busy=busy,
            stats=stats,
            moved=("blocks", blocks, eng.store_blocks_total, eng.load_blocks_total),
            extra={},
            summary=(
                f"KV offload stored {blocks} KV blocks over the last {len(busy)} busy stats intervals and "
                "loaded none back"
            ),
            fix=FIX_BLOCKS,
        )
    lookups = [k.lookups for k in kv if k.lookup_lines]
    usage = next((s.usage_last for s in stats if s.usage_last is not None), None)
    return _finding(
        source,
        engine,
        win=win,
        busy=busy,
        stats=stats,
        moved=("bytes", stored, eng.store_total, eng.load_total),
        extra={"lookups_window": sum(lookups) if lookups else None, "gpu_kv_usage_last": usage},
        summary=(
            f"KV offload stored {stored / 1e9:.1f} GB over the last {len(busy)} busy stats intervals and "
            "loaded nothing back (External prefix cache hit rate 0.0%)"
        ),
        fix=FIX,
    )


def _excludes(groups: str | None) -> bool:
    """Whether the startup log named KV groups excluded from offloading (0.34's `no KV-cache group is
    annotated as a drafter group` names none: that is `none (...)`)."""
    return groups is not None and not groups.startswith("none")


def _finding(
    source: str,
    engine: str,
    *,
    win: SourceWindow,
    busy: list[tuple[float, float]],
    stats: list[StatsPoint],
    moved: tuple[str, float, float, float],
    extra: dict[str, object],
    summary: str,
    fix: str,
) -> Finding:
    """The finding, its evidence in one order whatever the connector counts in (`moved`: the unit, the
    window's and the total stores, the total loads)."""
    unit, stored, stored_total, loaded_total = moved
    external = sum(s.external_lines for s in stats)
    groups = win.facts.get("offload_excluded_groups")
    evidence = {
        "busy_intervals": len(busy),
        "span_seconds": round(busy[-1][0] - busy[0][0], 1),
        f"stored_{unit}_window": stored,
        f"stored_{unit}_total": stored_total,
        f"loaded_{unit}_window": 0,
        f"loaded_{unit}_total": loaded_total,
        "external_hit_rate": "0.0% on every line" if external else "not reported",
        "external_lines": external,
        **extra,
        "prompt_throughput_mean": round(sum(prompt for _, prompt in busy) / len(busy), 1),
        "connector": win.facts.get("connector"),
        "vllm_version": win.facts.get("version"),
        "excluded_kv_groups": groups,
    }
    return Finding(
        alert="write_only_offload",
        labels=(("source", source), ("engine", engine)),
        severity="warning",
        summary=summary,
        cause=CAUSE_HYBRID.format(groups=groups) if _excludes(groups) else CAUSE_UNKNOWN,
        fix=fix,
        evidence={k: v for k, v in evidence.items() if v is not None},
    )


def _judge_tier(source: str, win: SourceWindow, cfg: Settings) -> Finding | None:
    """The external tier's verdict (see the module's docstring)."""
    history = win.offload
    if history is None or cfg.min_lookups < 1:
        return None
    lookups, oldest = 0, None
    for point in reversed(history.points):  # newest first: a hit or a load ends it at once
        if point.hit_lookups or point.loads:
            return None
        lookups += point.lookups
        if lookups >= cfg.min_lookups:
            oldest = point.time
            break
    if oldest is None:
        return None
    stored: dict[str, int] = {}
    for point in takewhile(lambda p: p.time >= oldest, reversed(history.points)):
        for worker, tokens in point.stored.items():
            stored[worker] = stored.get(worker, 0) + tokens
    busiest = max(stored.values(), default=0)
    if busiest < cfg.min_store_tokens:
        return None
    stats = [
        s for eng in win.engines.values() for s in takewhile(lambda s: s.time >= oldest, reversed(eng.stats))
    ]
    if any(s.external_lines and s.external_max > 0 for s in stats):
        return None
    external = sum(s.external_lines for s in stats)
    newest = history.points[-1].time
    evidence = {
        "lookups_window": lookups,
        "span_seconds": round(newest - oldest, 1),
        "hit_tokens_window": 0,
        "loaded_tokens_window": 0,
        "stored_tokens_window": busiest,
        "workers": len(stored),
        "lookups_total": history.lookups_total,
        "stored_tokens_total": max(history.stored_totals.values(), default=0),
        "loaded_tokens_total": history.loaded_total,
        "external_hit_rate": "0.0% on every line" if external else "not reported",
        "connector": win.facts.get("connector"),
        "vllm_version": win.facts.get("version"),
    }
    return Finding(
        alert="write_only_offload",
        labels=(("source", source), ("tier", "external")),
        severity="warning",
        summary=(
            f"The external KV cache stored {busiest} new tokens over its last {lookups} lookups, "
            "found none of them and loaded nothing back"
        ),
        cause=CAUSE_TIER,
        fix=FIX_TIER,
        evidence={k: v for k, v in evidence.items() if v is not None},
    )


def detect(windows: Windows, now: float, cfg: Settings, *, full: bool = False) -> list[Finding]:
    """Findings for every engine whose offload tier is write-only right now. `full`: judge every engine
    in full, without the shortcut that first rules most out from the windows' marks (the same findings,
    slower: the reference the shortcut is tested against)."""
    if not cfg.enabled:
        return []
    findings = []
    for source, win in ordered(windows.sources):
        tier = _judge_tier(source, win, cfg) if win.offload is not None else None
        if tier is not None:
            findings.append(tier)
        for engine, eng in ordered(win.engines):
            if not full and _clear(eng, cfg):  # the common verdict, without _judge's call
                continue
            finding = _judge(source, engine, eng, win, now=now, cfg=cfg)
            if finding is not None:
                findings.append(finding)
    return findings
