"""Reading fields out of logged JSON: dotted paths, token counts, times, bounded `entry` values, and
the three usage-object shapes (OpenAI Chat, OpenAI Responses, Anthropic Messages) and where rows keep them.

Everything here is a pure function of a decoded JSON value. A value that is present but cannot be
trusted (a word where a count belongs, a negative count, a date that does not exist) raises `FieldError`;
the parser turns that into a ParseError, so a row is either read right or counted, never half-read.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kvwatch.times import parse_rfc3339, zone

#: The standard API paths kept as `entry` values; anything else becomes `other` (config adds more).
STANDARD_ENTRIES = (
    "/v1/messages",
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/responses",
    "/v1/embeddings",
    "/v1/rerank",
    "/v1/audio/transcriptions",
    "/v1/audio/speech",
    "/v1/images/generations",
)
#: Kinds some logs give instead of a path, and what a row gets when nothing names its entry.
ENTRY_KINDS = ("messages", "chat", "completions", "responses", "embeddings", "unknown")
OTHER = "other"

#: LiteLLM `call_type` (its CallTypes enum names, sync and async) -> the API path it serves.
LITELLM_CALL_TYPES = {
    "completion": "/v1/chat/completions",
    "acompletion": "/v1/chat/completions",
    "text_completion": "/v1/completions",
    "atext_completion": "/v1/completions",
    "anthropic_messages": "/v1/messages",
    "responses": "/v1/responses",
    "aresponses": "/v1/responses",
    "embedding": "/v1/embeddings",
    "aembedding": "/v1/embeddings",
    "rerank": "/v1/rerank",
    "arerank": "/v1/rerank",
}
#: The `object`/`type` a response body declares -> the API path that returns it.
BODY_KINDS = {
    "chat.completion": "/v1/chat/completions",
    "chat.completion.chunk": "/v1/chat/completions",
    "text_completion": "/v1/completions",
    "response": "/v1/responses",
    "message": "/v1/messages",
}

_NAIVE = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?$")
_ZONED = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d(?:\.\d{1,9})?)\s*(Z|[+-]\d\d:?\d\d)$")
#: A JSON string field is decoded only up to this size (new-api's `other`, LiteLLM's `metadata`).
MAX_NESTED_JSON = 1 << 16


class FieldError(ValueError):
    """A field is present but its value cannot be trusted."""


def path_get(obj: Any, path: str) -> Any:
    """The value at a dotted path (`response.usage.prompt_tokens`), decoding JSON strings on the way."""
    value = obj
    for part in path.split("."):
        value = as_object(value)
        if value is None or part not in value:
            return None
        value = value[part]
    return value


def as_object(value: Any) -> dict[str, Any] | None:
    """A JSON object, or a string holding one (new-api's `other`, LiteLLM's `metadata`); else None."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value[:1] == "{" and len(value) <= MAX_NESTED_JSON:
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            return None
        return decoded if isinstance(decoded, dict) else None
    return None


def count(value: Any, name: str) -> int | None:
    """A token count: a non-negative integer (or integral float, or digit string); None when absent."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise FieldError(f"{name}: not a number ({value!r})")
    if isinstance(value, str):
        text = value.strip()
        if not text.isdigit():
            raise FieldError(f"{name}: not a token count ({value[:40]!r})")
        return int(text)
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and abs(value) < 1e15 and value == int(value):
        number = int(value)
    else:
        raise FieldError(f"{name}: not a token count ({str(value)[:40]})")
    if number < 0:
        raise FieldError(f"{name}: negative ({number})")
    return number


def epoch(value: Any, tz: str) -> float | None:
    """Event time from epoch seconds/ms/us/ns, RFC 3339, or a zone-less `2026-08-18 01:22:08` in `tz`."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise FieldError(f"time: not a time ({value!r})")
    if isinstance(value, str) and value.strip().replace(".", "", 1).isdigit():
        value = float(value.strip())
    if isinstance(value, (int, float)):
        return _from_number(float(value))
    if not isinstance(value, str):
        raise FieldError("time: not a time")
    text = value.strip()
    zoned = _ZONED.match(text)
    if zoned:
        date, clock, offset = zoned.groups()
        if offset != "Z" and ":" not in offset:
            offset = offset[:3] + ":" + offset[3:]
        stamp = parse_rfc3339(f"{date}T{clock}{offset}")
        if stamp is None:
            raise FieldError(f"time: no such date ({text[:40]})")
        return stamp
    naive = _NAIVE.match(text)
    if naive is None:
        raise FieldError(f"time: unreadable ({text[:40]})")
    year, month, day, hh, mm, ss = (int(g) for g in naive.groups()[:6])
    fraction = int((naive.group(7) or "0").ljust(9, "0")) / 1e9
    try:
        moment = datetime(year, month, day, hh, mm, ss, tzinfo=zone(tz))
    except ValueError as err:
        raise FieldError(f"time: no such date ({text[:40]})") from err
    return moment.timestamp() + fraction


def _from_number(number: float) -> float:
    if not math.isfinite(number) or number <= 0 or number >= 1e20:
        raise FieldError(f"time: not an epoch ({number})")
    # Seconds past 1e11 would be the year 5138: such a number is in ms, us or ns.
    for limit, scale in ((1e17, 1e9), (1e14, 1e6), (1e11, 1e3)):
        if number >= limit:
            return number / scale
    return number


def url_path(value: str) -> str:
    """The path of a URL or path: no scheme/host, no query, no trailing slash."""
    text = value.strip()
    if "://" in text:
        text = text.split("://", 1)[1]
        text = "/" + text.split("/", 1)[1] if "/" in text else "/"
    text = text.split("?", 1)[0].split("#", 1)[0]
    return text.rstrip("/") or "/"


def bounded_entry(raw: str, extra: frozenset[str] = frozenset()) -> str:
    """The `entry` value for a raw path or kind: itself when standard or configured, else `other`."""
    if not raw:
        return "unknown"
    if raw in extra:
        return raw
    value = url_path(raw) if "/" in raw else raw.strip().lower()
    if value in STANDARD_ENTRIES or value in ENTRY_KINDS or value in extra:
        return value
    return OTHER


# ---------------------------------------------------------------------------------------------
# Usage objects: the three shapes, and where a logged row keeps them
# ---------------------------------------------------------------------------------------------

#: Keys under which a proxy logs the response (or request/response pair) it relayed.
CONTAINERS = (
    "response",
    "body",
    "response_body",
    "responseBody",
    "resp",
    "message",
    "data",
    "result",
    "payload",
)
#: Keys under which a converting gateway logs what the upstream engine answered.
UPSTREAM = ("upstream_response", "upstream", "upstream_usage", "upstream_body", "upstream_response_body")
MAX_DEPTH = 3


@dataclass(frozen=True, slots=True)
class Tokens:
    """One usage object read: prompt includes cached tokens; `input` only for Anthropic semantics."""

    prompt: int
    cached: int
    creation: int = 0
    input: int | None = None


def read_usage(usage: dict[str, Any]) -> Tokens:
    """Read an OpenAI Chat, OpenAI Responses or Anthropic usage object (see the module docstring)."""
    creation = count(usage.get("cache_creation_input_tokens"), "cache_creation_input_tokens") or 0
    if "prompt_tokens" in usage:  # OpenAI Chat (and OpenAI-compatible servers): prompt includes cached
        details = as_object(usage.get("prompt_tokens_details")) or {}
        cached = count(details.get("cached_tokens"), "prompt_tokens_details.cached_tokens")
        if cached is None:  # DeepSeek's own API; LiteLLM's Anthropic passthrough
            cached = count(usage.get("prompt_cache_hit_tokens"), "prompt_cache_hit_tokens")
        if cached is None:
            cached = count(usage.get("cache_read_input_tokens"), "cache_read_input_tokens")
        return Tokens(count(usage.get("prompt_tokens"), "prompt_tokens") or 0, cached or 0, creation)
    if "input_tokens_details" in usage:  # OpenAI Responses: input_tokens includes cached
        details = as_object(usage.get("input_tokens_details")) or {}
        cached = count(details.get("cached_tokens"), "input_tokens_details.cached_tokens") or 0
        return Tokens(count(usage.get("input_tokens"), "input_tokens") or 0, cached)
    # Anthropic Messages: input_tokens excludes what was read from or written to the cache.
    uncached = count(usage.get("input_tokens"), "input_tokens") or 0
    read = count(usage.get("cache_read_input_tokens"), "cache_read_input_tokens") or 0
    return Tokens(uncached + read + creation, read, creation, uncached)


def is_usage(value: Any) -> bool:
    """Whether a JSON object is a usage object of one of the three shapes."""
    return isinstance(value, dict) and (
        "prompt_tokens" in value
        or "input_tokens" in value
        or "cache_read_input_tokens" in value
        or "cache_creation_input_tokens" in value
    )


def find_usage(obj: dict[str, Any], depth: int = 0) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The first usage object in a row and the object holding it: `usage` at the top, else in a container."""
    usage = as_object(obj.get("usage"))
    if is_usage(usage):
        return usage, obj  # type: ignore[return-value]
    if depth < MAX_DEPTH:
        for key in CONTAINERS:
            inner = as_object(obj.get(key))
            found = find_usage(inner, depth + 1) if inner is not None else None
            if found is not None:
                return found
    return None


def find_upstream(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A usage object the gateway logged from its upstream, beside the one it answered with."""
    for key in UPSTREAM:
        inner = as_object(obj.get(key))
        if inner is None:
            continue
        if is_usage(inner):
            return inner
        found = find_usage(inner, 1)
        if found is not None:
            return found[0]
    return None


def first_value(obj: dict[str, Any], keys: tuple[str, ...], depth: int = 0) -> Any:
    """The first non-empty value under one of `keys`, at the top or in a container (breadth first)."""
    for key in keys:
        value = obj.get(key)
        if value not in (None, ""):
            return value
    if depth < MAX_DEPTH:
        for key in CONTAINERS:
            inner = as_object(obj.get(key))
            value = first_value(inner, keys, depth + 1) if inner is not None else None
            if value is not None:
                return value
    return None
