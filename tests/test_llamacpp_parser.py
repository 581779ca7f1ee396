"""The llama.cpp parser: literal lines of every era (llama.cpp sources, PyPI sdists) -> request records."""

# Literal log lines copied from llama-server output are kept whole, however long.
# ruff: noqa: E501

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from kvwatch.engines.llamacpp.events import LlamaRequest
from kvwatch.engines.llamacpp.parser import LlamacppParser, looks_like
from kvwatch.model import Event, LogLine, ServerRestart
from kvwatch.parsers.base import DEFAULT_START, ParseError, ParseResult, ParserSettings

S = DEFAULT_START


def at(rel: float, anchor: float = S) -> float:
    """The event time of relative time `rel` in a run anchored at `anchor` (µs resolution)."""
    return round(anchor + rel, 6)


URL = "https://github.com/ggml-org/llama.cpp/pull/13194#issuecomment-2868343055"


def run(
    lines: list[str], times: list[float | None] | None = None, start: float = S
) -> tuple[list[Event], list[ParseResult]]:
    """Feed lines as the pipeline does (marker prefilter, then parse); events and raw results."""
    parser = LlamacppParser("src", ParserSettings(start=start))
    events: list[Event] = []
    results: list[ParseResult] = []
    for i, text in enumerate(lines):
        line = LogLine("src", text, times[i] if times else None)
        result = parser.parse(line) if any(m in text for m in parser.markers) else None
        results.append(result)
        if isinstance(result, list):
            events.extend(result)
    events.extend(parser.flush())
    return events, results


def requests(lines: list[str], **kwargs: object) -> list[LlamaRequest]:
    """Only the request records."""
    events, _ = run(lines, **kwargs)  # type: ignore[arg-type]
    return [e for e in events if isinstance(e, LlamaRequest)]


Counts = tuple[int | None, int | None, int | None]  # prompt, reused, new


def req(time: float, slot: int, task: int, counts: Counts, selection: str, **kw: object) -> LlamaRequest:
    """A request record of source `src`."""
    return LlamaRequest("src", time, slot, task, *counts, selection, **kw)  # type: ignore[arg-type]


def timing(prefix: str, ms: str, new: int, gen: int) -> list[str]:
    """The ≥ b9305 timing block, one prefixed line each."""
    return [
        f"{prefix}prompt eval time =     {ms} ms /   {new:3d} tokens (    0.02 ms per token, 41605.84 tokens per second)",
        f"{prefix}       eval time =       1.73 ms /   {gen:3d} tokens (    0.25 ms per token,  4055.62 tokens per second)",
        f"{prefix}      total time =       3.10 ms /    65 tokens",
        f"{prefix}   graphs reused =          7",
    ]  # fmt: skip


def legacy_timing(header: str, ms: str, new: int, gen: int) -> list[str]:
    """The ≤ b9093 timing block: a bare header (trailing space) and 3 lines with no prefix."""
    return [
        header,
        f"prompt eval time = {ms:>10} ms / {new:5d} tokens (   11.13 ms per token,    89.83 tokens per second)",
        f"       eval time =    1234.00 ms / {gen:5d} tokens (   30.85 ms per token,    32.41 tokens per second)",
        "      total time =    1512.31 ms /    65 tokens",
    ]  # fmt: skip


# b11434 at -lv 4 (relative timestamps on by default): a healthy LCP pick.
B11434 = [
    "0.00.700.000 I srv    load_model: initializing, n_slots = 2, n_ctx_slot = 4096, kv_unified = 'false'",
    "0.00.866.459 I slot get_availabl: id  0 | task -1 | selected slot by LCP similarity, f_sim_best = 0.911 (> 0.100 thold), f_keep = 1.000",
    "0.00.866.500 I slot launch_slot_: id  0 | task 6 | processing task, is_child = 0",
    "0.00.878.136 I slot   operator(): id  0 | task 6 | new prompt, n_ctx_slot = 4096, n_keep = 0, task.n_tokens = 394",
    "0.00.900.000 I slot   operator(): id  0 | task 6 | cached n_tokens = 300, memory_seq_rm [300, end)",
    "0.00.900.100 I slot   operator(): id  0 | task 6 | cached n_tokens = 364, memory_seq_rm [364, end)",
    *timing("0.05.360.600 I slot print_timing: id  0 | task 6 | ", "1.37", 94, 8),
    "0.05.360.700 I slot      release: id  0 | task 6 | stop processing: n_tokens = 401, truncated = 0",
]  # fmt: skip
B11434_RECORD = req(at(5.3607), 0, 6, (394, 300, 94), "lcp", sim_best=0.911, f_keep=1.0,
                    prompt_eval_seconds=0.00137)  # fmt: skip

