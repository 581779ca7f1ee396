"""The usage parser: rows of every known shape -> records; non-requests counted; bad rows never fatal."""

from __future__ import annotations

import json

import pytest
from corpora import SAMPLES, sample_logs

from kvwatch.engines import detect_engine, make_parser
from kvwatch.engines.usage.fields import bounded_entry
from kvwatch.engines.usage.parser import UsageMapping, UsageParser, looks_like
from kvwatch.model import LogLine, UsageRecord
from kvwatch.parsers.base import ParserSettings

T = 1787043600.0  # 2026-08-18T09:00:00Z


def parse(text: str, transport: float | None = None, parser: UsageParser | None = None) -> object:
    """Parse one line with a fresh parser (or the given one)."""
    parser = parser or UsageParser("gw", ParserSettings())
    return parser.parse(LogLine("gw", text, transport))


def rec(prompt: int, cached: int, **kw: object) -> list[UsageRecord]:
    """The one record a row should give (source gw, time T unless given)."""
    fields: dict[str, object] = {"source": "gw", "time": T, "entry": "unknown", "model": "unknown"}
    fields.update(kw)
    return [UsageRecord(prompt_tokens=prompt, cached_tokens=cached, **fields)]  # type: ignore[arg-type]


NEWAPI_OTHER = json.dumps(
    {"cache_tokens": 17920, "request_path": "/v1/messages", "admin_info": {"use_channel": ["3"]}}
)
ROWS = [
    # OpenAI Chat body logged under `response` by a proxy, path with a query string
    (
        '{"ts":"2026-08-18T09:00:00Z","path":"/v1/chat/completions?x=1","request_id":"r-9","response":'
        '{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"Qwen/Qwen3-32B","usage":'
        '{"prompt_tokens":1000,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":896}}}}',
        rec(1000, 896, entry="/v1/chat/completions", model="Qwen/Qwen3-32B"),
    ),
    # a vLLM response body as the whole row: entry from `object`, time from `created`
    (
        '{"id":"cmpl-2","object":"text_completion","created":1787043600,"model":"m","usage":'
        '{"prompt_tokens":64,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":48}}}',
        rec(64, 48, entry="/v1/completions", model="m"),
    ),
    # the body logged as a JSON string (`response_body`), epoch milliseconds
    (
        '{"time":1787043600000,"response_body":"{\\"object\\":\\"chat.completion\\",\\"model\\":\\"q\\",'
        '\\"usage\\":{\\"prompt_tokens\\":300,\\"prompt_tokens_details\\":{\\"cached_tokens\\":256}}}"}',
        rec(300, 256, entry="/v1/chat/completions", model="q"),
    ),
    # OpenAI Responses: input_tokens includes cached (input_tokens_details) -> not Anthropic semantics
    (
        '{"ts":1787043600,"endpoint":"/v1/responses","body":{"object":"response","model":"g","usage":'
        '{"input_tokens":5000,"input_tokens_details":{"cached_tokens":4096},"output_tokens":9}}}',
        rec(5000, 4096, entry="/v1/responses", model="g"),
    ),
    # Anthropic Messages: prompt = input + cache read + cache creation, RFC 3339 with an offset
    (
        '{"time":"2026-08-18T17:00:00.000+08:00","route":"/v1/messages","response":{"type":"message",'
        '"model":"claude-sonnet-4-5","usage":{"input_tokens":4,"cache_creation_input_tokens":1200,'
        '"cache_read_input_tokens":48000,"output_tokens":300}}}',
        rec(
            49204,
            48000,
            entry="/v1/messages",
            model="claude-sonnet-4-5",
            cache_creation_tokens=1200,
            input_tokens=4,
        ),
    ),
    # Anthropic answer + the upstream OpenAI usage: the engine's prompt count wins, input kept as told
    (
        '{"time":1787043600,"path":"/v1/messages","model":"DeepSeek-V4-Flash","usage":{"input_tokens":50000,'
        '"cache_read_input_tokens":17920,"cache_creation_input_tokens":0},"upstream_usage":'
        '{"prompt_tokens":50000,"prompt_tokens_details":{"cached_tokens":17920}}}',
        rec(
            50000,
            17920,
            entry="/v1/messages",
            model="DeepSeek-V4-Flash",
            input_tokens=50000,
            upstream_prompt_tokens=50000,
        ),
    ),
    # DeepSeek's own API reports prompt_cache_hit_tokens; zone-less time is UTC
    (
        '{"time":"2026-08-18 09:00:00","path":"/chat/completions","usage":{"prompt_tokens":900,'
        '"prompt_cache_hit_tokens":768,"prompt_cache_miss_tokens":132}}',
        rec(900, 768, entry="other"),
    ),
    # new-api consume row, `other` as a JSON string (request_path, cache_tokens)
    (
        json.dumps(
            {
                "id": 1,
                "user_id": 7,
                "created_at": 1787043600,
                "type": 2,
                "username": "u",
                "model_name": "DeepSeek-V4-Flash",
                "prompt_tokens": 50000,
                "completion_tokens": 300,
                "channel": 3,
                "ip": "10.0.0.1",
                "other": NEWAPI_OTHER,
            }
        ),
        rec(50000, 17920, entry="/v1/messages", model="DeepSeek-V4-Flash"),
    ),
    # new-api row with a Claude upstream (`other.claude`): prompt_tokens is the uncached part
    (
        '{"id":2,"created_at":1787043600,"type":2,"model_name":"claude-sonnet-4-5","prompt_tokens":12,'
        '"channel":5,"other":{"claude":true,"cache_tokens":40000,"cache_creation_tokens":800,'
        '"request_path":"/v1/messages"}}',
        rec(
            40812,
            40000,
            entry="/v1/messages",
            model="claude-sonnet-4-5",
            cache_creation_tokens=800,
            input_tokens=12,
        ),
    ),
    # LiteLLM_SpendLogs row: metadata as a JSON string, additional_usage_values, model_group preferred
    (
        '{"request_id":"r","call_type":"anthropic_messages","api_key":"h",'
        '"startTime":"2026-08-18 09:00:00.000",'
        '"model":"anthropic/claude-x","model_group":"claude-x","prompt_tokens":4000,"completion_tokens":9,'
        '"metadata":"{\\"status\\":\\"success\\",\\"additional_usage_values\\":{\\"cache_read_input_tokens\\":3000,'
        '\\"cache_creation_input_tokens\\":500}}"}',
        rec(4000, 3000, entry="/v1/messages", model="claude-x", cache_creation_tokens=500),
    ),
    # LiteLLM row with prompt_tokens_details and an unknown call_type -> entry other
    (
        '{"request_id":"r2","call_type":"pass_through_endpoint","startTime":"2026-08-18T09:00:00Z","model":"gpt",'
        '"prompt_tokens":100,"metadata":{"status":"success","additional_usage_values":'
        '{"prompt_tokens_details":{"cached_tokens":64}}}}',
        rec(100, 64, entry="other", model="gpt"),
    ),
    # a text prefix before the JSON object
    (
        'INFO usage {"time":1787043600,"path":"/v1/embeddings","model":"e","usage":{"prompt_tokens":12}}',
        rec(12, 0, entry="/v1/embeddings", model="e"),
    ),
]


