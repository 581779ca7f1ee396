"""LM Studio's `no_signal`: its runtimes' cache lines are DEBUG records, hidden unless Verbose Logging is on.

The setting's name is LM Studio's own (lmstudio-ai/localization en/developer.json:
`serverOptions/verboseLogging/title` "Verbose Logging", "Enable verbose logging for the local server",
on the Developer page's server settings). Its File Logging Mode (`Off`, `Succinct`, `Full`) decides
whether the log file is written at all.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvwatch.model import Finding

SETTING = "Verbose Logging (Developer page, server settings)"
FIX = (
    "Turn on LM Studio's Verbose Logging (Developer page -> server settings, 'Enable verbose logging for "
    "the local server'), and keep File Logging Mode on Succinct or Full: LM Studio writes its runtimes' "
    "`Prompt cache: using N/M tokens from cache` and `Cache reuse summary` lines only as DEBUG records."
)


def blindness(source: str, facts: Mapping[str, str]) -> Finding | None:
    """The no_signal finding for an LM Studio source whose parser judged it blind (fact `blind`)."""
    reason = facts.get("blind", "")
    if not reason:
        return None
    return Finding(
        alert="no_signal",
        labels=(("source", source),),
        severity="warning",
        summary="LM Studio logs chat completions but no DEBUG records: prefix-cache reuse is not seen",
        cause="LM Studio writes its runtimes' per-request cache lines as DEBUG records, which its log "
        "holds only with Verbose Logging on.",
        fix=FIX,
        evidence={"reason": reason, "setting": SETTING},
    )
