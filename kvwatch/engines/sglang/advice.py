"""SGLang's own cause and fix for the engine-neutral alerts whose general text names llama-server's."""

from __future__ import annotations

import dataclasses

from kvwatch.model import Finding

REUSE_CAUSE = (
    "The prompt changes near its start on every request (typically a per-request header such as Claude "
    "Code's `x-anthropic-billing-header ... cch=` in the first system message), so SGLang's radix cache "
    "matches only the tokens before the change and prefills the rest again."
)
REUSE_FIX = (
    "Remove the per-request header: CLAUDE_CODE_ATTRIBUTION_HEADER=0 on the client, or strip it in the "
    "proxy; the prefill lines' `#cached-token` then grow with the conversation. If the radix cache is "
    "off (`--disable-radix-cache`), `prefix_cache_disabled` says so."
)


def reuse(finding: Finding) -> Finding:
    """SGLang's cause of prompts re-processed in full, and its fix (no llama-server flags)."""
    return dataclasses.replace(finding, cause=REUSE_CAUSE, fix=REUSE_FIX)


ADVICE = {"prefix_reuse_broken": reuse}
