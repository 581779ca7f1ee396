"""llama.cpp's 2024 server (examples/server/server.cpp as vendored in llama-cpp-python 0.2.38, 0.2.56 and
0.2.77, and Ollama 0.1.48's llm/ext_server copy): lines built from its format strings -> request records."""

# Lines built from the format strings are kept whole, however long.
# ruff: noqa: E501

from __future__ import annotations

import pytest
from test_llamacpp_parser import requests, run

from kvwatch.engines import detect_engine
from kvwatch.engines.llamacpp.events import LlamaRequest
from kvwatch.parsers.base import ParseError

# 0.2.38, LOG_TEE with LOG_TEE_TIMESTAMPS: `[%lu] ` + `slot %d : in cache: %i tokens | to process: %i tokens`.
EARLY = [
    "[1709159738] slot 0 is processing [task id: 2]",
    "[1709159738] slot 0 : in cache: 449 tokens | to process: 160 tokens",
    "[1709159738] slot 0 : kv cache rm - [449, end)",
    "[1709159740] print_timings: prompt eval time =     512.30 ms /   160 tokens (    3.20 ms per token,   312.32 tokens per second)",
    "[1709159740] print_timings:        eval time =    1200.00 ms /    40 runs   (   30.00 ms per token,    33.33 tokens per second)",
    "[1709159740] print_timings:       total time =    1712.30 ms",
    "[1709159740] slot 0 released (650 tokens in cache)",
]
# 0.2.77: `%4s [%24s] %s |` + ordered_json {tid, timestamp, extra...}.
MID_ORDERED = [
    'INFO [   launch_slot_with_task] slot is processing task | tid="139871" timestamp=1717000000 id_slot=1 id_task=5',
    'INFO [            update_slots] kv cache rm [p0, end) | tid="139871" timestamp=1717000000 id_slot=1 id_task=5 p0=1200',
    'INFO [           print_timings] prompt eval time     =     300.00 ms /    80 tokens (    3.75 ms per token,   266.67 tokens per second) | tid="139871" timestamp=1717000002 id_slot=1 id_task=5 t_prompt_processing=300.0 n_prompt_tokens_processed=80 t_token=3.75 n_tokens_second=266.6666666666667',
    'INFO [           print_timings] generation eval time =    1000.00 ms /    20 runs   (   50.00 ms per token,    20.00 tokens per second) | tid="139871" timestamp=1717000003 id_slot=1 id_task=5 t_token_generation=1000.0 n_decoded=20 t_token=50.0 n_tokens_second=20.0',
    'INFO [            update_slots] slot released | tid="139871" timestamp=1717000003 id_slot=1 id_task=5 n_ctx=8192 n_past=1299 n_system_tokens=0 n_cache_tokens=1300 truncated=false',
]
# 0.2.56: the same fields, but `log` is an nlohmann::json, so its keys come out sorted.
MID_SORTED = [
    'INFO [            update_slots] kv cache rm [p0, end) | id_slot=0 id_task=7 p0=0 tid="140" timestamp=1711000000',
    'INFO [           print_timings] prompt eval time     =    9000.00 ms /  6000 tokens (    1.50 ms per token,   666.67 tokens per second) | id_slot=0 id_task=7 n_prompt_tokens_processed=6000 n_tokens_second=666.6666666666666 t_prompt_processing=9000.0 t_token=1.5 tid="140" timestamp=1711000009',
]
# Ollama 0.1.48 (llm/ext_server/utils.hpp): `level [function] msg |`, unpadded, DEBUG, slot_id/task_id.
OLLAMA_PLAIN = [
    'DEBUG [process_single_task] slot data | n_idle_slots=1 n_processing_slots=0 task_id=3 tid="1" timestamp=1719000000',
    'DEBUG [update_slots] slot progression | ga_i=0 n_past=512 n_past_se=0 n_prompt_tokens_processed=30 slot_id=0 task_id=4 tid="1" timestamp=1719000001',
    'DEBUG [update_slots] kv cache rm [p0, end) | p0=512 slot_id=0 task_id=4 tid="1" timestamp=1719000001',
    'DEBUG [print_timings] prompt eval time     =      40.00 ms /    30 tokens (    1.33 ms per token,   750.00 tokens per second) | n_prompt_tokens_processed=30 n_tokens_second=750.0 slot_id=0 t_prompt_processing=40.0 t_token=1.3333333333333333 task_id=4 tid="1" timestamp=1719000001',
]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (EARLY, [LlamaRequest("src", 1709159738.0, 0, -1, 609, 449, 160, "unknown")]),
        (
            MID_ORDERED,
            [LlamaRequest("src", 1717000002.0, 1, 5, 1280, 1200, 80, "unknown", prompt_eval_seconds=0.3)],
        ),
        (
            MID_SORTED,
            [LlamaRequest("src", 1711000009.0, 0, 7, 6000, 0, 6000, "unknown", prompt_eval_seconds=9.0)],
        ),
        (
            OLLAMA_PLAIN,
            [LlamaRequest("src", 1719000001.0, 0, 4, 542, 512, 30, "unknown", prompt_eval_seconds=0.04)],
        ),
    ],
    ids=["early-2024", "mid-2024-ordered", "mid-2024-sorted", "ollama-0.1.48"],
)
def test_each_2024_form_gives_its_record_at_its_own_clock(
    lines: list[str], expected: list[LlamaRequest]
) -> None:
    """Every line is recognised; the record says what the lines say, at the line's unix time."""
    events, results = run(lines)
    assert expected == [e for e in events if isinstance(e, LlamaRequest)]
    assert all(isinstance(r, list) for r in results)


def test_indented_lines_are_read_too() -> None:
    """Leading whitespace (a pasted or re-indented log) does not hide a line."""
    assert 1 == len(requests(["  " + line for line in MID_ORDERED]))


def test_two_slots_interleave_without_mixing() -> None:
    """Slot 0's and slot 1's lines alternate; each request keeps its own reuse."""
    a, b = (
        MID_SORTED,
        [line.replace("id_slot=0", "id_slot=1").replace("p0=0 ", "p0=5000 ") for line in MID_SORTED],
    )
    got = requests([a[0], b[0], a[1], b[1]])
    assert [(0, 0), (1, 5000)] == [(r.slot, r.reused_tokens) for r in got]


def test_a_garbled_number_is_an_error_not_a_record() -> None:
    """`p0=x` cannot be read: a parse error, and the request is not emitted with a guess."""
    lines = [MID_SORTED[0].replace("p0=0", "p0=x"), MID_SORTED[1]]
    events, results = run(lines)
    assert isinstance(results[0], ParseError)
    assert [] == [e for e in events if isinstance(e, LlamaRequest)]


def test_a_bracketed_unix_time_is_not_a_router_port() -> None:
    """`[1709159738] ` is LOG_TEE's clock; `[8081] ` stays the router's port (one stream per child)."""
    got = requests(EARLY)
    assert 1709159738.0 == got[0].time


@pytest.mark.parametrize("lines", [EARLY, MID_ORDERED, MID_SORTED, OLLAMA_PLAIN])
def test_detection_picks_llamacpp_without_a_flag(lines: list[str]) -> None:
    """Each 2024 form alone is recognised as llama.cpp."""
    assert "llamacpp" == detect_engine("\n".join(lines) + "\n")
