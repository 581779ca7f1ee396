"""`engine_start_failed`: the engine died, at startup or later, and has not started since.

Every engine's parser turns its own last words into an engine-neutral `kvwatch.model.EngineFailed`
(vLLM's `EngineCore failed to start` and the exception under it, llama-server's `failed to load model`,
...) and its next successful start into `kvwatch.model.EngineReady`; the window keeps the failure until
then. One finding per source, critical: while it holds, the engine serves nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from kvwatch.model import Finding
from kvwatch.windows.window import Windows, ordered

FIX_CAUSE = (
    "Start the engine without {cause}, or on hardware whose backend supports it (the error above says "
    "which). Success: the next start reaches serving (its first stats line or request); this alert "
    "resolves then."
)
FIX = (
    "Read the error and the lines just above it in the engine's log (the traceback's root cause, a "
    "model path, memory, a flag the build does not support), fix that and start the engine again. "
    "Success: the next start reaches serving (its first stats line or request); this alert resolves then."
)


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Settings:
    """On by default: an engine that is down is always worth a page."""

    enabled: bool = True


def detect(windows: Windows, now: float, cfg: Settings) -> list[Finding]:
    """One finding per source whose engine's last word is a failure."""
    if not cfg.enabled:
        return []
    findings = []
    for source, win in ordered(windows.sources):
        failed = win.failed
        if failed is None:
            continue
        when = "while starting" if failed.phase == "startup" else "after it had served"
        died = "failed to start" if failed.phase == "startup" else "crashed"
        on = f" ({failed.cause})" if failed.cause else ""
        findings.append(
            Finding(
                alert="engine_start_failed",
                labels=(("source", source),),
                severity="critical",
                summary=f"{failed.engine} {died}{on}: {failed.error}",
                cause=(
                    f"{failed.engine} stopped on an error {when}"
                    + (f", in the KV connector or offload setting {failed.cause}" if failed.cause else "")
                    + f". Its last error line: {failed.error}"
                ),
                fix=FIX_CAUSE.format(cause=failed.cause) if failed.cause else FIX,
                evidence={
                    "engine": failed.engine,
                    "phase": failed.phase,
                    "error": failed.error,
                    "cause": failed.cause,
                    "failed_at": datetime.fromtimestamp(failed.time, timezone.utc).isoformat(
                        timespec="seconds"
                    ),
                },
            )
        )
    return findings
