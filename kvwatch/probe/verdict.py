"""The verdict on one conversation: was the first request's prompt served from cache on the follow-up? (pure)

The follow-up repeats the first request's whole prompt and adds a turn, so the cached count it reports
should reach the first request's prompt tokens, rounded down to the engine's cache block. llama.cpp's
counts are token-exact (block 1); for other engines the block is not known from the response, so
BLOCK_UNKNOWN, the largest block in common use, is allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from kvwatch.probe.conversation import NonceForm
from kvwatch.probe.usage import Usage

Kind = Literal["reused", "partly reused", "not reused", "cannot tell"]
BLOCK_UNKNOWN = 256
#: Exit status of `kvwatch probe` per worst verdict (a failed run is 2 as well).
EXIT: dict[Kind, int] = {"reused": 0, "partly reused": 1, "not reused": 1, "cannot tell": 2}
_ORDER: tuple[Kind, ...] = ("reused", "partly reused", "not reused", "cannot tell")

FLAGS = (
    "The response carries no cached token count. vLLM: start it with --enable-prompt-tokens-details; "
    "SGLang: --enable-cache-report; llama.cpp reports it always (usage.prompt_tokens_details.cached_tokens, "
    "timings.cache_n; usage.cache_read_input_tokens on /v1/messages); a gateway in between must pass "
    "usage.prompt_tokens_details (OpenAI) or usage.cache_read_input_tokens (Anthropic) through."
)
HEADER_CAUSE = (
    "The per-request attribution header (x-anthropic-billing-header: ...; cch=<nonce>;) reaches the engine "
    "at the head of the system prompt: the prefix breaks at the nonce, so only the {cached} tokens before "
    "it are reused and the rest is prefilled again on every request."
)
HEADER_FIX = (
    "Strip the x-anthropic-billing-header line at the gateway, or move it after the cached prefix; "
    "CLAUDE_CODE_ATTRIBUTION_HEADER=0 stops Claude Code sending it. llama.cpp >= b9093 normalises it on "
    "/v1/messages only (an OpenAI-compatible proxy in between defeats that)."
)
REQUEST_ID_CAUSE = (
    "A per-request value at the head of the system prompt (the probe's Request id: <nonce> line) reaches "
    "the engine unchanged: the prefix breaks at the nonce, so only the {cached} tokens before it are reused "
    "and the rest is prefilled again on every request. A request id or timestamp a client or gateway adds "
    "there does the same, and so does Claude Code's x-anthropic-billing-header line where nothing strips "
    "it."
)
REQUEST_ID_FIX = (
    "Keep per-request values out of the head of the prompt: move them after the cached prefix (into the "
    "last user turn) or into HTTP headers or request metadata. For Claude Code's attribution line: strip "
    "it at the gateway or set CLAUDE_CODE_ATTRIBUTION_HEADER=0 (vLLM 0.32 drops it itself, llama.cpp "
    ">= b9093 on /v1/messages only)."
)
PLAIN_CAUSE = (
    "The same prefix sent twice in a row {how}: prefix caching is off (vLLM --no-enable-prefix-caching, "
    "SGLang --disable-radix-cache, llama.cpp cache_prompt false), the follow-up reached another replica, "
    "the cache evicted it under memory pressure, or something between the client and the engine changes "
    "the prompt on every request{where}."
)
PLAIN_FIX = (
    "Check the engine's prefix-caching setting and its KV cache size; route a conversation to one "
    "replica (session affinity or prefix-aware routing); compare what the gateway forwards for two "
    "identical requests."
)


@dataclass(frozen=True)
class Verdict:
    """One conversation's verdict; `prefix` is the first request's prompt, which the follow-up repeats."""

    kind: Kind
    prefix: int | None
    cached: int | None
    share: float | None
    summary: str
    cause: str = ""
    fix: str = ""


def expected(prefix: int, llamacpp: bool) -> int:
    """The cached count a reused prefix reaches at least: `prefix` rounded down to the engine's block."""
    block = 1 if llamacpp else BLOCK_UNKNOWN
    return max(prefix // block * block, 1)


def judge(
    first: Usage, follow: Usage, header: NonceForm | None = None, plain: Verdict | None = None
) -> Verdict:
    """The verdict on a conversation of `first` then `follow`; a header conversation (`header`: the form
    of its per-request line) names that line as the cause when the plain one (`plain`) was reused and
    this one was not."""
    prefix = first.prompt
    if follow.cached is None or prefix is None or prefix <= 0:
        return Verdict("cannot tell", prefix, follow.cached, None, "cannot tell", FLAGS, FLAGS)
    cached = follow.cached
    share = min(cached / prefix, 1.0)
    if cached >= expected(prefix, first.llamacpp or follow.llamacpp):
        return Verdict("reused", prefix, cached, share, f"reused: {cached} of {prefix} prefix tokens cached")
    kind: Kind = "partly reused" if cached > 0 else "not reused"
    summary = (
        f"partly reused: {cached} of {prefix} prefix tokens cached ({share:.1%})"
        if cached
        else f"not reused: 0 of {prefix} prefix tokens cached"
    )
    if header is not None and plain is not None and plain.kind == "reused":
        billing = header == "billing-header"
        cause, fix = (HEADER_CAUSE, HEADER_FIX) if billing else (REQUEST_ID_CAUSE, REQUEST_ID_FIX)
        return Verdict(kind, prefix, cached, share, summary, cause.format(cached=cached), fix)
    how = f"had only {cached} tokens served from cache" if cached else "was not served from cache at all"
    where = f" after its first {cached} tokens" if cached else ""
    return Verdict(kind, prefix, cached, share, summary, PLAIN_CAUSE.format(how=how, where=where), PLAIN_FIX)


def worst(kinds: Sequence[Kind]) -> Kind:
    """The run's verdict: its worst conversation's (cannot tell worst of all)."""
    return max(kinds, key=_ORDER.index) if kinds else "cannot tell"