# V-2026-04 ... b9093 (no prefix by default), the incident: hybrid memory, LRU pick, forced re-processing.
INCIDENT = [
    "slot get_availabl: id  0 | task -1 | selected slot by LRU, t_last = 1344727861",
    "slot launch_slot_: id  0 | task 300 | processing task, is_child = 0",
    "slot update_slots: id  0 | task 300 | new prompt, n_ctx_slot = 262144, n_keep = 0, task.n_tokens = 24100",
    "slot update_slots: id  0 | task 300 | n_past = 21, slot.prompt.tokens.size() = 24050, seq_id = 0, pos_min = 24049, n_swa = 0",
    "slot update_slots: id  0 | task 300 | Checking checkpoint with [8191, 8191] against 21...",
    f"slot update_slots: id  0 | task 300 | forcing full prompt re-processing due to lack of cache data (likely due to SWA or hybrid/recurrent memory, see {URL})",
    "slot update_slots: id  0 | task 300 | erased invalidated context checkpoint (pos_min = 8191, pos_max = 8191, n_tokens = 8192, n_swa = 0, pos_next = 0, size = 75.376 MiB)",
    "slot update_slots: id  0 | task 300 | n_tokens = 0, memory_seq_rm [0, end)",
    "slot update_slots: id  0 | task 300 | 8192 tokens since last checkpoint at 0, creating new checkpoint during processing at position 10240",
    "slot create_check: id  0 | task 300 | created context checkpoint 1 of 32 (pos_min = 8191, pos_max = 8191, n_tokens = 8192, size = 75.376 MiB)",
    "slot update_slots: id  0 | task 300 | n_tokens = 8192, memory_seq_rm [8192, end)",
    "slot update_slots: id  0 | task 300 | prompt processing done, n_tokens = 24100, batch.n_tokens = 420",
    *legacy_timing("slot print_timing: id  0 | task 300 | ", "55012.00", 24100, 20),
    "slot      release: id  0 | task 300 | stop processing: n_tokens = 24119, truncated = 0",
    "srv  update_slots: all slots are idle",
]  # fmt: skip
INCIDENT_RECORD = req(S, 0, 300, (24100, 0, 24100), "lru", full_reprocess=True,
                      prompt_eval_seconds=55.012)  # fmt: skip

# b9093 after the fix: sim_best (pre-b10216 spelling), `n_tokens = N, memory_seq_rm`.
B9093 = [
    "slot get_availabl: id  0 | task -1 | selected slot by LCP similarity, sim_best = 0.999 (> 0.100 thold), f_keep = 1.000",
    "slot launch_slot_: id  0 | task 194 | processing task, is_child = 0",
    "slot update_slots: id  0 | task 194 | new prompt, n_ctx_slot = 262144, n_keep = 0, task.n_tokens = 24564",
    "slot update_slots: id  0 | task 194 | n_tokens = 24539, memory_seq_rm [24539, end)",
    "slot update_slots: id  0 | task 194 | prompt processing done, n_tokens = 24564, batch.n_tokens = 25",
    *legacy_timing("slot print_timing: id  0 | task 194 | ", "278.31", 25, 40),
    "slot      release: id  0 | task 194 | stop processing: n_tokens = 24603, truncated = 0",
]  # fmt: skip
B9093_RECORD = req(S, 0, 194, (24564, 24539, 25), "lcp", sim_best=0.999, f_keep=1.0,
                   prompt_eval_seconds=0.27831)  # fmt: skip

