"""The vLLM parser on literal lines of every version shape (the vLLM wheels' own strings)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from kvwatch.engines.vllm.events import VllmKvTransfer, VllmPrefixV0, VllmSpecDecoding, VllmStats
from kvwatch.engines.vllm.parser import VllmParser
from kvwatch.model import EngineFact, LogLine, ServerRestart
from kvwatch.parsers.base import ParseError, ParserSettings

SETTINGS = ParserSettings(year=2026, tz="UTC")


def ts(text: str) -> float:
    """Epoch seconds of a UTC ISO time."""
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def parse(*texts: str, settings: ParserSettings = SETTINGS) -> list[object]:
    """Parse lines in order with one parser; return each line's outcome."""
    parser = VllmParser("v", settings)
    return [parser.parse(LogLine("v", text)) for text in texts]


V1_026 = (
    "(APIServer pid=1) INFO 08-18 01:22:08 [loggers.py:310] Engine 000: Avg prompt throughput: "
    "3120.4 tokens/s, Avg generation throughput: 1012.6 tokens/s, Running: 9 reqs, Waiting: 0 reqs, "
    "GPU KV cache usage: 31.2%, Prefix cache hit rate: 86.9%, External prefix cache hit rate: 0.0%"
)


def test_v1_stats_line_with_engine_prefix() -> None:
    """A 0.26 stats line gives engine "0", ratios 0-1 and its own timestamp."""
    expected = [
        VllmStats(
            source="v",
            time=ts("2026-08-18T01:22:08"),
            engine="0",
            prompt_throughput=3120.4,
            generation_throughput=1012.6,
            running=9,
            waiting=0,
            kv_cache_usage=0.312,
            prefix_hit=0.869,
            external_hit=0.0,
        )
    ]
    assert expected == parse(V1_026)[0]


@pytest.mark.parametrize(
    ("line", "engine", "prefix", "external", "device", "preempt"),
    [
        # 0.8.0-0.8.2: no engine prefix, old bracketed header
        (
            "INFO 03-20 10:00:00 [loggers.py:80] Avg prompt throughput: 1.0 tokens/s, Avg generation "
            "throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, "
            "Prefix cache hit rate: 50.0%",
            "0",
            0.5,
            None,
            "GPU",
            0,
        ),
        # 0.11.0 with colour always on
        (
            "\x1b[1;36m(APIServer pid=1)\x1b[0;0m INFO 10-01 10:00:00 [loggers.py:127] Engine 001: Avg "
            "prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, "
            "Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 40.0%",
            "1",
            0.4,
            None,
            "GPU",
            0,
        ),
        # aggregated engines, Deferred and Preemptions, External
        (
            "(APIServer pid=1) INFO 10-01 10:00:00 [loggers.py:259] 4 Engines Aggregated: Avg prompt "
            "throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 3 reqs, Waiting: 2 "
            "reqs, Deferred: 1 reqs, Preemptions: 5, GPU KV cache usage: 1.0%, Prefix cache hit rate: 40.0%, "
            "External prefix cache hit rate: 12.5%",
            "all",
            0.4,
            0.125,
            "GPU",
            5,
        ),
        # 0.30+: device label; 0.31+: Prefix absent; 0.32+: KV fetch with its commas; MM
        (
            "(APIServer pid=1) INFO 11-02 09:00:00 [loggers.py:335] Engine 012: Avg prompt throughput: 0.0 "
            "tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, KV fetch: "
            "1 waiting to start, 2 in progress, 0 completed waiting, XPU KV cache usage: 0.0%, MM cache hit "
            "rate: 3.0%",
            "12",
            None,
            None,
            "XPU",
            0,
        ),
        # VLLM_LOGGING_PREFIX glued in front, DEBUG path-form file info
        (
            "myhost|DEBUG 11-02 09:00:00 [v1/metrics/loggers.py:310] Engine 000: Avg prompt throughput: 1.0 "
            "tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV "
            "cache usage: 1.0%, Prefix cache hit rate: 99.9%",
            "0",
            0.999,
            None,
            "GPU",
            0,
        ),
    ],
)
def test_v1_stats_shapes(  # noqa: PLR0917 - one parameter per table column
    line: str, engine: str, prefix: float | None, external: float | None, device: str, preempt: int
) -> None:
    """Optional fields are matched by label in every V1 shape."""
    (event,) = parse(line)[0]  # type: ignore[misc]
    assert (engine, prefix, external, device, preempt) == (
        event.engine,
        event.prefix_hit,
        event.external_hit,
        event.kv_device,
        event.preemptions,
    )


