"""The LM Studio engine: lines from public pastes (framing) and mlx-engine's format strings -> records.

Sources (samples/README.lmstudio.md): LM Studio 0.3.15 (lmstudio-bug-tracker#597), 0.3.18 (#778), 0.3.31
(#1143), 0.4.5 (#2419), 0.4.12 (#1826), the 2025-09-23 paste in ml-explore/mlx-lm#480; mlx-engine's
cache_wrapper.py, batched_vision/prompt_cache/coordinator.py and cache_store.py.
"""

# Lines from the pastes and format strings are kept whole, however long.
# ruff: noqa: E501

from __future__ import annotations

import json
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest
from contract_helpers import check_contract_rows, check_promtool_clean
from corpora import SAMPLES

from kvwatch.cli import main
from kvwatch.engines import detect_engine, make_parser, markers_of
from kvwatch.engines.lmstudio.events import (
    LmstudioCacheEvent,
    LmstudioCompletion,
    LmstudioDiskUsage,
    LmstudioRequest,
)
from kvwatch.engines.lmstudio.parser import MAX_MODELS
from kvwatch.model import EngineFact, Event, LogLine
from kvwatch.parsers.base import ParseError, ParseResult, ParserSettings

# LM Studio 0.3.31, 2025-11-09 (lmstudio-bug-tracker#1143): two-line records.
PASTE_0_3_31 = [
    "2025-11-09 12:35:14  [INFO]",
    " [qwen/qwen2.5-coder-14b] Running chat completion on conversation with 6 messages.",
    "2025-11-09 12:35:14 [DEBUG]",
    " [Client=OM2fYNy+4oht56F7WXGAZ2Tq] Client created.",
    "2025-11-09 12:35:14 [DEBUG]",
    " [cache_wrapper][INFO]: Trimmed 2723 tokens from the prompt cache",
    "2025-11-09 12:35:14  [INFO]",
    " [qwen/qwen2.5-coder-14b] Prompt processing progress: 0.0%",
]
# LM Studio 0.3.18, 2025-07-19 (lmstudio-bug-tracker#778): one-line records, continuation lines.
PASTE_0_3_18 = [
    "[2025-07-19 20:33:33][DEBUG] Received request: POST to /v1/chat/completions with body { <REDACTED>",
    "[2025-07-19 20:33:33][INFO][LM STUDIO SERVER] Running chat completion on conversation with 9 messages.",
    "[2025-07-19 20:33:33][DEBUG] Sampling params:\trepeat_last_n = 64, repeat_penalty = 1.100, frequency_penalty = 0.000, presence_penalty = 0.000",
    "\tdry_multiplier = 0.000, dry_base = 1.750, dry_allowed_length = 2, dry_penalty_last_n = -1",
    "[2025-07-19 20:33:33][DEBUG] Looking for non-prefix contiguous prompt sequences of size >= 256 to reuse from cache",
    "Cache reuse summary: 939/939 of prompt (100%), 939 prefix, 0 non-prefix",
    "Total prompt tokens: 939",
    "Prompt tokens to decode: 1",
]
# mlx-engine cache_wrapper.py:254 (ef77245) under 0.4.x framing.
USING = [
    "2026-05-15 14:02:11 [DEBUG]",
    " [cache_wrapper][INFO]: Prompt cache: using 11872/12500 tokens from cache",
]
# The 2025-09-23 paste (ml-explore/mlx-lm#480).
NOT_TRIMMABLE = [
    "2025-09-23 01:57:07 [DEBUG]",
    " [cache_wrapper][WARNING]: Tried to trim '71' tokens from the prompt cache, but could not: Cache is not trimmable. Clearing the cache instead.",
]
# coordinator.py:104 and cache_store.py:529 (e2f0e89), figures of lmstudio-bug-tracker#2419.
VISION = [
    "2026-09-19 10:04:00 [DEBUG]",
    " [coordinator][INFO]: Prompt cache restore: cached_tokens=17408 uncached_tokens=24 lifetime_efficiency=62.41%",
    "2026-09-19 10:04:02 [DEBUG]",
    " [cache_store][INFO]: VLM prompt cache disk usage: used_mib=7244.8 cap_mib=166720.0 records=232 lifetime=model_load",
]


