"""A LiteLLM logging callback that appends one usage record per finished request to a JSON-lines file,
which a kvwatch `file` source with `engine = "usage"` follows (LiteLLM's proxy without a database).

It needs nothing of kvwatch, only LiteLLM itself, so it can be copied beside LiteLLM's config instead of
installing kvwatch into LiteLLM's environment. One line in LiteLLM's `config.yaml` turns it on:

    litellm_settings:
      callbacks: litellm_hook.usage_log        # this file copied beside config.yaml
      # or, with kvwatch installed in LiteLLM's environment:
      # callbacks: kvwatch.engines.usage.litellm_hook.usage_log

The file is `$KVWATCH_USAGE_LOG` (default `kvwatch-usage.jsonl` in LiteLLM's working directory). Each
record is a subset of LiteLLM's `standard_logging_object` (the payload every LiteLLM logger gets): the
fields of a `LiteLLM_SpendLogs` row that kvwatch's usage parser reads (`startTime`, `call_type`,
`model_group`, `prompt_tokens`, `metadata.usage_object` with the cached tokens, `status`), and nothing
else: no prompt or response text, no keys, users or addresses. The file is opened for each record in
append mode, so logrotate's rename (or `copytruncate`) needs no signal.

`strip_billing_header` is a second, optional callback: a pre-call hook that removes Claude Code's
per-request `x-anthropic-billing-header: …` system block before LiteLLM forwards the request, so that
the engine's prefix cache sees the same prefix every turn (docs/gateways.md).
"""

from __future__ import annotations

import importlib
import json
import os
import re
from typing import Any


def _logger_base() -> Any:
    """LiteLLM's CustomLogger (the proxy calls the async hooks only of its instances); `object` outside
    LiteLLM (kvwatch's own tests read the record functions)."""
    try:
        return importlib.import_module("litellm.integrations.custom_logger").CustomLogger
    except ImportError:
        return object


_Base: Any = _logger_base()

#: The `standard_logging_object` keys copied into a record.
KEYS = (
    "startTime",
    "endTime",
    "call_type",
    "model_group",
    "model",
    "status",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cache_hit",
)
#: The usage keys copied from `metadata.usage_object` (token counts only).
USAGE_KEYS = (
    "prompt_tokens",
    "completion_tokens",
    "prompt_tokens_details",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
#: Claude Code's billing line: a system block that starts with it changes every request.
BILLING = re.compile(r"^\s*x-anthropic-billing-header:[^\n]*\n?")


def record(payload: dict[str, Any]) -> dict[str, Any]:
    """The usage record of one `standard_logging_object` (see the module docstring)."""
    out = {key: payload[key] for key in KEYS if key in payload}
    meta = payload.get("metadata")
    usage = meta.get("usage_object") if isinstance(meta, dict) else None
    if isinstance(usage, dict):
        kept = {key: usage[key] for key in USAGE_KEYS if key in usage}
        details = kept.get("prompt_tokens_details")
        if isinstance(details, dict):  # (counts only: drop anything else a provider put there)
            kept["prompt_tokens_details"] = {k: v for k, v in details.items() if isinstance(v, int)}
        out["metadata"] = {"usage_object": kept}
    return out


def usage_path() -> str:
    """Where records go: `$KVWATCH_USAGE_LOG`, else `kvwatch-usage.jsonl` in the working directory."""
    return os.environ.get("KVWATCH_USAGE_LOG") or "kvwatch-usage.jsonl"


def append(payload: Any) -> None:
    """Append the record of one payload (none when LiteLLM gave none)."""
    if not isinstance(payload, dict):
        return
    line = json.dumps(record(payload), separators=(",", ":"), default=str) + "\n"
    fd = os.open(usage_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
    try:
        os.write(fd, line.encode("utf-8"))  # one write: records of concurrent workers never interleave
    finally:
        os.close(fd)


def strip_billing(data: dict[str, Any]) -> dict[str, Any]:
    """The request with Claude Code's billing line removed from its system prompt (Anthropic's `system`
    string or blocks; an OpenAI request's system messages); everything else unchanged."""
    system = data.get("system")
    if isinstance(system, str):
        data["system"] = BILLING.sub("", system, count=1)
    elif isinstance(system, list):
        data["system"] = [b for b in (_strip_block(b) for b in system) if b is not None]
    messages = data.get("messages")
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, dict) and message.get("role") == "system":
                content = message.get("content")
                if isinstance(content, str):
                    message["content"] = BILLING.sub("", content, count=1)
                elif isinstance(content, list):
                    message["content"] = [b for b in (_strip_block(b) for b in content) if b is not None]
    return data


def _strip_block(block: Any) -> Any:
    """A text block without the billing line; None when nothing else was in it."""
    if not isinstance(block, dict) or not isinstance(block.get("text"), str):
        return block
    text = BILLING.sub("", block["text"], count=1)
    if not text.strip() and text != block["text"]:
        return None
    return {**block, "text": text}


class UsageLog(_Base):  # type: ignore[misc]
    """Appends a usage record for each request LiteLLM logs, success or failure."""

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        append(kwargs.get("standard_logging_object"))

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        append(kwargs.get("standard_logging_object"))

    def log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        append(kwargs.get("standard_logging_object"))

    def log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        append(kwargs.get("standard_logging_object"))


class StripBillingHeader(_Base):  # type: ignore[misc]
    """A pre-call hook removing Claude Code's billing line from the system prompt."""

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> Any:
        return strip_billing(data)


usage_log = UsageLog()
strip_billing_header = StripBillingHeader()