# V-2025-08: DBG lcs selection, n_prompt_tokens, `kv cache rm`, stop with n_past.
V2025 = [
    "slot get_availabl: id  0 | task -1 | selected slot by lcs similarity, lcs_len = 480, similarity = 0.937500",
    "slot launch_slot_: id  0 | task 12 | processing task",
    "slot update_slots: id  0 | task 12 | new prompt, n_ctx_slot = 4096, n_keep = 0, n_prompt_tokens = 512",
    "slot update_slots: id  0 | task 12 | kv cache rm [480, end)",
    "slot update_slots: id  0 | task 12 | prompt processing progress, n_past = 512, n_tokens = 32, progress = 0.062500",
    "slot update_slots: id  0 | task 12 | prompt done, n_past = 512, n_tokens = 32",
    *legacy_timing("slot print_timing: id  0 | task 12 | ", "20.00", 32, 10),
    "slot      release: id  0 | task 12 | stop processing: n_past = 521, truncated = 0",
    "srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200",
]  # fmt: skip
V2025_RECORD = req(S, 0, 12, (512, 480, 32), "lcp", sim_best=0.9375, prompt_eval_seconds=0.02)

# b11434: LRU pick rescued by the host prompt cache; the rescue's numbers replace the pick's.
RESCUE = [
    "0.01.000.000 I slot get_availabl: id  1 | task -1 | selected slot by LRU, t_last = 1344727861",
    "0.01.000.010 I srv   prompt_save:  - saving prompt with length 546, total state size = 6.330 MiB (draft: 0.000 MiB)",
    "0.01.000.020 I srv          load:  - looking for better prompt, base f_keep = 0.010, f_sim = 0.090",
    "0.01.000.030 I srv          load:  - found better prompt with f_keep = 1.000, f_sim = 0.910",
    "0.01.000.040 I slot launch_slot_: id  1 | task 50 | processing task, is_child = 0",
    "0.01.000.050 I slot   operator(): id  1 | task 50 | new prompt, n_ctx_slot = 4096, n_keep = 0, task.n_tokens = 489",
    "0.01.000.060 I slot   operator(): id  1 | task 50 | cached n_tokens = 445, memory_seq_rm [445, end)",
    *timing("0.01.100.000 I slot print_timing: id  1 | task 50 | ", "2.00", 44, 8),
    "0.01.100.100 I slot      release: id  1 | task 50 | stop processing: n_tokens = 496, truncated = 0",
]  # fmt: skip
RESCUE_RECORD = req(at(1.1001), 1, 50, (489, 445, 44), "lru", sim_best=0.91, f_keep=1.0,
                    prompt_cache_rescue=True, prompt_eval_seconds=0.002)  # fmt: skip

# b11434 SWA: a checkpoint restore; speculative checkpoints and the n_cache_reuse warning are noise.
RESTORE = [
    "0.02.000.000 I slot get_availabl: id  0 | task -1 | selected slot by LCP similarity, f_sim_best = 0.950 (> 0.100 thold), f_keep = 0.990",
    "0.02.000.100 I slot launch_slot_: id  0 | task 70 | processing task, is_child = 0",
    "0.02.000.150 W slot   operator(): id  0 | task 70 | cache reuse is not supported - ignoring n_cache_reuse = 256",
    "0.02.000.200 I slot   operator(): id  0 | task 70 | new prompt, n_ctx_slot = 4096, n_keep = 0, task.n_tokens = 420",
    "0.02.000.300 I slot   operator(): id  0 | task 70 | restored context checkpoint (pos_min = 138, pos_max = 393, n_tokens = 394, n_past = 393, size = 0.004 MiB)",
    "0.02.000.400 I slot   operator(): id  0 | task 70 | cached n_tokens = 394, memory_seq_rm [394, end)",
    "0.02.000.500 I slot   operator(): id  0 | task 70 | created speculative checkpoint (pos_min = 400, pos_max = 410, n_tokens = 411, size = 0.004 MiB)",
    "0.02.000.600 I slot   operator(): id  0 | task 70 | restoring speculative checkpoint (pos_min = 400, pos_max = 410, n_tokens = 411, size = 0.004 MiB)",
    *timing("0.02.100.000 I slot print_timing: id  0 | task 70 | ", "3.00", 26, 8),
    "0.02.100.100 I slot      release: id  0 | task 70 | stop processing: n_tokens = 427, truncated = 0",
]  # fmt: skip
RESTORE_RECORD = req(at(2.1001), 0, 70, (420, 394, 26), "lcp", sim_best=0.95, f_keep=0.99,
                     checkpoint_restores=1, prompt_eval_seconds=0.003)  # fmt: skip

