"""Per-request usage logs (JSON lines) from gateways and proxies -> UsageRecord events (#6).

Recognised without configuration, in this order:
* **new-api** log rows exported as JSON (`model/log.go` `Log`): `created_at` (epoch s), `type`
  (2 = consume; 5 = error, 1/3/4/6 top-up, manage, system, refund), `model_name`, `prompt_tokens`,
  `channel` (the channel id), `other` (an object or a JSON string) with `cache_tokens`,
  `cache_creation_tokens`, `request_path` and `claude` (true when the upstream spoke Claude Messages:
  then `prompt_tokens` is Anthropic `input_tokens`, excluding the cache, and prompt = prompt_tokens +
  cache_tokens + cache_creation_tokens).
* **LiteLLM** `LiteLLM_SpendLogs` rows: `startTime`, `call_type`, `model_group` (else `model`),
  `prompt_tokens` (includes cached), `metadata` (object or JSON string) with `status` ("failure" rows
  are errors) and `additional_usage_values` (else `usage_object`) carrying
  `prompt_tokens_details.cached_tokens` / `cache_read_input_tokens` / `cache_creation_input_tokens`.
* Any row with a **usage object** at the top level (`usage`) or a few levels down in a logged
  response/body (`response`, `body`, `response_body`, `message`, `data`, ...): OpenAI Chat
  (`prompt_tokens`, `prompt_tokens_details.cached_tokens`), OpenAI Responses (`input_tokens` with
  `input_tokens_details`), Anthropic (`input_tokens`, `cache_read_input_tokens`,
  `cache_creation_input_tokens`; prompt = all three). A second, upstream usage object (`upstream_response`,
  `upstream_usage`, ...) gives `upstream_prompt_tokens`, and then the prompt.
Everything else is mapped with `UsageMapping`. A row that is not a completed request (a new-api row of
another type, a LiteLLM failure, a row without usage or with a zero prompt) yields no event and is
counted in `not_requests` by reason. Prompt text, user names, keys, IPs and request ids are never read.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kvwatch.engines.usage.events import UsageSkipped
from kvwatch.engines.usage.fields import (
    BODY_KINDS,
    LITELLM_CALL_TYPES,
    FieldError,
    Tokens,
    as_object,
    bounded_entry,
    count,
    epoch,
    find_upstream,
    find_usage,
    first_value,
    path_get,
    read_usage,
)
from kvwatch.engines.usage.tables import KNOWN as TABLE_KEYS
from kvwatch.model import Event, LogLine, UsageRecord
from kvwatch.parsers.base import ParseError, ParseResult, ParserSettings
from kvwatch.parsers.clock import LineClock
from kvwatch.parsers.drift import Drift, key_shape

TIME_KEYS = ("time", "timestamp", "ts", "@timestamp", "created_at", "start_time", "startTime")
ENTRY_KEYS = ("request_path", "path", "endpoint", "route", "url", "uri")
MODEL_KEYS = ("model", "model_name")
STREAM_EVENTS = ("message_start", "content_block_start", "content_block_delta", "content_block_stop", "ping")
MAX_MODEL = 200  # characters of a model name kept


@dataclass(frozen=True)
class UsageMapping:
    """Dotted field paths (`a.b.c`; JSON strings on the way are decoded) for logs of any other shape.

    Token keys: `prompt` (all prompt tokens, cached included: OpenAI semantics), `input` (Anthropic
    `input_tokens`, cache excluded), `cached` (cached / cache-read tokens), `cache_creation`,
    `upstream_prompt` (the upstream engine's prompt_tokens, when a converting gateway logs both).
    When any token key is set, tokens come only from the mapping; prompt = `prompt`, else
    `upstream_prompt`, else input + cached + cache_creation. With both `prompt` and `input` mapped,
    `prompt` is also the upstream count that usage_double_counting compares `input` with.
    Other keys: `time`, `model`, `entry`, `client`, `channel` (each overrides what would be found by
    itself). `client` and `channel` become event values only through `clients` / `channels` (raw
    value -> name; unlisted raw values -> `other`). `entries` extends the allow-list of entry values;
    `tz` is the zone of zone-less times ("" = the source's).
    """

    time: str = ""
    prompt: str = ""
    input: str = ""
    cached: str = ""
    cache_creation: str = ""
    upstream_prompt: str = ""
    model: str = ""
    entry: str = ""
    client: str = ""
    channel: str = ""
    clients: Mapping[str, str] = field(default_factory=dict)
    channels: Mapping[str, str] = field(default_factory=dict)
    entries: tuple[str, ...] = ()
    tz: str = ""

    def maps_tokens(self) -> bool:
        """Whether the token counts come from the mapping."""
        return bool(self.prompt or self.input or self.cached or self.upstream_prompt)


@dataclass(frozen=True, slots=True)
class Reading:
    """What one row says before the mapping's overrides and the time fallback."""

    tokens: Tokens
    upstream: int | None = None
    time: Any = None
    model: Any = None
    entry: Any = None
    channel: Any = None


#: Every line the parser can make an event of holds one (a JSON row).
MARKERS: tuple[str, ...] = ("{",)


class UsageParser:
    """Per-source state: the mapping, the last event time, and the rows that were not requests."""

    markers = MARKERS

    def __init__(self, source: str, settings: ParserSettings, mapping: UsageMapping | None = None) -> None:
        self.source = source
        self.mapping = mapping or UsageMapping()
        self.not_requests: Counter[str] = Counter()
        self._tz = self.mapping.tz or settings.tz
        self._entries = frozenset(self.mapping.entries)
        self._last_time: float | None = None
        self._start = settings.start
        self._drift = Drift(source, "usage")  # rows whose token counts are under names of no known format

    def parse(self, line: LogLine) -> ParseResult:
        """One JSON row (possibly after a text prefix) -> at most one UsageRecord."""
        text = line.text.strip()
        start = text.find("{")
        if start < 0:
            return None
        try:
            obj = json.loads(text[start:])
        except (ValueError, RecursionError):
            return ParseError("usage: not a JSON object") if start == 0 else None
        if not isinstance(obj, dict):
            return ParseError("usage: not a JSON object") if start == 0 else None
        try:
            reading = self._read(obj)
            if isinstance(reading, str):
                self.not_requests[reading] += 1
                when = line.time if line.time is not None else self._last_time
                when = self._start if when is None else when
                skipped: list[Event] = [UsageSkipped(self.source, when, reading)]
                if reading == "no_usage":
                    skipped += self._unread_usage(obj, when)
                return skipped + self._unread_keys(obj, when)
            record = self._record(obj, reading, line.time)
        except FieldError as err:
            return ParseError(f"usage: {err}")
        if record is None:
            return ParseError("usage: no usable time (none in the row, no transport time, no earlier row)")
        self._last_time = record.time
        return [record, *self._unread_keys(obj, record.time)]

    def _unread_keys(self, obj: dict[str, Any], when: float) -> list[Event]:
        """The top-level keys of a gateway table's row that its format is not known to carry, counted
        (kvwatch.engines.usage.tables); none for a mapped source or a row of another shape."""
        if self.mapping.maps_tokens():
            return []
        table = _table_row(obj)
        known = None if table is None else TABLE_KEYS[table]
        if known is None or known.issuperset(obj):
            return []
        return self._drift.keys(when, f"{table} row", obj, known)

    def _unread_usage(self, obj: dict[str, Any], when: float) -> list[Event]:
        """A row without usage where one is looked for, but with token counts elsewhere: a usage of a
        shape no gateway or API kvwatch reads writes (drift), told with where its counts are."""
        if self.mapping.maps_tokens() or _table_row(obj) is not None:
            return []
        if find_usage(obj) is not None or find_upstream(obj) is not None:
            return []  # (a usage read, with a zero prompt)
        holders = token_holders(obj)
        return self._drift.seen(when, key_shape("usage row, tokens at", holders)) if holders else []

    def flush(self) -> list[Event]:
        """Usage rows are complete on their own: nothing is held back."""
        return []

    def _read(self, obj: dict[str, Any]) -> Reading | str:
        if self.mapping.maps_tokens():
            return self._mapped(obj)
        table = _table_row(obj)
        if table == "newapi":
            return _newapi(obj)
        if table == "litellm":
            return _litellm(obj)
        return _generic(obj)

    def _mapped(self, obj: dict[str, Any]) -> Reading | str:
        m = self.mapping

        def get(path: str, name: str) -> int | None:
            return count(path_get(obj, path), name) if path else None

        prompt, upstream = get(m.prompt, "prompt"), get(m.upstream_prompt, "upstream_prompt")
        uncached, cached = get(m.input, "input"), get(m.cached, "cached") or 0
        creation = get(m.cache_creation, "cache_creation") or 0
        if prompt is not None and uncached is not None and upstream is None:
            upstream = prompt  # both counts mapped: `prompt` is the engine's, `input` what the client got
        if prompt is None:
            prompt = upstream
        if prompt is None and uncached is not None:
            prompt = uncached + cached + creation
        if not prompt:
            return "no_usage"
        entry = first_value(obj, ENTRY_KEYS)
        when, model = first_value(obj, TIME_KEYS), first_value(obj, MODEL_KEYS)
        return Reading(Tokens(prompt, cached, creation, uncached), upstream, when, model, entry)

    def _record(self, obj: dict[str, Any], reading: Reading, transport: float | None) -> UsageRecord | None:
        m = self.mapping
        tokens = reading.tokens
        if tokens.cached + tokens.creation > tokens.prompt:
            raise FieldError(f"cached {tokens.cached} + created {tokens.creation} > prompt {tokens.prompt}")
        when = epoch(path_get(obj, m.time) if m.time else reading.time, self._tz)
        if when is None:
            when = transport if transport is not None else self._last_time
        if when is None:
            return None
        model = path_get(obj, m.model) if m.model else reading.model
        entry = path_get(obj, m.entry) if m.entry else reading.entry
        channel = path_get(obj, m.channel) if m.channel else reading.channel
        return UsageRecord(
            source=self.source,
            time=when,
            entry=bounded_entry(entry if isinstance(entry, str) else "", self._entries),
            model=(model.strip()[:MAX_MODEL] or "unknown") if isinstance(model, str) else "unknown",
            prompt_tokens=tokens.prompt,
            cached_tokens=tokens.cached,
            cache_creation_tokens=tokens.creation,
            input_tokens=tokens.input,
            client=_named(path_get(obj, m.client) if m.client else None, m.clients),
            channel=_named(channel, m.channels),
            upstream_prompt_tokens=reading.upstream,
        )


def _named(raw: Any, names: Mapping[str, str]) -> str:
    """A client/channel value only through its configured names; nothing without them."""
    if not names or raw is None or isinstance(raw, (dict, list)):
        return ""
    return names.get(str(raw), "other")


def _newapi(obj: dict[str, Any]) -> Reading | str:
    kind = count(obj.get("type"), "type")
    if kind != 2:
        return "error" if kind == 5 else "not_consumption"
    other = as_object(obj.get("other")) or {}
    prompt = count(obj.get("prompt_tokens"), "prompt_tokens") or 0
    cached = count(other.get("cache_tokens"), "other.cache_tokens") or 0
    creation = count(other.get("cache_creation_tokens"), "other.cache_creation_tokens") or 0
    if other.get("claude") is True:  # Claude semantics upstream: prompt_tokens is the uncached part
        tokens = Tokens(prompt + cached + creation, cached, creation, prompt)
    else:
        tokens = Tokens(prompt, cached, creation)
    if not tokens.prompt:
        return "no_usage"
    channel = obj.get("channel", obj.get("channel_id"))
    return Reading(
        tokens, None, obj.get("created_at"), obj.get("model_name"), other.get("request_path"), channel
    )


def _litellm(obj: dict[str, Any]) -> Reading | str:
    meta = as_object(obj.get("metadata")) or {}
    if meta.get("status", obj.get("status")) == "failure":
        return "error"
    extra = as_object(meta.get("additional_usage_values")) or as_object(meta.get("usage_object")) or {}
    details = as_object(extra.get("prompt_tokens_details")) or {}
    cached = count(details.get("cached_tokens"), "prompt_tokens_details.cached_tokens")
    if cached is None:
        cached = count(extra.get("cache_read_input_tokens"), "cache_read_input_tokens")
    creation = count(extra.get("cache_creation_input_tokens"), "cache_creation_input_tokens") or 0
    prompt = count(obj.get("prompt_tokens"), "prompt_tokens") or 0
    if not prompt:
        return "no_usage"
    call_type = obj.get("call_type")
    entry = LITELLM_CALL_TYPES.get(call_type, "other") if isinstance(call_type, str) else None
    model = obj.get("model_group") or obj.get("model")
    return Reading(Tokens(prompt, cached or 0, creation), None, obj.get("startTime"), model, entry)


def _generic(obj: dict[str, Any]) -> Reading | str:
    if obj.get("type") in STREAM_EVENTS:
        return "stream_event"
    found = find_usage(obj)
    upstream_usage = find_upstream(obj)
    if found is None and upstream_usage is None:
        failed = "error" in obj or _status(obj) >= 400
        return "error" if failed else "no_usage"
    usage, holder = found if found is not None else (upstream_usage, obj)
    tokens = read_usage(usage)  # type: ignore[arg-type]
    upstream = None
    if found is not None and upstream_usage is not None:
        upstream = read_usage(upstream_usage).prompt
        if tokens.input is not None:  # the engine's count is the truth; keep what the client was told
            tokens = Tokens(upstream, tokens.cached, tokens.creation, tokens.input)
    if not tokens.prompt:
        return "no_usage"
    entry = first_value(obj, ENTRY_KEYS)
    if not isinstance(entry, str):
        kind = holder.get("object", holder.get("type"))
        entry = BODY_KINDS.get(kind, "unknown") if isinstance(kind, str) else "unknown"
    model, when = first_value(obj, MODEL_KEYS), first_value(obj, TIME_KEYS)
    if when is None:
        when = holder.get("created")  # an OpenAI response body's own creation time
    return Reading(tokens, upstream, when, model, entry)


def _status(obj: dict[str, Any]) -> int:
    for key in ("status", "status_code", "statusCode"):
        value = obj.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def _table_row(obj: dict[str, Any]) -> str | None:
    """`newapi` for a new-api `logs` row, `litellm` for a `LiteLLM_SpendLogs` row, else None."""
    if "model_name" in obj and "type" in obj and "created_at" in obj and "prompt_tokens" in obj:
        return "newapi"
    if "call_type" in obj and "startTime" in obj and "prompt_tokens" in obj:
        return "litellm"
    return None


def kind_of(obj: dict[str, Any]) -> str | None:
    """Which known shape a decoded row has (`newapi`, `litellm`, `usage`), if any."""
    table = _table_row(obj)
    if table is not None:
        return table
    return "usage" if find_usage(obj) is not None or find_upstream(obj) is not None else None


def looks_like(sample: str) -> bool:
    """Whether a file's first lines are JSON rows of per-request usage (for `--engine auto`)."""
    lines = [text.strip() for text in sample.splitlines() if text.strip()][:50]
    rows = [text for text in lines if text.startswith("{")]
    if not rows or 2 * len(rows) < len(lines):
        return False
    for text in rows:
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and kind_of(obj) is not None:
            return True
    return False


#: new-api's `created_at` (epoch seconds), written with milliseconds so close rows keep their order.
CLOCK = LineClock(
    re.compile(r'"created_at":\s*(\d+(?:\.\d+)?)'),
    lambda m: float(m.group(1)),
    lambda when: f'"created_at":{when:.3f}',
    first_only=True,
)


def make_parser(source: str, settings: ParserSettings, options: Any) -> UsageParser:
    """The parser of one usage log (kvwatch.engines.base.ParserFactory); `options`: the source's
    UsageMapping, if configured."""
    return UsageParser(source, settings, options)


def token_holders(obj: dict[str, Any], path: str = "", depth: int = 0) -> list[str]:
    """Where in a row objects hold token counts (`*token*` keys with integer values), as key paths."""
    found: list[str] = []
    if any("token" in key.lower() and type(value) is int for key, value in obj.items()):
        found.append(path or "(top)")
    if depth < 4:
        for key, value in obj.items():
            if isinstance(value, dict):
                found += token_holders(value, f"{path}.{key}" if path else key, depth + 1)
    return found[:4]
