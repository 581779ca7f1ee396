"""Ollama's `no_signal`: which Ollama setting shows its per-request cache lines, by release.

- Up to 0.29 (runner/ollamarunner/cache.go, runner/llamarunner/cache.go) and in 0.1.x (llm/server.go
  passes `--verbose` to the embedded server only then) the cache lines are DEBUG: `OLLAMA_DEBUG=1`
  (envconfig.LogLevel: true or 1 -> DEBUG).
- From 0.30 Ollama starts every llama-server with `--log-verbosity 4` itself (llm/llama_server.go,
  appendLlamaServerLogArgs) and the MLX runner's `cache hit`/`cache miss` are INFO: no Ollama setting
  raises them further, so missing lines there were lost between Ollama and kvwatch.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvwatch.model import Finding

FIX_DEBUG = (
    "Set OLLAMA_DEBUG=1 in Ollama's environment (systemd: `systemctl edit ollama` -> "
    '[Service] Environment="OLLAMA_DEBUG=1", then restart it): Ollama <= 0.29 logs `loading cache slot` '
    "only at DEBUG."
)
FIX_LOST = (
    "Ollama >= 0.30 starts llama-server with --log-verbosity 4 itself, so its reuse lines should be there: "
    "check that kvwatch reads Ollama's whole log (journald rate limits, a log shipper's filter), and update "
    "Ollama if its llama-server does not print them."
)


def _release(version: str) -> tuple[int, int] | None:
    parts = version.split(".")
    if len(parts) < 2 or not (parts[0].isdecimal() and parts[1].isdecimal()):
        return None
    return int(parts[0]), int(parts[1])


def blindness(source: str, facts: Mapping[str, str]) -> Finding | None:
    """The no_signal finding for an Ollama source whose parser judged it blind (fact `blind`)."""
    reason = facts.get("blind", "")
    if not reason:
        return None
    version = facts.get("ollama_version", "unknown")
    release = _release(version)
    modern = release is not None and release >= (0, 30)
    evidence = {
        "reason": reason,
        "ollama_version": version,
        "ollama_debug": facts.get("ollama_debug", "unknown"),
    }
    if reason == "debug_off" and not modern:
        evidence["setting"] = "OLLAMA_DEBUG=1"
        return Finding(
            alert="no_signal",
            labels=(("source", source),),
            severity="warning",
            summary="Ollama logs no per-request cache lines at its log level: prefix reuse is not seen",
            cause="Ollama <= 0.29 prints `loading cache slot` (0.1.x: its slot lines) only at DEBUG.",
            fix=FIX_DEBUG,
            evidence=evidence,
        )
    evidence["setting"] = "none: Ollama >= 0.30 passes --log-verbosity 4 to llama-server itself"
    what = "derived from timings only" if reason == "runner_derived" else "missing"
    return Finding(
        alert="no_signal",
        labels=(("source", source),),
        severity="info" if reason == "runner_derived" else "warning",
        summary=f"Ollama's per-request cache lines are {what}: kvwatch sees less than Ollama logs",
        cause="Ollama >= 0.30 logs its runners' reuse lines at its default level: they did not arrive.",
        fix=FIX_LOST,
        evidence=evidence,
    )
