"""`write_only_offload`: a vLLM KV offload tier that stores and stores and never loads back (incident 2).

Per engine, over its last `min_intervals` stats intervals with prefill flowing (within the windows'
horizon): KV lines with byte counts (unknown is not zero: a connector that reports no bytes is never
judged), stored bytes at least `min_store_bytes`, no bytes loaded, and the External prefix cache hit
rate 0.0% on every line that reports it. Idle time changes nothing (there is no new evidence), so the
alert resolves when loads appear or External rises above 0, not when traffic pauses.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import takewhile

from kvwatch.model import Finding
from kvwatch.window import EngineWindow, SourceWindow, Windows

CAUSE_HYBRID = (
    "The startup log shows KV groups excluded from offloading ({groups}). vLLM's OffloadingConnector "
    "looks a prefix up in every KV group (full attention, sliding window, EAGLE/MTP draft) and reports "
    "no hit when any group misses; the excluded groups never store their trailing chunk, so every "
    "lookup misses and the stored full-attention prefixes are never loaded."
)
CAUSE_UNKNOWN = (
    "Every lookup of the offload tier misses. Known cause: with hybrid or speculative-decoding models "
    "the connector rejects a hit when any KV group misses (look for `KV offloading: EAGLE/MTP draft "
    "attention groups ... excluded from offloading` or hybrid KV warnings at startup). Other causes: "
    "prompts that never repeat beyond what the GPU cache already holds."
)
FIX = (
    "Take the upstream fix for the connector's lookup (promote the full-attention hit and recompute "
    "the rest), or turn the offload off (drop --kv-offloading-size / the OffloadingConnector "
    "kv_transfer_config): it pins host RAM and spends PCIe bandwidth for nothing. Success looks like "
    "kvwatch_vllm_kv_offload_load_bytes_total > 0 or an External prefix cache hit rate above 0%."
)


@dataclass(frozen=True)
class Settings:
    """Thresholds; defaults fire on ~4 minutes of steady traffic (24 busy stats intervals)."""

    enabled: bool = True
    min_intervals: int = 24
    min_store_bytes: float = 1e9
    min_prompt_throughput: float = 1.0


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
        for prompt in reversed(point.prompts):
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
        if kv.load > 0:  # byte counts are never negative
            return True
    for point in reversed(eng.stats):
        if point.time < oldest:
            break
        if point.external_lines and point.external_max > 0:
            return True
    return False


def _judge(
    source: str, engine: str, eng: EngineWindow, win: SourceWindow, *, now: float, cfg: Settings
) -> Finding | None:
    busy = _last_busy(eng, cfg)
    if len(busy) < cfg.min_intervals:
        return None
    # The KV line of an interval is logged right after its stats line, at the same second.
    oldest = busy[0][0]
    stats = list(takewhile(lambda s: s.time >= oldest, reversed(eng.stats)))  # (newest first)
    kv = [k for k in takewhile(lambda k: k.time >= oldest, reversed(eng.kv)) if k.counted]
    if not kv:
        return None
    stored = sum(k.store for k in kv)
    loaded = sum(k.load for k in kv)
    external = sum(s.external_lines for s in stats)
    hit = any(s.external_lines and s.external_max > 0 for s in stats)
    if stored < cfg.min_store_bytes or loaded > 0 or hit:
        return None
    lookups = [k.lookups for k in kv if k.lookup_lines]
    usage = next((s.usage_last for s in stats if s.usage_last is not None), None)
    groups = win.facts.get("offload_excluded_groups")
    evidence = {
        "busy_intervals": len(busy),
        "span_seconds": round(busy[-1][0] - busy[0][0], 1),
        "stored_bytes_window": stored,
        "stored_bytes_total": eng.store_total,
        "loaded_bytes_window": 0,
        "loaded_bytes_total": eng.load_total,
        "external_hit_rate": "0.0% on every line" if external else "not reported",
        "external_lines": external,
        "lookups_window": sum(lookups) if lookups else None,
        "gpu_kv_usage_last": usage,
        "prompt_throughput_mean": round(sum(prompt for _, prompt in busy) / len(busy), 1),
        "connector": win.facts.get("connector"),
        "vllm_version": win.facts.get("version"),
        "excluded_kv_groups": groups,
    }
    gb = stored / 1e9
    return Finding(
        alert="write_only_offload",
        labels=(("source", source), ("engine", engine)),
        severity="warning",
        summary=(
            f"KV offload stored {gb:.1f} GB over the last {len(busy)} busy stats intervals and loaded "
            "nothing back (External prefix cache hit rate 0.0%)"
        ),
        cause=CAUSE_HYBRID.format(groups=groups) if groups else CAUSE_UNKNOWN,
        fix=FIX,
        evidence={k: v for k, v in evidence.items() if v is not None},
    )


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """Findings for every engine whose offload tier is write-only right now."""
    if not cfg.enabled:
        return []
    findings = []
    for source, win in sorted(windows.sources.items()):
        for engine, eng in sorted(win.engines.items()):
            if _cleared(eng, cfg):  # the common verdict, without _judge's call
                continue
            finding = _judge(source, engine, eng, win, now=now, cfg=cfg)
            if finding is not None:
                findings.append(finding)
    return findings