def run(lines: list[str], tz: str = "UTC") -> tuple[list[Event], list[ParseResult]]:
    """Feed lines as the pipeline does (the engine's markers, then parse)."""
    parser = make_parser("lmstudio", "src", ParserSettings(year=2026, tz=tz))
    markers = markers_of("lmstudio") or ()
    events: list[Event] = []
    results: list[ParseResult] = []
    for text in lines:
        result = parser.parse(LogLine("src", text)) if any(m in text for m in markers) else None
        results.append(result)
        if isinstance(result, list):
            events += result
    return events + parser.flush(), results


def of(kind: type, lines: list[str]) -> list[object]:
    return [e for e in run(lines)[0] if isinstance(e, kind)]


def test_two_line_records_take_the_headers_time_and_the_models_label() -> None:
    """0.3.31: the trim is counted at its header's time; the completion names its model."""
    results = run(PASTE_0_3_31)[1]
    assert [LmstudioCompletion("src", 1762691714.0, "qwen/qwen2.5-coder-14b")] == of(
        LmstudioCompletion, PASTE_0_3_31
    )
    assert [LmstudioCacheEvent("src", 1762691714.0, "trim", tokens=2723)] == of(
        LmstudioCacheEvent, PASTE_0_3_31
    )
    # (the message lines of the client and the progress hold no marker: the pipeline never hands them over)
    assert [False, False, False, True, False, False, False, True] == [r is None for r in results]
    assert all(isinstance(r, list) for r in results if r is not None)


def test_prompt_cache_using_is_a_request_record() -> None:
    """`Prompt cache: using N/M tokens from cache`: M prompt tokens, N of them cached."""
    [record] = of(LmstudioRequest, PASTE_0_3_31[:2] + USING)
    assert isinstance(record, LmstudioRequest)
    assert (12500, 11872, "mlx", "qwen/qwen2.5-coder-14b", 1778853731.0) == (
        record.prompt_tokens, record.cached_tokens, record.runtime, record.model, record.time,
    )  # fmt: skip


def test_one_line_records_and_the_llama_cpp_runtimes_continuation_lines() -> None:
    """0.3.18: `Cache reuse summary` after its DEBUG record is one record; `[LM STUDIO SERVER]` is no model;
    a prompt reused whole (`939/939`, then `Prompt tokens to decode: 1`) has 938 cached tokens: its last
    token is decoded again for its logits."""
    [record] = of(LmstudioRequest, PASTE_0_3_18)
    assert isinstance(record, LmstudioRequest)
    assert (939, 938, "llama.cpp", "", 1752957213.0) == (
        record.prompt_tokens, record.cached_tokens, record.runtime, record.model, record.time,
    )  # fmt: skip
    results = run(PASTE_0_3_18)[1]
    assert all(isinstance(r, list) for r in results if r is not None)


# qwen-code#153 (2025-07-30): the summary and the totals in two two-line records of their own.
SUMMARY_TWO_RECORDS = [
    "2025-07-30 23:37:35 [DEBUG]",
    " Cache reuse summary: 3975/7975 of prompt (49.8433%), 3975 prefix, 0 non-prefix",
    "2025-07-30 23:37:35 [DEBUG]",
    " Total prompt tokens: 7975",
    "Prompt tokens to decode: 4000",
]
# ml-explore/mlx-lm#480's description (2025-09-18), its GGUF half: no summary (tests/wild).
NO_SUMMARY = [
    "2025-09-18 07:08:38 【DEBUG】",
    "Total prompt tokens: 7145",
    "Prompt tokens to decode: 21",
]


def test_the_summary_makes_the_record_and_its_totals_in_the_next_record_add_none() -> None:
    """A `Cache reuse summary` followed, in the next record, by its `Total prompt tokens` and `Prompt tokens
    to decode` is one request: 3975 of 7975 cached."""
    [record] = of(LmstudioRequest, SUMMARY_TWO_RECORDS)
    assert isinstance(record, LmstudioRequest)
    assert (7975, 3975, "llama.cpp") == (record.prompt_tokens, record.cached_tokens, record.runtime)