# b11434 at the default -lv 3: no new prompt / memory_seq_rm, so counts are derived.
DEFAULT_LV = [
    "0.00.616.359 I slot get_availabl: id  1 | task -1 | selected slot by LCP similarity, f_sim_best = 0.106 (> 0.100 thold), f_keep = 0.105",
    "0.00.616.400 I slot launch_slot_: id  1 | task 16 | processing task, is_child = 0",
    *timing("0.00.700.000 I slot print_timing: id  1 | task 16 | ", "10.00", 499, 8),
    "0.00.700.100 I slot      release: id  1 | task 16 | stop processing: n_tokens = 553, truncated = 0",
]  # fmt: skip
DEFAULT_LV_RECORD = req(at(0.7001), 1, 16, (546, 47, 499), "lcp", sim_best=0.106, f_keep=0.105,
                        prompt_eval_seconds=0.01, derived=True)  # fmt: skip


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param(B11434, [B11434_RECORD], id="b11434-lv4"),
        pytest.param(INCIDENT, [INCIDENT_RECORD], id="v2026-04-incident"),
        pytest.param(B9093, [B9093_RECORD], id="b9093-legacy-timing"),
        pytest.param(V2025, [V2025_RECORD], id="v2025-08"),
        pytest.param(RESCUE, [RESCUE_RECORD], id="prompt-cache-rescue"),
        pytest.param(RESTORE, [RESTORE_RECORD], id="checkpoint-restore"),
        pytest.param(DEFAULT_LV, [DEFAULT_LV_RECORD], id="default-verbosity"),
    ],
)
def test_one_request_per_era(lines: list[str], expected: list[LlamaRequest]) -> None:
    """The lines of one request, in each era's format, join into exactly the expected record."""
    assert expected == requests(lines)


def test_first_seq_rm_after_new_prompt_is_the_reuse() -> None:
    """Later memory_seq_rm lines are batch progress; only the first after `new prompt` counts."""
    assert [300] == [r.reused_tokens for r in requests(B11434)]


def test_start_line_emits_a_restart() -> None:
    """A server start line is recognised and announced once, at its own time."""
    events, _ = run(B11434)
    assert [ServerRestart("src", at(0.7), "llamacpp")] == [e for e in events if isinstance(e, ServerRestart)]


def test_two_slots_interleaved() -> None:
    """Slots run concurrently: interleaved lines of two slots make two correct records."""
    slot0 = [line.replace("0.0", "1.0", 1) for line in B11434[1:]]
    slot1 = [line.replace("id  1", "id  1").replace("0.01.", "1.01.") for line in RESCUE[:1] + RESCUE[4:]]
    mixed = [slot0[0], slot1[0], slot0[1], slot1[1], slot0[2], slot1[2], *slot0[3:6]]
    mixed += [*slot1[3:], *slot0[6:]]
    got = requests(sorted(mixed, key=lambda line: line.split(" ")[0]))
    expected = [
        (1, 50, 489, 445, 44, "lru", None),
        (0, 6, 394, 300, 94, "lcp", 0.911),
    ]
    assert expected == [
        (r.slot, r.task, r.prompt_tokens, r.reused_tokens, r.new_tokens, r.selection, r.sim_best) for r in got
    ]