def test_v0_stats_and_separate_prefix_line() -> None:
    """V0: swap-space CPU usage is not the KV usage; its prefix line sets GPU hit, CPU stays apart."""
    stats, prefix = parse(
        "INFO 12-20 14:00:52 metrics.py:467] Avg prompt throughput: 10.0 tokens/s, Avg generation "
        "throughput: 5.0 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 1 reqs, GPU KV cache "
        "usage: 12.5%, CPU KV cache usage: 50.0%.",
        "INFO 12-20 14:00:52 metrics.py:483] Prefix cache hit rate: GPU: 61.25%, CPU: 7.00%",
    )
    assert isinstance(stats, list) and isinstance(prefix, list)
    assert (True, 0.125, 1, None) == (
        stats[0].v0,
        stats[0].kv_cache_usage,
        stats[0].waiting,
        stats[0].prefix_hit,
    )
    expected = VllmPrefixV0("v", ts("2026-12-20T14:00:52"), "0", 0.6125, 0.07)
    assert [expected] == prefix


def test_kv_and_spec_lines_follow_the_engine_above() -> None:
    """SpecDecoding and KV Transfer lines carry no engine: they belong to the last Engine line."""
    engine1 = V1_026.replace("Engine 000", "Engine 001")
    out = parse(
        V1_026,
        engine1,
        "(APIServer pid=1) INFO 08-18 01:22:08 [metrics.py:120] SpecDecoding metrics: Mean acceptance "
        "length: 2.10, Accepted throughput: 1.00 tokens/s, Drafted throughput: 2.00 tokens/s, Accepted: "
        "10 tokens, Drafted: 20 tokens, Per-position acceptance rate: 0.600, 0.400, Avg Draft acceptance "
        "rate: 50.0%",
        "(APIServer pid=1) INFO 08-18 01:22:08 [metrics.py:103] KV Transfer metrics: "
        "vllm:kv_offload_store_bytes=100, vllm:kv_offload_lookup_sync_delay_seconds_count=3",
    )
    spec, kv = out[2][0], out[3][0]  # type: ignore[index]
    assert VllmSpecDecoding("v", ts("2026-08-18T01:22:08"), "1", 10, 20) == spec
    assert isinstance(kv, VllmKvTransfer)
    assert ("1", 100, 0, 3) == (kv.engine, kv.store_bytes, kv.load_bytes, kv.lookups)


@pytest.mark.parametrize(
    "line",
    [
        V1_026.replace("86.9%", "nan%"),
        V1_026.replace("86.9%", "186.9%"),
        V1_026.replace("31.2%", "-1.0%"),
        V1_026.replace("3120.4 tokens/s", "1e400 tokens/s"),
        V1_026.replace("3120.4 tokens/s", "inf tokens/s"),
        V1_026.replace("Running: 9", "Running: -9"),
        "(APIServer pid=1) INFO 08-18 01:22:08 [metrics.py:103] KV Transfer metrics: "
        "vllm:kv_offload_store_bytes=-5",
        "(APIServer pid=1) INFO 08-18 01:22:08 [metrics.py:103] KV Transfer metrics: "
        "vllm:kv_offload_store_bytes=1e400",
        "(APIServer pid=1) INFO 08-18 01:22:08 [metrics.py:103] KV Transfer metrics: garbage",
        "(APIServer pid=1) INFO 02-30 01:22:08 [loggers.py:310] Engine 000: Avg prompt throughput: 1.0 "
        "tokens/s, Avg generation throughput: 1.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs",
    ],
)
def test_bad_numbers_are_parse_errors(line: str) -> None:
    """nan, inf, 1e400, negative and out-of-range values never become metrics."""
    assert isinstance(parse(line)[0], ParseError)