@pytest.mark.parametrize(("total", "decode", "cached"), [(7145, 21, 7124), (939, 1, 938), (939, 939, 0)])
def test_totals_without_a_summary_are_a_record_of_total_minus_to_decode(
    total: int, decode: int, cached: int
) -> None:
    """Without a `Cache reuse summary`, `Total prompt tokens: N` then `Prompt tokens to decode: M` is a
    request of N tokens with N - M cached (a whole-prompt reuse decodes its last token again: 938 of 939),
    and the lines alone name LM Studio."""
    lines = [NO_SUMMARY[0], f"Total prompt tokens: {total}", f"Prompt tokens to decode: {decode}"]
    [record] = of(LmstudioRequest, lines)
    assert isinstance(record, LmstudioRequest)
    assert (total, cached, "llama.cpp", 1758179318.0) == (
        record.prompt_tokens, record.cached_tokens, record.runtime, record.time,
    )  # fmt: skip
    assert detect_engine("\n".join(NO_SUMMARY) + "\n") == "lmstudio"


def test_more_to_decode_than_the_prompt_is_an_error() -> None:
    """`Prompt tokens to decode` above `Total prompt tokens` is a parse error, not a record."""
    events, results = run([NO_SUMMARY[0], "Total prompt tokens: 10", "Prompt tokens to decode: 11"])
    assert not [e for e in events if isinstance(e, LmstudioRequest)]
    assert isinstance(results[-1], ParseError)


def test_vision_restore_and_disk_usage() -> None:
    """uncached = prompt - 1 - cached; lifetime efficiency as a 0-1 ratio; disk MiB as bytes."""
    [record] = of(LmstudioRequest, VISION)
    assert isinstance(record, LmstudioRequest)
    assert (17433, 17408, "mlx-vision", 0.6241) == (
        record.prompt_tokens, record.cached_tokens, record.runtime, record.lifetime_efficiency,
    )  # fmt: skip
    [disk] = of(LmstudioDiskUsage, VISION)
    assert LmstudioDiskUsage("src", 1789812242.0, 7244.8 * 2**20, 166720.0 * 2**20, 232) == disk


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (NOT_TRIMMABLE[1][1:], "not_trimmable"),
        (
            "[cache_wrapper][ERROR]: Tokens trimmed from cache (12) is less than expected (40). Clearing the cache.",
            "short_trim",
        ),
        (
            "[CacheWrapper][WARN] Could not determine the number of tokens in the cache, clearing the cache.",
            "unknown_length",
        ),
        (
            "[cache_wrapper][WARNING]: Could not determine the number of tokens in the live cache. Resetting it.",
            "unknown_length",
        ),
        (
            "[cache_wrapper][WARNING]: The live cache is longer than the tracked token history. Resetting it.",
            "inconsistent",
        ),
        (
            "[cache_wrapper][INFO]: Clearing current prompt cache and adding draft model to the cache",
            "draft_model",
        ),
    ],
)
def test_cache_clears_are_named(message: str, reason: str) -> None:
    """Every message that drops mlx-engine's whole cache is one clear with its reason (old and new loggers)."""
    [event] = of(LmstudioCacheEvent, ["2025-09-23 01:57:07 [DEBUG]", " " + message])
    assert LmstudioCacheEvent("src", 1758592627.0, "clear", reason=reason) == event


def test_local_time_in_the_configured_zone() -> None:
    """Headers carry local time without a zone: the parser reads them in `tz`."""
    [record] = [e for e in run(USING, tz="Europe/Berlin")[0] if isinstance(e, LmstudioRequest)]
    assert 1778853731.0 - 7200 == record.time