def test_task_minus_one_attaches_to_that_slots_next_task() -> None:
    """Selections wait per slot: slot 1's LRU pick is not given to slot 0's task launched between."""
    lines = [
        "slot get_availabl: id  1 | task -1 | selected slot by LRU, t_last = -1",
        "slot get_availabl: id  0 | task -1 | selected slot by LCP similarity, sim_best = 0.500 (> 0.100 thold), f_keep = 0.800",
        "slot launch_slot_: id  0 | task 8 | processing task, is_child = 0",
        "slot launch_slot_: id  1 | task 9 | processing task, is_child = 0",
        "slot update_slots: id  1 | task 9 | new prompt, n_ctx_slot = 4096, n_keep = 0, task.n_tokens = 100",
        "slot update_slots: id  0 | task 8 | new prompt, n_ctx_slot = 4096, n_keep = 0, task.n_tokens = 200",
        "slot update_slots: id  1 | task 9 | n_tokens = 0, memory_seq_rm [0, end)",
        "slot update_slots: id  0 | task 8 | n_tokens = 100, memory_seq_rm [100, end)",
        *legacy_timing("slot print_timing: id  1 | task 9 | ", "10.00", 100, 5),
        "slot      release: id  1 | task 9 | stop processing: n_tokens = 104, truncated = 0",
        *legacy_timing("slot print_timing: id  0 | task 8 | ", "10.00", 100, 5),
        "slot      release: id  0 | task 8 | stop processing: n_tokens = 204, truncated = 0",
    ]  # fmt: skip
    got = [(r.slot, r.selection, r.sim_best, r.reused_tokens) for r in requests(lines)]
    assert [(1, "lru", None, 0), (0, "lcp", 0.5, 100)] == got


def test_restart_resets_slots_and_keeps_time_monotonic() -> None:
    """A restart mid-request drops the cut request, announces the new run, and time moves on."""
    cut = B11434[:6]  # up to memory_seq_rm: no timing, no stop
    second = [
        "0.00.500.000 I srv    load_model: initializing, n_slots = 2, n_ctx_slot = 4096, kv_unified = 'false'",
        "0.00.600.000 I slot   operator(): id  0 | task 2 | cached n_tokens = 5, memory_seq_rm [5, end)",
        *timing("0.01.000.000 I slot print_timing: id  0 | task 2 | ", "1.00", 10, 4),
        "0.01.000.100 I slot      release: id  0 | task 2 | stop processing: n_tokens = 13, truncated = 0",
    ]  # fmt: skip
    events, _ = run(cut + second)
    last = at(0.9001)  # the old run's last line; the new run's relative 0 is put there
    expected: list[Event] = [
        ServerRestart("src", at(0.7), "llamacpp"),
        ServerRestart("src", at(0.5, last), "llamacpp"),
        req(at(1.0001, last), 0, 2, (10, 0, 10), "unknown", prompt_eval_seconds=0.001, derived=True),
    ]
    assert expected == events


def test_backwards_relative_time_is_a_restart() -> None:
    """Relative time going backwards without a start line still resets and announces."""
    events, _ = run([*B11434[1:6], *DEFAULT_LV])
    assert [ServerRestart, LlamaRequest] == [type(e) for e in events]
    assert [at(0.7001, at(0.9001))] == [e.time for e in events if isinstance(e, LlamaRequest)]


def test_restart_anchors_at_transport_time() -> None:
    """With a transport time on the restart line, the new run is anchored by it."""
    lines = [*B11434[1:6], *DEFAULT_LV]
    times: list[float | None] = [None] * 5 + [S + 1000.616359] + [None] * 6
    assert [at(0.7001, S + 1000.0)] == [r.time for r in requests(lines, times=times)]


def test_jsonl_objects() -> None:
    """`--log-jsonl`: the msg is parsed and the time comes from `time` (µs since start)."""

    def obj(micros: int, msg: str) -> str:
        """One jsonl log object."""
        return json.dumps({"type": "log", "time": micros, "level": "info", "msg": msg + "\n"})

    lines = [obj(i * 1000, line.split(" I ", 1)[1]) for i, line in enumerate(DEFAULT_LV)]
    expected = req(at(0.006), 1, 16, (546, 47, 499), "lcp", sim_best=0.106, f_keep=0.105,
                   prompt_eval_seconds=0.01, derived=True)  # fmt: skip
    assert [expected] == requests(lines)


JOURNALD_FIRST = datetime(2026, 5, 23, 0, 31, 18, tzinfo=timezone.utc).timestamp()
FIRST_REL = 0.616359  # the relative time of DEFAULT_LV's first line