@pytest.mark.parametrize(("text", "expected"), ROWS, ids=range(len(ROWS)))
def test_rows_of_every_shape(text: str, expected: list[UsageRecord]) -> None:
    """Each known row shape becomes exactly the expected record."""
    assert expected == parse(text)


NOT_REQUESTS = [
    ('{"id":3,"created_at":1787043600,"type":5,"model_name":"m","prompt_tokens":0,"other":""}', "error"),
    (
        '{"id":4,"created_at":1787043600,"type":1,"model_name":"","prompt_tokens":0,"other":""}',
        "not_consumption",
    ),
    (
        '{"id":5,"created_at":1787043600,"type":2,"model_name":"mj","prompt_tokens":0,"other":"{}"}',
        "no_usage",
    ),
    (
        '{"request_id":"r","call_type":"acompletion","startTime":"2026-08-18T09:00:00Z","model":"m",'
        '"prompt_tokens":0,"metadata":{"status":"failure"}}',
        "error",
    ),
    ('{"ts":1787043600,"msg":"request","path":"/v1/chat/completions","request_id":"x"}', "no_usage"),
    ('{"ts":1787043600,"status":503,"error":{"message":"upstream unavailable"}}', "error"),
    (
        '{"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":9}}}',
        "stream_event",
    ),
    ('{"ts":1787043600,"usage":{"prompt_tokens":0,"completion_tokens":0}}', "no_usage"),
]