def test_startup_facts() -> None:
    """Version, connector (both spellings), config, the model served, excluded groups and capacity become
    facts."""
    lines = [
        "(APIServer pid=1) INFO 08-18 01:19:40 [api_server.py:1900] vLLM API server version 0.26.0",
        "(APIServer pid=1) INFO 08-18 01:19:41 [api_utils.py:273] non-default args: {'model': 'm', "
        "'kv_transfer_config': KVTransferConfig(kv_connector='OffloadingConnector', engine_id='e', "
        "kv_role='kv_both', kv_connector_extra_config={'cpu_bytes_to_use': 960000000000}, "
        "kv_connector_module_path=None), 'block_size': 256, 'speculative_config': {'method': 'mtp', "
        "'num_speculative_tokens': 7}}",
        "(EngineCore_DP1 pid=281) INFO 08-18 01:19:50 [factory.py:62] Creating v1 connector with name: "
        "OffloadingConnector and engine_id: 1b2c",
        "(EngineCore_DP1 pid=281) INFO 08-18 01:19:51 [scheduler.py:194] KV offloading: EAGLE/MTP draft "
        "attention groups [2] detected. The trailing chunk of these groups will be excluded from "
        "offloading due to volatility.",
        "(EngineCore_DP1 pid=281) INFO 08-18 01:19:55 [kv_cache_utils.py:1087] GPU KV cache size: "
        "1,591,312 tokens",
        "(APIServer pid=1) WARNING 08-18 01:19:56 [loggers.py:200] AsyncLLM created with "
        "api_server_count more than 1; disabling stats logging to avoid incomplete stats.",
    ]
    facts = [
        (e.key, e.value, e.engine)
        for out in parse(*lines)
        for e in (out if isinstance(out, list) else [])
        if isinstance(e, EngineFact)
    ]
    expected = [
        ("version", "0.26.0", "0"),
        ("connector", "OffloadingConnector", "0"),
        ("connector_config", "{'cpu_bytes_to_use': 960000000000}", "0"),
        ("block_size", "256", "0"),
        ("spec_method", "mtp", "0"),
        ("model", "m", "0"),
        ("prefix_cache_setting", "vLLM's default for this model", "0"),  # (the line does not name it)
        ("connector", "OffloadingConnector", "1"),
        ("offload_excluded_groups", "EAGLE/MTP [2]", "1"),
        ("kv_capacity_tokens", "1591312", "1"),
        ("stats_disabled", "api_server_count > 1", "0"),
    ]
    assert expected == facts


def test_banner_is_a_restart() -> None:
    """The server banner marks a (re)start."""
    (out,) = parse("INFO 12-20 14:00:00 api_server.py:500] vLLM API server version 0.6.6")
    assert isinstance(out, list) and isinstance(out[0], ServerRestart)


def test_multiline_records_and_tqdm() -> None:
    """`\\r`-ended continuation lines and lone-`\\r` tqdm bars do not hide a record."""
    out = parse(
        "Loading safetensors: 50%|#####     |\rLoading: 100%|##########|\r" + V1_026,
        V1_026.replace(" Engine 000:", " Engine 002:") + "\r",
    )
    engines = [o[0].engine for o in out]  # type: ignore[index]
    assert ["0", "2"] == engines