@pytest.mark.parametrize(
    ("wrap", "expected_time"),
    [
        pytest.param(lambda line: line, S + 0.7001, id="prefix-on"),
        pytest.param(lambda line: line.split(" ", 2)[2], S, id="prefix-off"),
        pytest.param(lambda line: line.split(" ", 1)[1], S, id="level-only"),
        pytest.param(
            lambda line: "\x1b[34m" + line.replace(" I ", "\x1b[0m \x1b[32mI \x1b[0m", 1),
            at(0.7001),
            id="ansi-colour",
        ),
        pytest.param(lambda line: "[42027] " + line, S + 0.7001, id="router-port"),
        # the syslog time says when the first line was written: the run is anchored there
        pytest.param(
            lambda line: "May 23 00:31:18 host start_llama_server.sh[385247]: " + line,
            JOURNALD_FIRST + 0.7001 - FIRST_REL,
            id="journald",
        ),
    ],
)
def test_envelopes(wrap: object, expected_time: float) -> None:
    """Timestamps on or off, colour, router port and journald prefixes all give the same record."""
    lines = [wrap(line) for line in DEFAULT_LV]  # type: ignore[operator]
    got = requests(lines)
    assert [(expected_time, 546, 47)] == [(r.time, r.prompt_tokens, r.reused_tokens) for r in got]


def test_unstamped_lines_take_transport_time() -> None:
    """Without relative times, a line's transport time is its event time."""
    lines = [line.split(" ", 2)[2] for line in DEFAULT_LV]
    times: list[float | None] = [1000.0 + i for i in range(len(lines))]
    assert [1000.0 + 6] == [r.time for r in requests(lines, times=times)]


def test_garbage_numbers_are_errors_and_drop_the_record() -> None:
    """A slot line with garbage numbers is a ParseError, and its request yields no record."""
    lines = list(B9093)
    lines[3] = "slot update_slots: id  0 | task 194 | n_tokens = 24x39, memory_seq_rm [24x39, end)"
    events, results = run(lines)
    assert [] == [e for e in events if isinstance(e, LlamaRequest)]
    assert [3] == [i for i, r in enumerate(results) if isinstance(r, ParseError)]


def test_garbage_slot_id_poisons_the_task() -> None:
    """A garbled slot id cannot be attributed: the task's request is dropped, not mis-joined."""
    lines = list(B9093)
    lines[2] = lines[2].replace("id  0", "id  ?")
    events, results = run(lines)
    assert [] == [e for e in events if isinstance(e, LlamaRequest)]
    assert [2] == [i for i, r in enumerate(results) if isinstance(r, ParseError)]


def test_torn_line_is_an_error_and_no_wrong_record() -> None:
    """A line cut mid-way (then the next line) is counted, and the request it tore is dropped."""
    lines = list(B11434)
    lines[6] = "0.05.360.600 I slot print_timing: id  0 | task 6 | prompt eval time =       1.3"
    events, results = run(lines)
    assert [] == [e for e in events if isinstance(e, LlamaRequest)]
    assert [6] == [i for i, r in enumerate(results) if isinstance(r, ParseError)]


def test_torn_slot_prefix_is_an_error() -> None:
    """A slot line torn inside its prefix is a ParseError and poisons the requests in flight."""
    lines = [*B11434[:5], "0.00.900.050 I slot   operator(): id  0 | ta", *B11434[5:]]
    events, results = run(lines)
    assert [] == [e for e in events if isinstance(e, LlamaRequest)]
    assert [5] == [i for i, r in enumerate(results) if isinstance(r, ParseError)]


def test_cut_mid_request_yields_nothing() -> None:
    """A log that ends mid-request gives no record for it, at the end or on flush."""
    assert [] == requests(B9093[:-1])


def test_legacy_continuation_without_header_is_an_error() -> None:
    """A prefix-less timing line with no bare header before it cannot be attributed."""
    _, results = run(["prompt eval time =      20.00 ms /    32 tokens (0.62 ms per token)"])
    assert [ParseError("llamacpp: timing line without its header")] == results


def test_unknown_and_foreign_lines_are_none() -> None:
    """Lines of other programs, or without a marker, are not ours."""
    lines = [
        "load: 0 unused tokens",
        "print_info: n_swa = 32",
        "llama_perf_context_print: prompt eval time =     278.31 ms /    25 tokens",
        'INFO 05-23 00:31:18 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s',
        "que    start_loop: processing new tasks",
    ]  # fmt: skip
    _, results = run(lines)
    assert [None] * len(lines) == results


