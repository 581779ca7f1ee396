"""The Ollama engine: lines built from Ollama's format strings (ollama/ollama, per release) -> records.

Sources: logutil/logutil.go (slog text, AddSource), server/routes.go (gin.Default, `server config`,
`Listening on`), runner/ollamarunner/cache.go (<= 0.29, DEBUG), x/mlxrunner/prefix_cache.go (MLX, INFO),
llm/llama_server.go (>= 0.30, `starting llama-server`, the runner's output copied unchanged).
"""

# Lines built from the format strings are kept whole, however long.
# ruff: noqa: E501

from __future__ import annotations

import json
import random
import re
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from contract_helpers import check_contract_rows, check_promtool_clean
from corpora import SAMPLES

from kvwatch.cli import main
from kvwatch.engines import detect_engine, make_parser, markers_of
from kvwatch.engines.ollama import lines as ollama_lines
from kvwatch.engines.ollama.events import OllamaAccess, OllamaCacheEvent, OllamaRequest
from kvwatch.engines.ollama.parser import MAX_MODELS
from kvwatch.model import Event, LogLine, ServerRestart
from kvwatch.parsers.base import ParseError, ParseResult, ParserSettings

JOURNAL = "Jun 01 10:00:09 box ollama[812]: "
SLOT_029 = 'time=2026-06-01T10:00:09.500Z level=DEBUG source=cache.go:151 msg="loading cache slot" id=1 cache=2480 prompt=2600 used=2480 remaining=120'
MLX_HIT = 'time=2026-07-14T09:30:30.250+02:00 level=INFO source=prefix_cache.go:125 msg="cache hit" total=41872 matched=41800 cached=24575 left=17297'
MLX_MISS = 'time=2026-07-14T09:31:00.000+02:00 level=INFO source=prefix_cache.go:125 msg="cache miss" total=900 matched=0 cached=0 left=900'
START_030 = 'time=2026-06-10T09:00:03.000Z level=INFO source=llama_server.go:433 msg="starting llama-server" cmd="/usr/local/lib/ollama/llama-server --model /usr/share/ollama/.ollama/models/blobs/sha256-a3de86cd1c132c822487ededd47a324c50491393e6565cd14bafa40d0b8e686f --port 39101 --log-verbosity 4 --no-log-prefix --no-log-timestamps"'
REQUEST_030 = [
    "slot get_availabl: id  0 | task -1 | selected slot by LRU, t_last = -1",
    "slot launch_slot_: id  0 | task 0 | processing task, is_child = 0",
    "slot   operator(): id  0 | task 0 | new prompt, n_ctx_slot = 8192, n_keep = 0, task.n_tokens = 1300",
    "slot   operator(): id  0 | task 0 | cached n_tokens = 0, memory_seq_rm [0, end)",
    "slot print_timing: id  0 | task 0 | prompt eval time =     471.92 ms /  1300 tokens (    0.36 ms per token,  2754.71 tokens per second)",
    "slot print_timing: id  0 | task 0 |        eval time =    2442.38 ms /   149 tokens (   16.39 ms per token,    61.01 tokens per second)",
    "slot print_timing: id  0 | task 0 |       total time =    2914.30 ms /  1449 tokens",
    "slot      release: id  0 | task 0 | stop processing: n_tokens = 1448, truncated = 0",
]
GIN = '[GIN] 2026/06/10 - 09:00:08 | 200 |  3.012345678s |       127.0.0.1 | POST     "/api/chat"'
GIN_COLOUR = '[GIN] 2026/06/10 - 09:00:08 |\x1b[97;42m 200 \x1b[0m|    1m2s |       127.0.0.1 |\x1b[97;46m POST    \x1b[0m "/v1/chat/completions"'


def run(lines: list[str]) -> tuple[list[Event], list[ParseResult]]:
    """Feed lines as the pipeline does (the engine's markers, then parse)."""
    parser = make_parser("ollama", "src", ParserSettings(year=2026))
    markers = markers_of("ollama") or ()
    events: list[Event] = []
    results: list[ParseResult] = []
    for text in lines:
        result = parser.parse(LogLine("src", text)) if any(m in text for m in markers) else None
        results.append(result)
        if isinstance(result, list):
            events += result
    return events + parser.flush(), results


def records(lines: list[str]) -> list[OllamaRequest]:
    return [e for e in run(lines)[0] if isinstance(e, OllamaRequest)]


def test_loading_cache_slot_under_journald() -> None:
    """<= 0.29 DEBUG: prompt and used are the record; the slot is kept; the time is slog's own."""
    [got] = records([JOURNAL + SLOT_029])
    assert (1780308009.5, 2600, 2480, 1) == (got.time, got.prompt_tokens, got.cached_tokens, got.slot)


