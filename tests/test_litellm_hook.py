"""kvwatch's LiteLLM callback: the record it writes is what the usage parser reads (cached tokens where
LiteLLM puts them) and nothing private; the header hook removes only Claude Code's billing line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvwatch.engines.usage import litellm_hook
from kvwatch.engines.usage.parser import UsageParser
from kvwatch.model import LogLine, UsageRecord
from kvwatch.parsers.base import ParserSettings

#: A `standard_logging_object` as LiteLLM 1.108.7 hands its loggers (trimmed; the fields kvwatch reads and
#: the private ones it must not write).
PAYLOAD = {
    "id": "chatcmpl-1",
    "call_type": "anthropic_messages",
    "status": "success",
    "startTime": 1780000000.25,
    "endTime": 1780000001.5,
    "model": "tiny",
    "model_group": "tiny",
    "prompt_tokens": 4200,
    "completion_tokens": 16,
    "total_tokens": 4216,
    "messages": [{"role": "user", "content": "private prompt"}],
    "response": {"content": "private answer"},
    "metadata": {
        "user_api_key_hash": "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b",
        "user_api_key_user_id": "alice",
        "requester_ip_address": "10.0.0.7",
        "usage_object": {
            "prompt_tokens": 4200,
            "completion_tokens": 16,
            "prompt_tokens_details": {"cached_tokens": 3968, "text_tokens": None},
        },
    },
}


def test_record_is_read_by_the_usage_parser_and_holds_nothing_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The appended line parses to one usage record with LiteLLM's cached tokens; nothing private."""
    monkeypatch.setenv("KVWATCH_USAGE_LOG", str(tmp_path / "usage.jsonl"))
    litellm_hook.append(PAYLOAD)
    litellm_hook.append({**PAYLOAD, "status": "failure"})
    litellm_hook.append(None)
    lines = (tmp_path / "usage.jsonl").read_text().splitlines()
    assert len(lines) == 2
    for secret in ("private", "alice", "10.0.0.7", "88dc28d0"):
        assert secret not in lines[0]
    parser = UsageParser("litellm", ParserSettings(tz="UTC"))
    ok = parser.parse(LogLine("litellm", lines[0]))
    assert isinstance(ok, list) and isinstance(ok[0], UsageRecord)
    record = ok[0]
    assert (record.time, record.entry, record.model, record.prompt_tokens, record.cached_tokens) == (
        1780000000.25,
        "/v1/messages",
        "tiny",
        4200,
        3968,
    )
    parser.parse(LogLine("litellm", lines[1]))
    assert parser.not_requests["error"] == 1


def test_strip_billing_header_removes_only_the_billing_line() -> None:
    """Anthropic system blocks and OpenAI system messages lose the billing line, and nothing else."""
    header = "x-anthropic-billing-header: cc_version=2.1.37.abc; cc_entrypoint=cli; cch=9f3a1;"
    data = {
        "system": [{"type": "text", "text": header}, {"type": "text", "text": "You are Claude Code."}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert litellm_hook.strip_billing(json.loads(json.dumps(data)))["system"] == [
        {"type": "text", "text": "You are Claude Code."}
    ]
    joined = {"system": f"{header}\nYou are Claude Code."}
    assert litellm_hook.strip_billing(joined)["system"] == "You are Claude Code."
    chat = {
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": header}, {"type": "text", "text": "S"}]}
        ]
    }
    assert litellm_hook.strip_billing(chat)["messages"][0]["content"] == [{"type": "text", "text": "S"}]
    plain = {"system": "You are Claude Code. x-anthropic-billing-header: stays in the middle"}
    assert litellm_hook.strip_billing(dict(plain)) == plain