def test_year_rolls_over_at_new_year() -> None:
    """Without a transport time, December then January moves to the next year."""
    out = parse(V1_026.replace("08-18", "12-31"), V1_026.replace("08-18", "01-01"))
    times = [o[0].time for o in out]  # type: ignore[index]
    assert [ts("2026-12-31T01:22:08"), ts("2027-01-01T01:22:08")] == times


def test_transport_time_gives_the_year() -> None:
    """With a docker time the year is the one nearest it, even across New Year."""
    parser = VllmParser("v", ParserSettings(year=None, now_year=2030))
    event = parser.parse(LogLine("v", V1_026.replace("08-18", "12-31"), ts("2025-01-01T00:00:01")))
    assert isinstance(event, list)
    assert ts("2024-12-31T01:22:08") == event[0].time


def test_zone_is_applied() -> None:
    """`--tz` says what zone vLLM's year-less local time is in."""
    out = parse(V1_026, settings=ParserSettings(year=2026, tz="Asia/Shanghai"))
    assert ts("2026-08-17T17:22:08") == out[0][0].time  # type: ignore[index]


def test_unrelated_lines_are_not_recognised() -> None:
    """Access lines, request logs and other records yield nothing and are not errors."""
    out = parse(
        'INFO:     172.17.0.4:51541 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "(APIServer pid=1) INFO 08-18 01:22:08 [logger.py:63] Received request chatcmpl-1: params: x",
        "(APIServer pid=1) INFO 08-18 01:22:08 [gpu_model_runner.py:2000] Model loading took 1 GiB",
    )
    assert [None, None, None] == out


def test_json_formatter_records() -> None:
    """0.32+'s JSON log records: the message is parsed, asctime (year-less or full) gives the time."""
    message = V1_026.split("] ", 1)[1]
    out = parse(
        '{"asctime": "08-18 01:22:08", "levelname": "INFO", "name": "vllm.v1.metrics.loggers", '
        '"processName": "APIServer", "process": 1, "message": "' + message + '"}',
        '{"asctime": "2026-08-18 01:22:18,123", "levelname": "INFO", "message": "' + message + '"}',
        '{"not": "a vllm record", "throughput:": 1}',
    )
    assert [ts("2026-08-18T01:22:08"), ts("2026-08-18T01:22:18")] == [o[0].time for o in out[:2]]  # type: ignore[index]
    assert None is out[2]


V034_FAILURES = [
    "(EngineCore pid=1) WARNING 11-20 10:00:10 [offloading_connector.py:400] KV offload load job 7 failed; "
    "request cmpl-1 will not load from the offloaded cache again.",
    "(Worker pid=2) ERROR 11-20 10:00:25 [gpu_worker.py:300] KV offload CPU->GPU transfer failed for job 9",
    "(Worker pid=2) ERROR 11-20 10:00:26 [gpu_worker.py:300] KV offload GPU->CPU transfer failed for job 10",
    "(EngineCore pid=1) WARNING 11-20 10:00:30 [offloading_connector.py:300] KV offload store job 11 failed; "
    "dropping 4 chunk(s) from the CPU cache rather than publishing them.",
]


def test_v034_offload_failures_are_engine_neutral_failures() -> None:
    """vLLM 0.34's failed load jobs and CPU->GPU transfers are failed loads (offload_retrieve_failed's
    shortfalls); failed stores and GPU->CPU transfers are failures that lose no load."""
    from kvwatch.engines.vllm.parser import VllmParser
    from kvwatch.model import LogLine, OffloadFailure
    from kvwatch.parsers.base import ParserSettings

    parser = VllmParser("v", ParserSettings(year=2026))
    got = [e for line in V034_FAILURES for e in parser.parse(LogLine("v", line)) or []]
    want = [("load_job_failed", "cmpl-1", True), ("transfer_failed", "", True)]
    want += [("transfer_failed", "", False), ("store_job_failed", "", False)]
    assert want == [(e.kind, e.request, e.retrieve) for e in got if isinstance(e, OffloadFailure)]