def test_mlx_cache_hit_and_miss_keep_total_matched_and_cached() -> None:
    """`cached` is what was restored, `matched` what the trie matched (lost reuse = matched - cached)."""
    hit, miss = records([MLX_HIT, MLX_MISS])
    assert (41872, 24575, 41800) == (hit.prompt_tokens, hit.cached_tokens, hit.matched)
    assert (900, 0) == (miss.prompt_tokens, miss.cached_tokens)
    assert 1784014230.25 == hit.time  # +02:00 honoured


def test_cache_events() -> None:
    """Failed restores, clears, shifts, evictions and forks are named events."""
    lines = [
        'time=2026-07-14T09:30:30.000Z level=WARN source=prefix_cache.go:252 msg="failed to restore cache, freeing all caches" offset=24575',
        'time=2026-06-01T10:00:22.001Z level=DEBUG source=cache.go:301 msg="kv cache removal unsupported, clearing cache and returning inputs for reprocessing" id=0 error="not supported"',
        'time=2026-06-01T10:00:22.002Z level=DEBUG source=cache.go:251 msg="kv cache cannot shift, clearing cache and returning inputs for reprocessing" id=0',
        'time=2026-06-01T10:00:22.000Z level=DEBUG source=cache.go:295 msg="context limit hit - shifting" id=0 limit=4096 input=4096 keep=4 discard=2046',
        'time=2026-06-01T10:00:23.000Z level=DEBUG source=cache.go:212 msg="evicting cache slot" id=1 inputs=900 used=2026-06-01T09:58:00.000Z',
        'time=2026-06-01T10:00:23.000Z level=DEBUG source=cache.go:217 msg="forking cache slot" src=0 dst=1 inputs=512 total=2600',
    ]
    kinds = [e.kind for e in run(lines)[0] if isinstance(e, OllamaCacheEvent)]
    assert ["failed_restore", "clear", "clear", "context_shift", "eviction", "fork"] == kinds


def test_bundled_llama_server_lines_become_ollama_records_of_their_runner() -> None:
    """>= 0.30: the llama.cpp parser reads the runner's lines; the record is Ollama's, with its model."""
    events, results = run([START_030, *REQUEST_030])
    [got] = [e for e in events if isinstance(e, OllamaRequest)]
    assert (1300, 0, "39101", "sha256-a3de86cd1c13") == (
        got.prompt_tokens,
        got.cached_tokens,
        got.runner,
        got.model,
    )
    assert got.conversation == "runner 39101 slot 0 #1"
    assert all(isinstance(r, list) for r in results)


def test_runners_are_kept_apart_a_second_start_does_not_reset_the_first() -> None:
    """A second model's llama-server starts on another port: each runner has its own parser and label."""
    second = START_030.replace("39101", "41877").replace("sha256-a3de86cd1c13", "sha256-dde5aa3fc5ff")
    startup = ["srv    load_model: initializing, n_slots = 1, n_ctx_slot = 8192, kv_unified = 'false'"]
    got = records([START_030, *startup, *REQUEST_030, second, *startup, *REQUEST_030])
    assert [("39101", "sha256-a3de86cd1c13"), ("41877", "sha256-dde5aa3fc5ff")] == [
        (r.runner, r.model) for r in got
    ]
    assert not any(isinstance(e, ServerRestart) for e in run([START_030, *startup, second, *startup])[0])


def test_model_labels_are_bounded() -> None:
    """After MAX_MODELS models, the others are counted as "other"."""
    lines = []
    for n in range(MAX_MODELS + 2):
        lines += [
            START_030.replace("39101", str(40000 + n)).replace("sha256-a3de86cd1c13", f"sha256-{n:012d}"),
            MLX_MISS,
        ]
    labels = [r.model for r in records(lines)]
    assert len(set(labels)) == MAX_MODELS + 1
    assert ["other", "other"] == labels[-2:]


@pytest.mark.parametrize("text", [GIN, GIN_COLOUR])
def test_gin_access_line(text: str) -> None:
    """Status, latency (Go durations, colour or not) and path."""
    [access] = [e for e in run([text])[0] if isinstance(e, OllamaAccess)]
    assert access.status == 200 and access.method == "POST"
    assert access.seconds in (3.012345678, 62.0)
    assert access.path in ("/api/chat", "/v1/chat/completions")


def test_quoted_values_and_garbled_numbers() -> None:
    """Go-quoted values are unquoted; a known record with a garbled number is an error, not a record."""
    events, results = run(
        [
            SLOT_029.replace("used=2480", "used=x"),
            'time=2026-06-01T10:00:00.001Z level=INFO source=routes.go:1205 msg="server config" env="map[OLLAMA_DEBUG:false OLLAMA_HOST:\\"x y\\"]"',
        ]
    )
    assert isinstance(results[0], ParseError)
    assert not [e for e in events if isinstance(e, OllamaRequest)]
    assert isinstance(results[1], list) and results[1][0].value == "false"  # type: ignore[union-attr]


