"""What a response says about its prompt: prompt and cached token counts, from either API (pure).

OpenAI API: `usage.prompt_tokens` and `usage.prompt_tokens_details.cached_tokens` (vLLM only with
`--enable-prompt-tokens-details`, SGLang only with `--enable-cache-report`, llama.cpp always, plus its
`timings.cache_n`); SGLang's native `meta_info.cached_tokens`. Anthropic API: `usage.input_tokens` (the
uncached part) + `cache_read_input_tokens` + `cache_creation_input_tokens`. A streamed response's usage
comes in its last OpenAI chunk, or in Anthropic's `message_start` (updated by `message_delta`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kvwatch.probe.conversation import Api


class ResponseError(ValueError):
    """A response body that is not the API's JSON (or SSE) shape."""


@dataclass(frozen=True)
class Usage:
    """One response's counts; `cached` None when the response carries no cached count at all."""

    prompt: int | None
    cached: int | None
    field: str = ""  # where `cached` was read, as the API spells it
    llamacpp: bool = False  # the response has llama.cpp's `timings` (its counts are token-exact)


def _int(value: Any) -> int | None:
    """A token count, or None for anything that is not a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _get(data: Any, *path: str) -> Any:
    """data[path[0]][path[1]]..., None where a step is missing or not an object."""
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def openai_usage(body: Mapping[str, Any]) -> Usage:
    """The counts of an OpenAI-style completion (or the merged chunks of a stream)."""
    prompt = _int(_get(body, "usage", "prompt_tokens"))
    timings = body.get("timings")
    llamacpp = isinstance(timings, Mapping)
    for path in (
        ("usage", "prompt_tokens_details", "cached_tokens"),
        ("timings", "cache_n"),
        ("meta_info", "cached_tokens"),
    ):
        cached = _int(_get(body, *path))
        if cached is not None:
            if prompt is None and path[0] == "meta_info":
                prompt = _int(_get(body, "meta_info", "prompt_tokens"))
            return Usage(prompt, cached, ".".join(path), llamacpp)
    return Usage(prompt, None, "", llamacpp)


def anthropic_usage(body: Mapping[str, Any]) -> Usage:
    """The counts of an Anthropic-style message; the prompt is input + cache read + cache creation."""
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        return Usage(None, None)
    uncached = _int(usage.get("input_tokens"))
    cached = _int(usage.get("cache_read_input_tokens"))
    created = _int(usage.get("cache_creation_input_tokens")) or 0
    prompt = None if uncached is None else uncached + (cached or 0) + created
    return Usage(prompt, cached, "usage.cache_read_input_tokens" if cached is not None else "")


def parse_body(api: Api, text: str) -> Usage:
    """The counts of a whole (not streamed) JSON response."""
    try:
        data = json.loads(text)
    except ValueError:
        raise ResponseError("the response is not JSON") from None
    if not isinstance(data, Mapping):
        raise ResponseError("the response is not a JSON object")
    return openai_usage(data) if api == "openai" else anthropic_usage(data)


def parse_stream(api: Api, lines: Iterable[str]) -> Usage:
    """The counts of a streamed response (server-sent events, `data: {...}` lines)."""
    merged: dict[str, Any] = {}
    events = 0
    for line in lines:
        if not line.startswith("data:"):
            continue
        payload = line[len("data:") :].strip()
        if payload == "[DONE]":
            continue
        try:
            event = json.loads(payload)
        except ValueError:
            raise ResponseError("a streamed event is not JSON") from None
        if not isinstance(event, Mapping):
            continue
        events += 1
        if api == "openai":
            for key in ("usage", "timings", "meta_info"):
                if isinstance(event.get(key), Mapping):
                    merged[key] = event[key]
        elif event.get("type") == "message_start" and isinstance(_get(event, "message", "usage"), Mapping):
            merged["usage"] = dict(event["message"]["usage"])
        elif event.get("type") == "message_delta" and isinstance(event.get("usage"), Mapping):
            merged.setdefault("usage", {}).update(
                {k: v for k, v in event["usage"].items() if v is not None and k != "output_tokens"}
            )
    if events == 0:
        raise ResponseError("the stream held no data events")
    return openai_usage(merged) if api == "openai" else anthropic_usage(merged)