def test_utc_stamps_read_from_the_days_midnight_agree_with_the_calendar() -> None:
    """In UTC a header's time is its day's midnight (remembered) plus the time of day: equal to the
    calendar's reading across days, months and leap days; a time no day has is refused either way."""
    stamps = [
        "2028-02-28 23:59:59", "2028-02-29 00:00:00", "2028-02-29 13:07:05", "2028-03-01 00:00:01",
        "2026-12-31 23:59:59", "2027-01-01 00:00:00", "2028-02-29 13:07:06",
    ]  # fmt: skip
    for tz in ("UTC", "Europe/Berlin"):
        zone = timezone.utc if tz == "UTC" else ZoneInfo(tz)
        for stamp in stamps:  # (twice: the second read from the day's remembered midnight)
            expected = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=zone).timestamp()
            events = run([f"{stamp} [DEBUG]", USING[1]] * 2, tz=tz)[0]
            assert [expected] * 2 == [e.time for e in events if isinstance(e, LmstudioRequest)], (tz, stamp)
        ordered = sorted(stamps)  # (one parser across days, months and a leap day)
        expected_all = [
            datetime.strptime(t, "%Y-%m-%d %H:%M:%S").replace(tzinfo=zone).timestamp() for t in ordered
        ]
        events = run([line for t in ordered for line in (f"{t} [DEBUG]", USING[1])], tz=tz)[0]
        assert expected_all == [e.time for e in events if isinstance(e, LmstudioRequest)], tz
        for bad in (
            "2028-02-29 24:00:00",
            "2028-02-29 23:60:00",
            "2028-02-29 23:59:60",
            "2027-02-29 00:00:00",
        ):
            events = run([f"{bad} [DEBUG]", USING[1]], tz=tz)[0]
            assert not [e for e in events if isinstance(e, LmstudioRequest)], (tz, bad)


def test_garbled_and_foreign_lines() -> None:
    """A torn cache line is a parse error; a line before any record is not recognised; a message line
    that lost its leading space in a paste (mlx-lm#480's full-width one) is still the record's message."""
    torn = [
        "2026-05-15 14:02:11 [DEBUG]",
        " [cache_wrapper][INFO]: Prompt cache: using 12/x tokens from cache",
    ]
    assert isinstance(run(torn)[1][1], ParseError)
    too_many = [
        "2026-05-15 14:02:11 [DEBUG]",
        " [cache_wrapper][INFO]: Prompt cache: using 13/12 tokens from cache",
    ]
    assert isinstance(run(too_many)[1][1], ParseError)
    assert [None] == run(["Cache reuse summary: 1/2 of prompt (50%), 1 prefix, 0 non-prefix"])[1]
    unindented = run(
        ["2026-05-15 14:02:11 [DEBUG]", "[cache_wrapper][INFO]: Prompt cache: using 1/2 tokens from cache"]
    )
    assert [(2, 1)] == [
        (e.prompt_tokens, e.cached_tokens) for e in unindented[0] if isinstance(e, LmstudioRequest)
    ]
    assert isinstance(run(["2026-02-30 14:02:11  [INFO]"])[1][0], ParseError)


def test_model_labels_are_bounded() -> None:
    """At most MAX_MODELS model labels per source, then `other`."""
    lines = []
    for n in range(MAX_MODELS + 2):
        lines += [
            "2026-05-15 14:02:11  [INFO]",
            f" [model-{n}] Running chat completion on conversation with 2 messages.",
        ]
        lines += USING
    models = [e.model for e in run(lines)[0] if isinstance(e, LmstudioRequest)]
    assert [f"model-{n}" for n in range(MAX_MODELS)] + ["other", "other"] == models


def test_blind_until_a_debug_record_shows_up() -> None:
    """Two completions without any DEBUG record set `blind`; the first DEBUG record clears it."""
    completion = [
        "2026-04-19 13:27:56  [INFO]",
        " [google/gemma-4-e4b] Running chat completion on conversation with 2 messages.",
    ]
    facts = [(e.key, e.value) for e in run(completion * 3 + USING)[0] if isinstance(e, EngineFact)]
    assert [("blind", "verbose_off"), ("blind", "")] == facts
    assert [] == [e for e in run(USING + completion * 3)[0] if isinstance(e, EngineFact)]