@pytest.mark.parametrize(("text", "reason"), NOT_REQUESTS, ids=[r for _, r in NOT_REQUESTS])
def test_rows_that_are_not_requests_are_counted_apart(text: str, reason: str) -> None:
    """A recognised row that is no completed request gives a UsageSkipped event with its reason."""
    parser = UsageParser("gw", ParserSettings())
    assert [reason] == [e.reason for e in parse(text, parser=parser)]  # type: ignore[union-attr]
    assert {reason: 1} == dict(parser.not_requests)


BAD = [
    '{"usage":{"prompt_tokens":"abc"}}',
    '{"usage":{"prompt_tokens":true}}',
    '{"usage":{"prompt_tokens":1.5}}',
    '{"usage":{"prompt_tokens":NaN}}',
    '{"usage":{"prompt_tokens":-5}}',
    '{"usage":{"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":20}}}',
    '{"id":1,"created_at":1787043600,"type":2,"model_name":"m","prompt_tokens":100,"other":"{\\"cache_tokens\\":200}"}',
    '{"time":"2026-02-30 00:00:00","usage":{"prompt_tokens":10}}',
    '{"time":"yesterday","usage":{"prompt_tokens":10}}',
    '{"time":-1,"usage":{"prompt_tokens":10}}',
    '{"usage": {"prompt_tokens": 10',
    '{"usage":{"prompt_tokens":10}} {"usage":{"prompt_tokens":11}}',
]


@pytest.mark.parametrize("text", BAD, ids=range(len(BAD)))
def test_bad_rows_are_parse_errors_not_records(text: str) -> None:
    """Garbage numbers, negative or impossible counts, bad times, broken JSON: a ParseError, no record."""
    parser = UsageParser("gw", ParserSettings())
    outcome = parser.parse(LogLine("gw", text, T))
    assert "ParseError" == type(outcome).__name__
    assert {} == dict(parser.not_requests)


def test_plain_text_is_not_ours() -> None:
    """A line that is no JSON object (prose, a brace in prose, an array) is not a usage row."""
    lines = ("GET /health 200", "INFO started {pid} worker", '["not", "an", "object"]')
    assert [None, None, None] == [parse(text) for text in lines]


def test_time_falls_back_to_transport_then_previous_row() -> None:
    """Without a time in the row: the transport time, else the previous row's time, else an error."""
    parser = UsageParser("gw", ParserSettings())
    row = '{"usage":{"prompt_tokens":10}}'
    assert "ParseError" == type(parser.parse(LogLine("gw", row, None))).__name__
    assert rec(10, 0, time=T + 5) == parser.parse(LogLine("gw", row, T + 5))
    assert rec(10, 0, time=T + 5) == parser.parse(LogLine("gw", row, None))


def test_zone_less_times_use_the_configured_zone() -> None:
    """`2026-08-18 17:00:00` in Asia/Shanghai is 09:00 UTC."""
    parser = UsageParser("gw", ParserSettings(tz="Asia/Shanghai"))
    row = '{"time":"2026-08-18 17:00:00","usage":{"prompt_tokens":10}}'
    assert rec(10, 0) == parser.parse(LogLine("gw", row, None))


def test_no_prompt_text_user_or_request_id_reaches_the_event() -> None:
    """Only counts, the time, the bounded entry and the model leave the row."""
    row = (
        '{"time":1787043600,"path":"/v1/chat/completions","user":"alice@example.com","request_id":"req-77",'
        '"messages":[{"role":"user","content":"SECRET PROMPT"}],"model":"m","usage":{"prompt_tokens":10}}'
    )
    (record,) = parse(row)  # type: ignore[misc]
    text = repr(record)
    assert (False, False, False) == ("SECRET" in text, "alice" in text, "req-77" in text)


def test_mapping_reads_any_shape_by_dotted_paths() -> None:
    """Configured paths (through JSON strings too) give the record; channel only through its names."""
    mapping = UsageMapping(
        time="meta.at",
        prompt="tok.p",
        cached="tok.c",
        model="meta.m",
        entry="meta.kind",
        channel="meta.ch",
        channels={"3": "h200"},
        client="meta.app",
    )
    parser = UsageParser("gw", ParserSettings(), mapping)
    meta = {"at": 1787043600, "m": "x", "kind": "chat", "ch": 3, "app": "cc"}
    row = json.dumps({"meta": json.dumps(meta), "tok": {"p": 90, "c": 64}})
    expected = rec(90, 64, entry="chat", model="x", channel="h200")
    assert expected == parser.parse(LogLine("gw", row, None))