def test_foreign_lines_are_not_recognised() -> None:
    """A journald line of another kind is counted as unknown (None), not silently taken."""
    assert [None] == run([JOURNAL + "some other output"])[1]


@pytest.mark.parametrize(
    ("sample", "engine"),
    [
        ("ollama-0.29-debug.log", "ollama"),
        ("ollama-0.29-default.log", "ollama"),
        ("ollama-0.30-two-runners.log", "ollama"),
        ("ollama-mlx-stuck.log", "ollama"),
        ("ollama-0.1-embedded.log", "ollama"),
        ("llamacpp-2024-early.log", "llamacpp"),
        ("llamacpp-2024-mid.log", "llamacpp"),
        ("llamacpp-synthetic-b9934.log", "llamacpp"),
    ],
)
def test_detection_without_a_flag(sample: str, engine: str) -> None:
    """Each era's log is detected from its head."""
    assert engine == detect_engine((SAMPLES / sample).read_text()[:65536])


def test_no_signal_names_ollamas_own_setting(capsys: pytest.CaptureFixture[str]) -> None:
    """<= 0.29 at INFO: no_signal with OLLAMA_DEBUG=1 in its payload; with it, no alert at all."""
    assert 0 == main(
        ["replay", "--format", "json", "--year", "2026", str(SAMPLES / "ollama-0.29-default.log")]
    )
    [alert] = json.loads(capsys.readouterr().out)["alerts"]
    assert ("no_signal", "OLLAMA_DEBUG=1", "0.29.1") == (
        alert["alert"],
        alert["evidence"]["setting"],
        alert["evidence"]["ollama_version"],
    )
    assert 0 == main(["replay", "--format", "json", "--year", "2026", str(SAMPLES / "ollama-0.29-debug.log")])
    assert [] == json.loads(capsys.readouterr().out)["alerts"]


def test_contract_rows_and_promtool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The contract's Ollama families exist with their types and labels; promtool finds nothing wrong."""
    assert 0 == main(["replay", "--format", "prom", "--year", "2026", str(SAMPLES / "ollama-mlx-stuck.log")])
    out = capsys.readouterr().out
    assert check_contract_rows(out, ("kvwatch_ollama_",)) > 0
    check_promtool_clean(out)


def request_lines(task: int, prompt: int, cached: int) -> list[str]:
    """One -lv 4 request of b9452 on slot 0, without prefix and timestamps (as Ollama copies them)."""
    tag = f"id  0 | task {task} |"
    new = prompt - cached
    return [
        f"slot launch_slot_: {tag} processing task, is_child = 0",
        f"slot   operator(): {tag} new prompt, n_ctx_slot = 8192, n_keep = 0, task.n_tokens = {prompt}",
        f"slot   operator(): {tag} cached n_tokens = {cached}, memory_seq_rm [{cached}, end)",
        f"slot print_timing: {tag} prompt eval time =     100.00 ms / {new:5d} tokens (    0.36 ms per token,  2754.71 tokens per second)",
        f"slot print_timing: {tag}        eval time =     100.00 ms /    10 tokens (   16.39 ms per token,    61.01 tokens per second)",
        f"slot print_timing: {tag}       total time =     200.00 ms / {prompt + 10:5d} tokens",
        f"slot      release: {tag} stop processing: n_tokens = {prompt + 9}, truncated = 0",
    ]


