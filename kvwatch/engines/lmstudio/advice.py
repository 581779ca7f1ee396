"""LM Studio's own cause and fix for the engine-neutral alerts whose general text names llama-server's."""

from __future__ import annotations

import dataclasses

from kvwatch.model import Finding

REUSE_CAUSE = (
    "LM Studio re-processes nearly the whole prompt on every turn: the prompt changes near its start on "
    "every request (typically a per-request header such as Claude Code's `x-anthropic-billing-header "
    "... cch=`), or the model's cache cannot be rewound to the prefix it shares with the new prompt "
    "(mlx-engine: `Cache is not trimmable. Clearing the cache instead.`, with hybrid and rotating-window "
    "caches)."
)
REUSE_FIX = (
    "Remove the per-request header: CLAUDE_CODE_ATTRIBUTION_HEADER=0 on the client, or strip it in a "
    "proxy. If the log shows `Cache is not trimmable` "
    '(kvwatch_lmstudio_cache_clears_total{reason="not_trimmable"} rises), this MLX runtime cannot trim '
    "the model's cache: update LM Studio's MLX runtime (mlx-engine keeps prompt-cache checkpoints since "
    "2026-04 and then logs `Prompt cache: using N/M tokens from cache`), or use another model."
)


def reuse(finding: Finding) -> Finding:
    """LM Studio's causes of prompts re-processed in full, and its fixes (no llama-server flags)."""
    return dataclasses.replace(finding, cause=REUSE_CAUSE, fix=REUSE_FIX)


ADVICE = {"prefix_reuse_broken": reuse}
