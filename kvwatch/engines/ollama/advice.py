"""Ollama's own cause and fix for the engine-neutral alerts whose general text names llama-server's."""

from __future__ import annotations

import dataclasses

from kvwatch.model import Finding

#: The MLX runner restores a cached prefix only up to a multiple of its 8192-token pages (ollama#18267).
PAGE = 8192

PINNED_PAGE_CAUSE = (
    "{c} is 8192 * {n} - 1, where the prefix-cache restore of Ollama's MLX runner lands (it restores only "
    "up to a multiple of 8192 tokens, ollama#18267). Restores stuck at one such length while the prompt "
    "grows are an Ollama defect (ollama#17829: the cached portion stays stuck at 24k), and every turn "
    "re-prefills all that lies beyond it. If the runner's `cache hit` lines show `matched` equal to "
    "`cached` instead, the prompt itself changes after {c} tokens on every request (typically a "
    "per-request header such as Claude Code's `x-anthropic-billing-header: ...; cch=<nonce>;`)."
)
PINNED_PAGE_FIX = (
    "Compare `matched` with `cached` in the runner's `cache hit` lines. `matched` well above `cached`: "
    "upgrade Ollama to a release with the fixes for ollama#17829 and ollama#18267 (its release notes say "
    "which); nothing in the prompt helps. `matched` equal to `cached`: strip the per-request header at "
    "the gateway, or set CLAUDE_CODE_ATTRIBUTION_HEADER=0 on the client."
)
REUSE_CAUSE = (
    "Ollama re-processes nearly the whole prompt on every turn: the prompt changes near its start on "
    "every request (typically a per-request header such as Claude Code's `x-anthropic-billing-header "
    "... cch=`, or Claude Code's `<total_tokens>` reminder after each tool result, which Ollama moves to "
    "the front with the other system messages: ollama PR #17918), or, on an MLX model, the runner cannot "
    "restore its cache (`failed to restore cache, freeing all caches`, ollama#17829)."
)
REUSE_FIX = (
    "Remove the per-request header: CLAUDE_CODE_ATTRIBUTION_HEADER=0 on the client, or strip it in a "
    "proxy; turn the token reminder off with CLAUDE_CODE_TOTAL_TOKENS_REMINDER=off (`ollama launch "
    "claude` sets it since ollama PR #17918). On an MLX model, look for `failed to restore cache` or "
    "`cache miss` in Ollama's log and check ollama#17829 against your Ollama version. For a GGUF model "
    "(Ollama >= 0.30 runs llama-server) the slot lines in the same log show how many tokens each turn reused."
)


def pinned(finding: Finding) -> Finding:
    """A length pinned at 8192*n - 1 also points at the MLX runner's page-aligned restore."""
    cached = finding.evidence.get("cached_tokens")
    if not isinstance(cached, int) or cached < PAGE - 1 or (cached + 1) % PAGE:
        return finding
    return dataclasses.replace(
        finding,
        cause=PINNED_PAGE_CAUSE.format(c=cached, n=(cached + 1) // PAGE),
        fix=PINNED_PAGE_FIX,
    )


def reuse(finding: Finding) -> Finding:
    """Ollama's causes of prompts re-processed in full, and its fixes (no llama-server flags)."""
    return dataclasses.replace(finding, cause=REUSE_CAUSE, fix=REUSE_FIX)


ADVICE = {"pinned_cache_length": pinned, "prefix_reuse_broken": reuse}