def test_every_recognised_line_has_a_marker() -> None:
    """parse() returns None for any line without a marker, so the pipeline's prefilter is exact."""
    parser = LlamacppParser("src", ParserSettings())
    corpus = B11434 + INCIDENT + B9093 + V2025 + RESCUE + RESTORE + DEFAULT_LV
    unmarked = [t for t in corpus if not any(m in t for m in parser.markers)]
    assert [] == [t for t in unmarked if parser.parse(LogLine("src", t)) is not None]
    assert [] == [t for t in corpus if t.strip().startswith(("prompt eval", "eval", "total"))
                  and not any(m in t for m in parser.markers)]  # fmt: skip


def test_records_come_out_ordered_by_time() -> None:
    """Records across eras and restarts are emitted in non-decreasing time order."""
    events, _ = run(B11434 + RESCUE + RESTORE + B9093)
    times = [e.time for e in events]
    assert sorted(times) == times


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        pytest.param("\n".join(B11434), True, id="b11434"),
        pytest.param("\n".join(INCIDENT), True, id="legacy"),
        pytest.param(
            "INFO 05-23 00:31:18 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s\n"
            "INFO 05-23 00:31:28 [loggers.py:123] Engine 000: Avg prompt throughput: 2.0 tokens/s\n",
            False,
            id="vllm",
        ),
        pytest.param("", False, id="empty"),
    ],
)
def test_looks_like_llamacpp(sample: str, expected: bool) -> None:
    """Auto-detection recognises llama-server output and nothing else."""
    assert expected == looks_like(sample)


def test_release_without_timings_is_a_record_of_what_preceded() -> None:
    """A slot released by an error (no timing lines) still reused what its lines say: its record comes
    when nothing more can follow (here the end of input), with the prompt and reuse its lines gave."""
    lines = [
        *B11434[1:6],
        "0.00.950.000 I slot      release: id  0 | task 6 | stop processing: n_tokens = 300, truncated = 0",
    ]
    events, results = run(lines)
    assert [[]] * len(lines) == results
    assert [(6, 394, 300, 94)] == [
        (e.task, e.prompt_tokens, e.reused_tokens, e.new_tokens)
        for e in events
        if isinstance(e, LlamaRequest)
    ]


def test_router_children_keep_their_own_clocks() -> None:
    """Router mode: each `[port] ` child has its own slots and clock; no false restart."""
    early = ["[8081] " + line.replace("0.0", "1.0", 1) for line in B11434[1:]]
    late = ["[8082] " + line for line in DEFAULT_LV]
    mixed = [line for pair in zip(early, late, strict=False) for line in pair]
    mixed += early[len(late) :]
    events, _ = run(mixed)
    got = [(type(e).__name__, getattr(e, "task", None)) for e in events]
    assert [("LlamaRequest", 16), ("LlamaRequest", 6)] == got


def test_v2025_08_stop_before_the_legacy_timing_block() -> None:
    """V-2025-08 releases the slot (`stop processing: n_past`) before printing its 4-line timings."""
    lines = [
        "slot launch_slot_: id  0 | task 3 | processing task",
        "slot update_slots: id  0 | task 3 | new prompt, n_ctx_slot = 4096, n_keep = 0, n_prompt_tokens = 900",
        "slot update_slots: id  0 | task 3 | kv cache rm [850, end)",
        "slot      release: id  0 | task 3 | stop processing: n_past = 911, truncated = 0",
        "slot print_timing: id  0 | task 3 | ",
        "prompt eval time =      12.00 ms /    50 tokens (    0.24 ms per token,  4166.67 tokens per second)",
        "       eval time =      20.00 ms /    12 tokens (    1.67 ms per token,   600.00 tokens per second)",
        "      total time =      32.00 ms /    62 tokens",
    ]
    got = [(r.prompt_tokens, r.reused_tokens, r.new_tokens, r.derived) for r in requests(lines)]
    assert [(900, 850, 50, False)] == got