def test_two_runners_answering_at_once_keep_their_own_requests() -> None:
    """Model a (tasks 7, 8) and model b (tasks 0, 1) interleave line by line after b started: each
    request is a's or b's by its task id, with its own reuse, and none is lost."""
    second = START_030.replace("39101", "41877").replace("sha256-a3de86cd1c13", "sha256-dde5aa3fc5ff")
    warmup = [line for task in range(7) for line in request_lines(task, 100 + task, 0)]
    a = request_lines(7, 5000, 4000) + request_lines(8, 5200, 5010)
    b = request_lines(0, 900, 0) + request_lines(1, 1000, 910)
    mixed = [line for pair in zip(a, b, strict=True) for line in pair]
    got = records([START_030, *warmup, second, *mixed])[7:]
    assert sorted((r.runner, r.prompt_tokens, r.cached_tokens) for r in got) == [
        ("39101", 5000, 4000), ("39101", 5200, 5010), ("41877", 900, 0), ("41877", 1000, 910),
    ]  # fmt: skip


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin"])
def test_a_journald_prefix_whose_time_alone_changed(seed: int, tz: str) -> None:
    """A journald prefix read from the one before it (the same, or only its time of day changed: the
    parser's fast path) gives the times the full read gives (`fast_paths=False`): on random prefixes,
    near misses among them (day, month, host, pid, widths, other digits)."""
    rng = random.Random(seed)
    months = ("Jan", "Feb", "Mar", "Dec", "Jun", "Jux")
    hosts = ("gpu-ws", "a]:", "h", "gpu-ws2")

    def prefix() -> str:
        day = rng.choice(("10", " 5", "5", "31", "30", "1\u0663", "01"))
        hms = [f"{rng.randrange(0, 61):02d}" for _ in range(3)]
        if rng.random() < 0.1:
            hms[rng.randrange(3)] = rng.choice(("\u0663\u0663", "1", "1x", "001"))
        pid = rng.choice(("2231", "2232", "22"))
        time = rng.choice((":", ":", ":", ".", " ")).join(hms)
        return f"{rng.choice(months)} {day} {time} {rng.choice(hosts)} ollama[{pid}]: "

    # (a `[GIN]` line's event takes the prefix's time: the line shows what the prefix was read as)
    gin = '[GIN] 2026/06/10 - 10:00:02 | 200 |     1.5s |       127.0.0.1 | GET      "/api/tags"'
    texts, held = [], prefix()
    for _ in range(400):
        if rng.random() < 0.2:
            held = prefix()
        line = held if rng.random() < 0.3 else held[:7] + prefix()[7:15] + held[15:]
        texts.append(line + rng.choice((gin, gin, "srv  update_slots: all slots are idle", "x", "")))
    fast = make_parser("ollama", "src", ParserSettings(year=2026, tz=tz))
    plain = make_parser("ollama", "src", ParserSettings(year=2026, tz=tz, fast_paths=False))
    for text in texts:
        assert fast.parse(LogLine("src", text)) == plain.parse(LogLine("src", text)), text


def outcome(read: Callable[[str], dict[str, str]], text: str) -> object:
    """What `read` makes of `text`, or the exception it raises."""
    with warnings.catch_warnings():  # (random escapes: Python warns of those it does not know)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return read(text)
        except Exception as exc:  # (an escape unquote cannot read: the same either way)
            return repr(exc)


def test_slog_pairs_read_as_the_plain_pattern_reads_them() -> None:
    """slog's key=value pairs (a quoted value's plain runs read in one step) are those of the plain
    pattern, on random texts of keys, quotes, backslashes and newlines."""
    plain = re.compile(r'([^\s=]+)=("(?:[^"\\]|\\.)*"|[^\s"]*)')

    def by_plain(text: str) -> dict[str, str]:
        return {key: ollama_lines.unquote(value) for key, value in plain.findall(text)}

    rng = random.Random(7)
    alphabet = ["a", "=", '"', "\\", " ", "\n", "x=", 'k="', "\t", "é", '\\"']
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 16)))
        assert outcome(ollama_lines.attributes, text) == outcome(by_plain, text), repr(text)


def test_gin_keeps_the_year_it_prints() -> None:
    """`[GIN] 2024/11/04 - 21:54:31` is in 2024 whatever year kvwatch is told for year-less stamps."""
    events, _ = run(
        ['[GIN] 2024/11/04 - 21:54:31 | 200 |   15.2285805s |             ::1 | POST     "/api/chat"']
    )
    [access] = [e for e in events if isinstance(e, OllamaAccess)]
    assert access.time == 1730757271.0  # 2024-11-04T21:54:31Z


@pytest.mark.parametrize(
    "head",
    [
        '[GIN] 2024/11/04 - 21:54:31 | 200 |   15.2285805s |             ::1 | POST     "/api/chat"',
        "cache hit total=23169  matched=21742  cached=16383   left=6786",
        MLX_HIT,
        "Sep 11 00:03:06   ollama[]: srv    load_model: prompt cache is enabled, size limit: 8192 MiB",
    ],
)
def test_one_unambiguous_line_names_ollama(head: str) -> None:
    """A single line only Ollama writes (or a journald line tagged ollama[PID]) is enough to detect it."""
    assert "ollama" == detect_engine(head + "\n")


def test_the_mlx_runner_s_bare_cache_line_is_a_record() -> None:
    """x/mlxrunner's `cache hit total= matched= cached= left=` pasted without slog framing is still read
    (ollama#18267's lines): total and cached, with matched kept."""
    [got] = records(["cache hit total=23169  matched=21742  cached=16383   left=6786"])
    assert (23169, 16383, 21742) == (got.prompt_tokens, got.cached_tokens, got.matched)


def test_a_journald_prefix_with_host_and_pid_blanked_is_stripped() -> None:
    """`Sep 11 00:03:06   ollama[]: ` (a paste with host and PID removed) is journald's prefix still."""
    match = ollama_lines.JOURNAL.match("Sep 11 00:03:06   ollama[]: srv  update_slots: all slots are idle")
    assert match is not None and "ollama" == match[6]