@pytest.mark.parametrize(
    "sample",
    [
        "lmstudio-v0-4-mlx-healthy.log",
        "lmstudio-v0-4-mlx-zero-reuse.log",
        "lmstudio-v0-4-mlx-vision.log",
        "lmstudio-v0-4-verbose-off.log",
        "lmstudio-v0-3-18-llamacpp.log",
        "lmstudio-2025-09-not-trimmable.log",
    ],
)
def test_detection_without_a_flag(sample: str) -> None:
    """Each framing is detected from its head."""
    assert "lmstudio" == detect_engine((SAMPLES / sample).read_text()[:65536])


@pytest.mark.parametrize(
    "text", ["\n".join(PASTE_0_3_31), "\n".join(PASTE_0_3_18), "\n".join(NOT_TRIMMABLE * 2)]
)
def test_detection_of_the_pastes(text: str) -> None:
    """The pastes' own lines are detected too."""
    assert "lmstudio" == detect_engine(text)


def test_no_signal_names_the_verbose_logging_setting(capsys: pytest.CaptureFixture[str]) -> None:
    """Verbose Logging off: no_signal with LM Studio's own setting in its payload; a healthy log: no alert."""
    assert 0 == main(["replay", "--format", "json", str(SAMPLES / "lmstudio-v0-4-verbose-off.log")])
    [alert] = json.loads(capsys.readouterr().out)["alerts"]
    assert ("no_signal", "verbose_off") == (alert["alert"], alert["evidence"]["reason"])
    assert alert["evidence"]["setting"].startswith("Verbose Logging")
    assert 0 == main(["replay", "--format", "json", str(SAMPLES / "lmstudio-v0-4-mlx-healthy.log")])
    assert [] == json.loads(capsys.readouterr().out)["alerts"]


def test_zero_reuse_on_follow_ups_fires_prefix_reuse_broken(capsys: pytest.CaptureFixture[str]) -> None:
    """mlx-engine#327's shape: `using 0/N` on every follow-up."""
    assert 0 == main(["replay", "--format", "json", str(SAMPLES / "lmstudio-v0-4-mlx-zero-reuse.log")])
    assert ["prefix_reuse_broken"] == [a["alert"] for a in json.loads(capsys.readouterr().out)["alerts"]]


def test_contract_rows_and_promtool(capsys: pytest.CaptureFixture[str]) -> None:
    """The contract's LM Studio families exist with their types and labels; promtool finds nothing wrong."""
    assert 0 == main(
        [
            "replay",
            "--format",
            "prom",
            str(SAMPLES / "lmstudio-v0-4-mlx-vision.log"),
            str(SAMPLES / "lmstudio-2025-09-not-trimmable.log"),
        ]
    )
    out = capsys.readouterr().out
    assert check_contract_rows(out, ("kvwatch_lmstudio_",)) >= 6
    check_promtool_clean(out)


FULL_WIDTH = [
    "2025-09-18 07:03:24 【DEBUG】",
    " 【cache_wrapper】【INFO】: Trimmed 74 tokens from the prompt cache",
    "2025-09-18 07:03:25 【DEBUG】",
    " 【cache_wrapper】【INFO】: Prompt cache: using 100/120 tokens from cache",
]


def test_full_width_framing_reads_as_ascii_framing() -> None:
    """`【DEBUG】` headers and `【cache_wrapper】【INFO】:` tags (a CJK-locale paste) are LM Studio's framing:
    the file is detected, the trim and the request read."""
    assert "lmstudio" == detect_engine("\n".join(FULL_WIDTH) + "\n")
    [request] = of(LmstudioRequest, FULL_WIDTH)
    assert (120, 100) == (request.prompt_tokens, request.cached_tokens)
    assert [74] == [e.tokens for e in of(LmstudioCacheEvent, FULL_WIDTH) if e.kind == "trim"]


def test_one_mlx_engine_restore_line_alone_is_a_request() -> None:
    """mlx-engine's `Prompt cache restore:` line pasted alone (lmstudio#2419) names LM Studio and is a
    request: prompt = cached + uncached + 1, as the coordinator prints uncached."""
    line = "Prompt cache restore: cached_tokens=17408 uncached_tokens=24 lifetime_efficiency=62.41%"
    assert "lmstudio" == detect_engine(line + "\n")
    [request] = of(LmstudioRequest, [line])
    assert (17433, 17408) == (request.prompt_tokens, request.cached_tokens)