def test_a_clock_of_more_than_seven_digits_of_minutes_is_not_a_clock() -> None:
    """A stamp with 8 digits of minutes or more (190 years of uptime: damage) is not read as a clock,
    nor is a jsonl `time` beyond the same; every later record keeps a sane time (times never go back,
    so one such line would otherwise carry them all past year 9999)."""
    damaged = ["12345678.00.000.000 I " + line.split(" I ", 1)[1] for line in DEFAULT_LV[:3]]
    events, results = run(damaged + DEFAULT_LV)
    assert [DEFAULT_LV_RECORD] == [e for e in events if isinstance(e, LlamaRequest)]
    assert [None, None, None] == results[:3]  # (not llama.cpp clock lines: foreign, counted as lines)

    def obj(micros: int, msg: str) -> str:
        return json.dumps({"type": "log", "time": micros, "level": "info", "msg": msg + "\n"})

    lines = [obj(i * 1000, line.split(" I ", 1)[1]) for i, line in enumerate(DEFAULT_LV)]
    lines.insert(2, obj(10**25, "slot print_timing: id  1 | task 16 | n_gen = 3"))
    records = [e for e in run(lines)[0] if isinstance(e, LlamaRequest)]
    assert 1 == len(records) and records[0].time < S + 60


CANCELLED = [
    "slot launch_slot_: id  0 | task 7 | processing task, is_child = 0",
    "slot update_slots: id  0 | task 7 | new prompt, n_ctx_slot = 8192, n_keep = 0, task.n_tokens = 900",
    "slot update_slots: id  0 | task 7 | n_tokens = 640, memory_seq_rm [640, end)",
    "slot      release: id  0 | task 7 | stop processing: n_tokens = 700, truncated = 0",
    "srv  update_slots: all slots are idle",
]


def test_a_request_released_without_timings_is_recorded_from_what_preceded() -> None:
    """A cancelled or failed request (no `prompt eval time`) still counts: its prompt and reuse are
    the `new prompt` and `memory_seq_rm` lines, recorded when nothing more of it can come."""
    [got] = requests(CANCELLED)
    assert (7, 900, 640, 260) == (got.task, got.prompt_tokens, got.reused_tokens, got.new_tokens)


def test_a_request_released_without_timings_ends_at_the_slot_s_next_task_or_the_end() -> None:
    """The slot's next task, or the end of input, closes it."""
    [got] = requests(CANCELLED[:-1])
    assert 640 == got.reused_tokens
    nxt = [line.replace("task 7", "task 9") for line in CANCELLED[:3]]
    assert [7] == [r.task for r in requests(CANCELLED[:-1] + nxt)]  # (task 9 never ends)


def test_a_request_released_without_timings_ends_at_a_restart() -> None:
    """A restart closes it too (the old process prints nothing more): its record comes before the
    restart's, not lost with the old process's slots (NemoClaw's cancelled request before a restart)."""
    restart = "srv    load_model: initializing slots, n_slots = 4"
    events, _ = run([*CANCELLED, restart, *[line.replace("task 7", "task 0") for line in CANCELLED[:3]]])
    assert [(LlamaRequest, 7), (ServerRestart, None)] == [
        (type(e), getattr(e, "task", None)) for e in events
    ]  # (task 0 of the new run never ends)


def test_failed_truncation_clears_the_memory_and_reuses_nothing() -> None:
    """`failed to truncate tokens with position >= N - clearing the memory` after the memory_seq_rm line:
    the reuse is 0 and the request is a full re-process."""
    lines = [
        "slot update_slots: id  0 | task 3 | new prompt, n_ctx_slot = 8192, n_keep = 0, n_prompt_tokens = 500",
        "slot update_slots: id  0 | task 3 | n_past = 420, memory_seq_rm [420, end)",
        "slot update_slots: id  0 | task 3 | failed to truncate tokens with position >= 420 - clearing the memory",
        "slot update_slots: id  0 | task 3 | prompt processing progress, n_past = 500, n_tokens = 500, progress = 1.0",
        "slot      release: id  0 | task 3 | stop processing: n_tokens = 520, truncated = 0",
        "srv  update_slots: all slots are idle",
    ]
    [got] = requests(lines)
    assert (500, 0, True) == (got.prompt_tokens, got.reused_tokens, got.full_reprocess)