def test_mapping_with_anthropic_input_sums_the_prompt() -> None:
    """A mapped `input` (cache excluded) adds cached and created tokens to make the prompt."""
    mapping = UsageMapping(input="u.in", cached="u.read", cache_creation="u.new", entries=("/v2/agent",))
    parser = UsageParser("gw", ParserSettings(), mapping)
    row = '{"time":1787043600,"path":"/v2/agent","channel":9,"u":{"in":10,"read":900,"new":90}}'
    expected = rec(1000, 900, entry="/v2/agent", cache_creation_tokens=90, input_tokens=10)
    assert expected == parser.parse(LogLine("gw", row, None))


def test_mapped_channel_outside_its_names_is_other() -> None:
    """A raw channel value not in the configured names becomes `other`, never the raw value."""
    mapping = UsageMapping(channel="channel", channels={"3": "h200"})
    parser = UsageParser("gw", ParserSettings(), mapping)
    row = (
        '{"id":1,"created_at":1787043600,"type":2,"model_name":"m","prompt_tokens":5,"channel":44,"other":""}'
    )
    assert rec(5, 0, model="m", channel="other") == parser.parse(LogLine("gw", row, None))


ENTRIES = [
    ("/v1/chat/completions?stream=true", frozenset(), "/v1/chat/completions"),
    ("https://gw.example.com/v1/messages/", frozenset(), "/v1/messages"),
    ("/tenant/8812/v1/messages", frozenset(), "other"),
    ("", frozenset(), "unknown"),
    ("Chat", frozenset(), "chat"),
    ("/v2/agent", frozenset({"/v2/agent"}), "/v2/agent"),
    ("other", frozenset(), "other"),
]


@pytest.mark.parametrize(("raw", "extra", "expected"), ENTRIES)
def test_entry_values_are_bounded(raw: str, extra: frozenset[str], expected: str) -> None:
    """Standard paths and kinds stay; configured ones stay; anything else is `other`."""
    assert expected == bounded_entry(raw, extra)


def test_engine_detection_picks_usage_for_json_rows_only() -> None:
    """`--engine auto`: usage samples are usage; vLLM logs and JSON without usage are not."""
    heads = {p.name: p.read_text()[:65536] for p in sample_logs("usage-", rotated=False)}
    assert {name: "usage" for name in heads} == {name: detect_engine(text) for name, text in heads.items()}
    vllm = (SAMPLES / "vllm-v0.log").read_text()[:65536]
    other_json = '{"level":"info","msg":"started"}\n{"level":"info","msg":"ready"}\n'
    assert (False, False) == (looks_like(vllm), looks_like(other_json))


def test_make_parser_knows_usage() -> None:
    """The engine name `usage` gives a UsageParser."""
    assert "UsageParser" == type(make_parser("usage", "gw", ParserSettings())).__name__


def test_mapping_prompt_and_input_gives_the_upstream_count() -> None:
    """With both `prompt` and `input` mapped, `prompt` is also the upstream count for the detector."""
    parser = UsageParser("gw", ParserSettings(), UsageMapping(prompt="p", input="i", cached="c"))
    row = '{"time":1787043600,"route":"/v1/messages","p":50000,"i":50000,"c":17920}'
    expected = rec(50000, 17920, entry="/v1/messages", input_tokens=50000, upstream_prompt_tokens=50000)
    assert expected == parser.parse(LogLine("gw", row, None))


def test_make_parser_passes_the_configured_mapping() -> None:
    """The mapping from `[source.usage]` reaches the parser through make_parser."""
    from kvwatch.engines import make_parser
    from kvwatch.engines.usage.parser import UsageMapping

    parser = make_parser(
        "usage", "gw", ParserSettings(), UsageMapping(time="ts", prompt="p.all", cached="p.hit")
    )
    (record,) = parser.parse(LogLine("gw", '{"ts": 1787043600, "p": {"all": 900, "hit": 640}}'))  # type: ignore[misc]
    assert (900, 640, 1787043600.0) == (record.prompt_tokens, record.cached_tokens, record.time)
