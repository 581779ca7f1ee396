"""`no_signal`: kvwatch is blind and says so, with the flag that gives it back its eyes.

What can be missing is what the source's engine declares it can produce (its `signals`):
- cache-rate samples (vLLM's stats lines) switched off: `--disable-log-stats`, or more than one API
  server (the default for data-parallel vLLM >= 0.15 logs `disabling stats logging`);
- exact request records, where an engine may only derive them (llama.cpp at default verbosity: reuse
  derived from timing lines, less exact; severity info): judged on what was seen since the server's
  last start. Requests seen whole with no reuse lines say so; one complete record from the reuse lines
  says the opposite (-lv 4), and a request already under way when reading began (no slot pick seen,
  e.g. `start_at = "end"`) says nothing either way;
- cache-tier prefetches (SGLang HiCache with a storage backend) where the build logs them only at
  DEBUG (before 0.5.22; 0.5.18 for hybrid models): whether the storage tier is read back is unseen until
  a prefetch line shows up (severity info);
- an engine's own verdict, where it declares one (`JudgesBlindness`: Ollama's OLLAMA_DEBUG), and that
  of each cache layer the source's engine carries (`CarriesLayers`: LMCache's LMCACHE_LOG_LEVEL), handed
  the source's facts and `traffic` (whether its last stats line showed prompt throughput);
- cache-rate samples gone silent for longer than `silence` seconds while the last one showed traffic
  (a normal idle silence follows a `0.0 tokens/s` line and is not judged).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.detectors.stable import NEVER, before
from kvwatch.model import Blindness, Finding
from kvwatch.windows.window import SourceWindow, Windows

FIX_STATS = (
    "Remove --disable-log-stats; with data parallelism run `--api-server-count 1` (or one API server per "
    "rank with external load balancing) so that vLLM prints its per-engine stats lines."
)
FIX_VERBOSITY = (
    "Run llama-server with `-lv 4` (or LLAMA_ARG_LOG_VERBOSITY=4): builds >= b9305 print the reuse lines "
    "(`new prompt`, `memory_seq_rm`) only at trace verbosity."
)
FIX_SILENT = (
    "Check that the engine is alive and that kvwatch follows the right log (container recreated? log "
    "driver changed?). kvwatch_source_up and kvwatch_lines_total tell whether lines still arrive."
)


FIX_PREFETCH = (
    "Run SGLang >= 0.5.22, which logs every storage prefetch at INFO (`HiCache prefetch success|dropped`), "
    "or watch SGLang's own metrics (--enable-metrics) in Prometheus: "
    "sglang_storage_prefetch_hit_tokens_total against sglang_backuped_tokens_total (SGLang's /metrics "
    "page spells them sglang:...)."
)


@dataclass(frozen=True)
class Settings:
    """When silence counts as blindness."""

    enabled: bool = True
    silence: float = 300.0


def _stats_off(source: str, win: SourceWindow) -> Finding | None:
    reason = win.facts.get("stats_disabled")
    servers = int(win.facts.get("api_server_count", "1") or 1)
    if reason is None and servers <= 1:
        return None
    why = reason or f"api_server_count = {servers}"
    return Finding(
        alert="no_signal",
        labels=(("source", source),),
        severity="warning",
        summary=f"vLLM prints no stats lines ({why}): kvwatch cannot see prefix-cache or offload health",
        cause=f"Stats logging is switched off: {why}.",
        fix=FIX_STATS,
        evidence={"reason": why, "vllm_version": win.facts.get("version", "unknown")},
    )


def _verbosity(source: str, win: SourceWindow) -> Finding:
    return Finding(
        alert="no_signal",
        labels=(("source", source),),
        severity="info",
        summary="llama-server runs at default verbosity: reused tokens are derived from timings, less exact",
        cause="llama.cpp >= b9305 logs `new prompt` and `memory_seq_rm` only at -lv 4.",
        fix=FIX_VERBOSITY,
        evidence={
            "derived_requests": win.derived_requests,
            "exact_requests": win.exact_requests,
            "joined_requests": win.joined_requests,
        },
    )


def _silent(source: str, win: SourceWindow, now: float, cfg: Settings) -> Finding | None:
    last = win.last_stats
    if last is None or (last.prompt_throughput <= 0 and last.generation_throughput <= 0):
        return None
    quiet = now - last.time
    if quiet <= cfg.silence:
        return None
    return Finding(
        alert="no_signal",
        labels=(("source", source),),
        severity="warning",
        summary=f"no vLLM stats line for {quiet:.0f} s although the last one showed traffic",
        cause="The source went silent while busy: the engine stopped, hung, or its log moved.",
        fix=FIX_SILENT,
        evidence={"silent_seconds": round(quiet, 1), "last_prompt_throughput": last.prompt_throughput},
    )


def _prefetch_blind(source: str, win: SourceWindow) -> Finding | None:
    backend = win.facts.get("cache_storage_backend")
    if backend is None or win.facts.get("prefetch_logged") == "yes" or win.prefetches:
        return None
    return Finding(
        alert="no_signal",
        labels=(("source", source),),
        severity="info",
        summary=f"storage tier {backend} configured, but this build logs its prefetches only at DEBUG",
        cause="SGLang before 0.5.22 (0.5.18 for hybrid models) logs no INFO line per storage prefetch: "
        f"kvwatch cannot tell whether --hicache-storage-backend {backend} is ever read back.",
        fix=FIX_PREFETCH,
        evidence={"setting": f"--hicache-storage-backend {backend}"},
    )


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """At most one no_signal finding per source, the most telling first."""
    if not cfg.enabled:
        return []
    findings = []
    for source, win in sorted(windows.sources.items()):
        finding: Finding | None = None
        blindness = windows.engines.blindness(win.kind)
        if blindness is not None:  # the engine's own verdict
            finding = blindness(source, win.facts)
            if finding is not None:
                findings.append(finding)
            continue
        signals = windows.engines.signals(
            win.kind
        )  # what the source's engine can tell, hence what can be missing
        if "cache_rate" in signals:
            finding = _stats_off(source, win) or _silent(source, win, now, cfg)
        elif "derived_requests" in signals and win.derived_requests and not win.exact_requests:
            finding = _verbosity(source, win)
        if finding is None:
            finding = _prefetch_blind(source, win)
        layers = windows.engines.layers(win.kind)
        if finding is None and layers:
            finding = _layers_blind(source, win, [windows.engines.blindness(name) for name in layers])
        if finding is not None:
            findings.append(finding)
    return findings


def _layers_blind(source: str, win: SourceWindow, verdicts: list[Blindness | None]) -> Finding | None:
    """The first verdict of a cache layer the source's engine carries (`verdicts`: each layer's
    `blindness`, in the engine's order)."""
    last = win.last_stats
    facts = {**win.facts, "traffic": "yes" if last is not None and last.prompt_throughput > 0 else "no"}
    for blindness in verdicts:
        finding = blindness(source, facts) if blindness is not None else None
        if finding is not None:
            return finding
    return None


def until(windows: Windows, now: float, cfg: Settings) -> float:
    """When a source's stats silence turns long enough to judge (the only verdict `now` decides; while
    it holds, its seconds change at every tick)."""
    if not cfg.enabled:
        return NEVER
    soonest = NEVER
    for win in windows.sources.values():
        last = win.last_stats
        if last is None or (last.prompt_throughput <= 0 and last.generation_throughput <= 0):
            continue
        if now - last.time > cfg.silence:
            return now
        soonest = min(soonest, before(last.time + cfg.silence))
    return soonest
