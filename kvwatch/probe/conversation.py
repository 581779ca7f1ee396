"""The probe's conversations: a synthetic prefix (tools + system prompt), the attribution header, the bodies.

Everything here is deterministic but the header's nonce, which the caller passes in. The prefix text says
what it is, so no one's prompt is ever sent; its size is estimated, not tokenized (no tokenizer is at hand):
CHARS_PER_TOKEN is what the text below averages on Llama- and GPT-style BPE vocabularies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

Api = Literal["openai", "anthropic"]
APIS: tuple[Api, ...] = ("openai", "anthropic")
#: The per-request line heading the header conversation's system prompt: Claude Code's attribution line
#: as it sends it, or a plain request id (which no engine strips: vLLM 0.32 drops the attribution line).
NonceForm = Literal["billing-header", "request-id"]
NONCE_FORMS: tuple[NonceForm, ...] = ("billing-header", "request-id")
CHAT_PATH = "/chat/completions"
MESSAGES_PATH = "/messages"
#: Claude Code's attribution line; llama.cpp's /v1/messages rewrites exactly 5 characters after `cch=`.
HEADER = "x-anthropic-billing-header: cc_version=2.1.116.d8c; cc_entrypoint=kvwatch-probe; cch={nonce};"
REQUEST_ID = "Request id: kvwatch-probe-{nonce}"
CHARS_PER_TOKEN = 3.6
FIRST_QUESTION = "kvwatch probe: reply with one word."
ASSISTANT_REPLY = "OK"
FOLLOW_UP = "kvwatch probe: the same prefix again; reply with one word."
_TOOLS = (
    ("probe_read", "Synthetic tool of the kvwatch cache probe: never called.", ("path", "offset")),
    ("probe_write", "Synthetic tool of the kvwatch cache probe: never called.", ("path", "content")),
    ("probe_search", "Synthetic tool of the kvwatch cache probe: never called.", ("pattern", "glob")),
)
_LINE = (
    "{n:05d} This is synthetic filler text from kvwatch's prefix-cache probe. It carries no user data; "
    "it is the same in every probe run, so that an engine that caches prefixes serves it from cache."
)


class EndpointError(ValueError):
    """A URL or --api that names no endpoint the probe can call."""


@dataclass(frozen=True)
class Endpoint:
    """Where the probe posts, and the API it speaks there; `models` lists the served models."""

    api: Api
    url: str
    models: str


def endpoint(url: str, api: Api | None = None) -> Endpoint:
    """The endpoint of an API base (`http://host:8000/v1`) or of a full path; `api` told from it if None."""
    split = urlsplit(url)
    if split.scheme not in ("http", "https") or not split.netloc:
        raise EndpointError(f"not an http:// or https:// URL: {url!r}")
    path = split.path.rstrip("/")
    told: Api | None = None
    if path.endswith(CHAT_PATH):
        told, path = "openai", path[: -len(CHAT_PATH)]
    elif path.endswith(MESSAGES_PATH):
        told, path = "anthropic", path[: -len(MESSAGES_PATH)]
    if api is not None and told is not None and api != told:
        raise EndpointError(f"--api {api} does not match the {told} endpoint {split.path}")
    chosen: Api = api or told or "openai"
    if not path.endswith("/v1"):
        path += "/v1"
    tail = CHAT_PATH if chosen == "openai" else MESSAGES_PATH
    base = urlunsplit((split.scheme, split.netloc, path, "", ""))
    return Endpoint(chosen, base + tail + (f"?{split.query}" if split.query else ""), base + "/models")


def header_line(nonce: str, form: NonceForm = "billing-header") -> str:
    """The per-request line of `form` with this request's nonce."""
    return (HEADER if form == "billing-header" else REQUEST_ID).format(nonce=nonce)


def tool_specs() -> list[tuple[str, str, dict[str, Any]]]:
    """The synthetic tools: name, description, JSON schema of the input."""
    specs = []
    for name, description, params in _TOOLS:
        schema = {
            "type": "object",
            "properties": {p: {"type": "string", "description": f"{p} (synthetic)"} for p in params},
            "required": list(params),
        }
        specs.append((name, description, schema))
    return specs


def system_text(prefix_tokens: int) -> str:
    """The synthetic system prompt, about `prefix_tokens` tokens together with the tools."""
    intro = (
        "You are answering a cache probe sent by kvwatch, a monitor of inference-engine prefix caching. "
        "The text below is synthetic filler of a fixed size: it measures whether a repeated prefix is "
        "served from the engine's cache. Reply with one word."
    )
    tools = sum(len(name) + len(text) + 120 for name, text, _ in tool_specs())
    wanted = max(int(prefix_tokens * CHARS_PER_TOKEN) - tools - len(intro), 0)
    lines: list[str] = []
    size = 0
    while size < wanted:
        line = _LINE.format(n=len(lines) + 1)
        lines.append(line)
        size += len(line) + 1
    return "\n".join([intro, *lines])


@dataclass(frozen=True)
class Conversation:
    """What every request of one probe conversation shares."""

    api: Api
    model: str
    prefix_tokens: int
    stream: bool = False
    nonce_form: NonceForm = "billing-header"


def body(conv: Conversation, nonce: str | None, follow_up: bool) -> dict[str, Any]:
    """The request body: the first request, or the follow-up that repeats it and adds one turn;
    `nonce` puts the per-request line (`conv.nonce_form`) first in the system prompt (None: no such line)."""
    text = system_text(conv.prefix_tokens)
    turns: list[dict[str, Any]] = [{"role": "user", "content": FIRST_QUESTION}]
    if follow_up:
        turns += [
            {"role": "assistant", "content": ASSISTANT_REPLY},
            {"role": "user", "content": FOLLOW_UP},
        ]
    made: dict[str, Any] = {"model": conv.model, "max_tokens": 1, "temperature": 0, "stream": conv.stream}
    if conv.api == "openai":
        system = text if nonce is None else header_line(nonce, conv.nonce_form) + "\n" + text
        made["messages"] = [{"role": "system", "content": system}, *turns]
        made["tools"] = [
            {"type": "function", "function": {"name": n, "description": d, "parameters": s}}
            for n, d, s in tool_specs()
        ]
        if conv.stream:
            made["stream_options"] = {"include_usage": True}
        return made
    blocks: list[dict[str, Any]] = []
    if nonce is not None:
        blocks.append({"type": "text", "text": header_line(nonce, conv.nonce_form)})
    # cache_control: Anthropic's own API caches only up to a marked block (other servers ignore it).
    blocks.append({"type": "text", "text": text, "cache_control": {"type": "ephemeral"}})
    made["system"] = blocks
    made["messages"] = turns
    made["tools"] = [{"name": n, "description": d, "input_schema": s} for n, d, s in tool_specs()]
    return made
