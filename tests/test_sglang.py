"""SGLang: every version family's lines read by key, exact sums, request records, privacy, diagnoses.

The lines come from the format strings of the released packages (scripts/samples/sglang/lines.py names
the version and file of each).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from contract_helpers import check_contract_rows, check_promtool_clean
from corpora import SAMPLES, sample_logs
from daemon_helpers import Kvwatch, file_source, wait_until, write_config

from kvwatch.cli import main
from kvwatch.detectors import hicache_storage_unused, no_signal, prefix_cache_disabled
from kvwatch.engines import FACTS, detect_engine
from kvwatch.engines.sglang.events import SglangDecode, SglangPrefill, SglangRequest
from kvwatch.engines.sglang.parser import SglangParser
from kvwatch.model import CachePrefetch, EngineFact, LogLine, UnreadFields
from kvwatch.parsers.base import ParseError, ParserSettings
from kvwatch.windows.window import Windows
from scripts.samples.sglang import lines as sl

T = 1775419200.0  # 2026-04-05T20:00:00Z
B = sl.Batch(1, 300, 1200, running=2, queued=3, usage=0.25, rate=0.5)


def parse(*texts: str, transport: float | None = None) -> list[object]:
    """The events of the lines, in order (a ParseError or None kept as it is)."""
    parser = SglangParser("s", ParserSettings())
    out: list[object] = []
    for text in texts:
        result = parser.parse(LogLine("s", text, transport))
        out.extend(result if isinstance(result, list) else [result])
    return out


PREFILLS = [
    ("0.1.14", sl.fill_0_1_14(B)),
    ("0.1.20-0.2.9", sl.prefill_0_2_5(B)),
    ("0.1.20-0.2.9", sl.prefill_0_2_5(B).replace("[gpu_id=0]", "[gpu=0]")),  # 0.2.9 tp_worker.py:518
    ("0.2.14-0.3.0", sl.line(T, sl.prefill_0_2_14(B), " TP0", dated=False)),
    ("0.3.2-0.4.3", sl.line(T, sl.prefill_0_4_1(B), " TP0")),
    ("0.4.4-0.4.5|0.4.10-0.5.8", sl.line(T, sl.prefill_0_4_4(B), " TP0")),
    ("0.4.6-0.4.8", sl.line(T, sl.prefill_0_4_4(B).rstrip(", "), " TP0")),
    ("0.4.9", sl.line(T, sl.prefill_0_4_9_pd(B, 5000, 1000, 0.1, 0, 1, 12.5))),
    ("0.5.4-0.5.8", sl.line(T, sl.prefill_0_5_4(B, 41, mamba=0.3), " DP1 TP1")),
    ("0.5.9-0.5.10", sl.line(T, sl.prefill_0_5_10(B, True, 100.0, 55.5))),
    ("0.5.11+", sl.line(T, sl.prefill_0_5_23(B, 77, False, 10.0, occupancy=50.0), ms=True)),
]


@pytest.mark.parametrize(("family", "text"), PREFILLS, ids=[f for f, _ in PREFILLS])
def test_every_prefill_family_is_read_by_key_with_its_numbers(family: str, text: str) -> None:
    """Seqs, computed and cached tokens exactly as printed; the family from the line's own shape."""
    events = parse(text)
    batch = events[0]
    assert isinstance(batch, SglangPrefill), events
    assert (family, 1, 300, 1200) == (batch.family, batch.seqs, batch.computed, batch.cached)
    assert batch.queued == 3


def test_every_decode_family_is_read() -> None:
    """0.1.14's nameless decode line, gpu-tagged, trailing-comma, iteration and 0.5.23 lines."""
    texts = [
        sl.decode_0_1_14(4, 9000, 0.31, 2),
        sl.decode_0_2_5(4, 9000, 0.31, 61.5, 2),
        sl.line(T, sl.decode_0_2_14(4, 9000, 0.31, 61.5, 2), " TP0", dated=False),
        sl.line(T, sl.decode_0_4_4(4, 9000, 0.31, 61.5, 2)),
        sl.line(T, sl.decode_0_5_4(80, 4, 9000, 0.31, 61.5, 2, True), " DP1 TP1"),
        sl.line(T, sl.decode_0_5_10(4, 9000, 0.31, 61.5, 2, False)),
        sl.line(
            T,
            sl.decode_0_5_23(4, 9000, 0.31, 61.5, 2, True)
            + ", fwd occupancy: 12.00%, fwd+idle occupancy: 30.00%",
        ),
    ]
    events = parse(*texts)
    assert all(isinstance(e, SglangDecode) for e in events), events
    decodes = [e for e in events if isinstance(e, SglangDecode)]
    assert {4} == {d.running for d in decodes}
    assert {2} == {d.queued for d in decodes}
    assert [("full", 0.31)] == list(decodes[3].usage)
    assert ["0", "0", "0", "0", "1", "0", "0"] == [d.engine for d in decodes]


def test_usage_parts_become_pools() -> None:
    """SWA (0.4.9 `full=`/`swa=`, 0.5.x `swa token usage`), mamba and HiSparse usage parts."""
    swa = parse(sl.line(T, sl.prefill_0_4_9_pd(B, 5000, 1000, 0.1, 0, 1, 12.5)))[0]
    mamba = parse(sl.line(T, sl.prefill_0_5_4(B, 1, mamba=0.3)))[0]
    hisparse = parse(
        "[2026-10-30 10:00:00] Decode batch, #running-req: 1, #gpu token: 10, gpu token usage: 0.10, "
        "#cpu token: 50, cpu token usage: 0.50, cuda graph: True, gen throughput (token/s): 1.00, "
        "#queue-req: 0"
    )[0]
    assert isinstance(swa, SglangPrefill) and isinstance(mamba, SglangPrefill)
    assert isinstance(hisparse, SglangDecode)
    assert {"full": 0.25, "swa": 0.1} == dict(swa.usage)
    assert {"full": 0.25, "mamba": 0.3} == dict(mamba.usage)
    assert {"gpu": 0.1, "cpu": 0.5} == dict(hisparse.usage)


def test_prefixes_of_every_kind() -> None:
    """Dated, `.mmm`, time-only, rank tags, Ray, a tqdm bar glued in front, `docker logs -t`."""
    body = sl.prefill_0_5_23(B, 0, False, 1.0)
    texts = [
        f"[2026-04-05 20:02:48 DP1 TP2 EP3 PP0] {body}",
        f"[2026-04-05 20:02:48.123 ATTN_CP0 MOE_DP1 TP0] {body}",
        f"(SGLangEngine pid=42, ip=10.0.0.7) [2026-04-05 20:02:48] {body}",
        f"Loading safetensors: 100%|##########| 4/4 [00:02<00:00,  1.73it/s][2026-04-05 20:02:48] {body}",
        f"2026-04-05T20:02:48.123456789Z [2026-04-05 20:02:48] {body}",
    ]
    events = [parse(t)[0] for t in texts]
    assert all(isinstance(e, SglangPrefill) for e in events), events
    times = [e.time for e in events if isinstance(e, SglangPrefill)]
    assert [T + 168, T + 168.123, T + 168, T + 168, T + 168] == times
    assert "1" == events[0].engine  # type: ignore[union-attr]


def test_time_only_stamps_take_the_day_from_the_transport_and_roll_over_midnight() -> None:
    """`[23:59:59 TP0]` then `[00:00:01 TP0]`: one second apart across midnight."""
    body = sl.prefill_0_2_14(B)
    day = T + 4 * 3600 - 5  # 2026-04-05 23:59:55 UTC
    events = parse(f"[23:59:59 TP0] {body}", f"[00:00:01 TP0] {body}", transport=day)
    prefills = [e for e in events if isinstance(e, SglangPrefill)]
    assert day + 4 == prefills[0].time
    assert 2.0 == prefills[1].time - prefills[0].time


def test_unknown_keys_are_counted_and_the_known_ones_read_and_torn_numbers_are_errors() -> None:
    """A batch line with a key of no released version is read for the keys kvwatch knows, and the
    unknown key is counted by its sanitised name; a garbled count is an error."""
    unknown = sl.line(T, sl.prefill_0_5_23(B, 0, False, 1.0) + ", #mystery-req-7: 4")
    torn = sl.line(T, sl.prefill_0_5_23(B, 0, False, 1.0).replace("#new-token: 300", "#new-token: 3x0"))
    events = parse(unknown)
    assert [300] == [e.computed for e in events if isinstance(e, SglangPrefill)]
    assert ["prefill batch +#mystery-req-N"] == [e.shape for e in events if isinstance(e, UnreadFields)]
    assert isinstance(parse(torn)[0], ParseError)


def test_tier_split_keys_of_sglang_pr_26976_are_known() -> None:
    """`#cached-token-device/-host/-storage` (sglang PR #26976) are known keys: nothing counted unknown."""
    tiers = "#cached-token-device: 0, #cached-token-host: 0, #cached-token-storage: 0,"
    body = sl.prefill_0_5_23(B, 0, False, 1.0)
    body = body.replace(f"#cached-token: {B.cached},", f"#cached-token: {B.cached}, {tiers}")
    assert tiers in body
    events = parse(sl.line(T, body))
    assert 1 == sum(isinstance(e, SglangPrefill) for e in events)
    assert not [e for e in events if isinstance(e, UnreadFields)]


def test_context_parallel_copies_with_their_own_throughputs_count_once() -> None:
    """CP ranks print one batch with the same counts but each its own throughput: one event."""
    bodies = [sl.prefill_0_5_23(B, 0, False, 1.0 + i) for i in range(3)]
    assert len(set(bodies)) == 3
    events = parse(*(f"[2026-04-05 20:00:00 ATTN_CP{i} TP{i}] {b}" for i, b in enumerate(bodies)))
    assert 1 == sum(isinstance(e, SglangPrefill) for e in events)


def test_context_parallel_copies_count_once_and_dp_ranks_apart() -> None:
    """ATTN_CP0/1/2 print one batch with identical numbers: one event; DP0 and DP1 are two ranks."""
    body = sl.prefill_0_5_23(B, 0, False, 1.0)
    events = parse(*(f"[2026-04-05 20:00:00 ATTN_CP{i} TP{i}] {body}" for i in range(3)))
    assert 1 == sum(isinstance(e, SglangPrefill) for e in events)
    events = parse(f"[2026-04-05 20:00:00 DP0 TP0] {body}", f"[2026-04-05 20:00:00 DP1 TP1] {body}")
    assert ["0", "1"] == [e.engine for e in events if isinstance(e, SglangPrefill)]


def _chunks(family_fmt: str, own: bool) -> list[str]:
    head = sl.line(T, sl.server_args_repr({"chunked_prefill_size": 4096, "page_size": 1}))
    chunks = [sl.Batch(1, 4096, 1000, 0, 0, 0.1), sl.Batch(1, 4096, 5096 if own else 0, 0, 0, 0.1),
              sl.Batch(1, 808, 9192 if own else 0, 0, 0, 0.1)]  # fmt: skip
    fmt = sl.prefill_0_4_1 if family_fmt == "0.4.1" else sl.prefill_0_4_4
    return [head, *(sl.line(T + i, fmt(c)) for i, c in enumerate(chunks))]


@pytest.mark.parametrize(("version", "own"), [("0.4.1", True), ("0.4.4", False)])
def test_a_chunked_prompt_is_one_request_whatever_its_continuations_print(version: str, own: bool) -> None:
    """Three chunks of one 10000-token prompt: one record, 1000 cached (the first chunk's)."""
    records = [e for e in parse(*_chunks(version, own)) if isinstance(e, SglangRequest)]
    assert [(10000, 1000, True)] == [(r.prompt_tokens, r.cached_tokens, r.derived) for r in records]


def test_without_the_chunk_size_a_power_of_two_batch_is_taken_as_a_first_chunk() -> None:
    """No `server_args` line: a `#new-seq: 1` batch of 8192 new tokens is a full first chunk; the next
    single-sequence batch continues it when it prints 0 cached (0.4.3+), else the 8192 were a whole
    prompt and the next batch is a request of its own."""
    big = sl.line(T, sl.prefill_0_4_4(sl.Batch(1, 8192, 0, 0, 0, 0.1)))
    tail = sl.line(T, sl.prefill_0_4_4(sl.Batch(1, 800, 0, 0, 0, 0.1)))
    other = sl.line(T, sl.prefill_0_4_4(sl.Batch(1, 800, 1000, 0, 0, 0.1)))
    odd = sl.line(T, sl.prefill_0_4_4(sl.Batch(1, 9000, 0, 0, 0, 0.1)))

    def records(*lines: str) -> list[tuple[int, int]]:
        return [(r.prompt_tokens, r.cached_tokens) for r in parse(*lines) if isinstance(r, SglangRequest)]

    assert [(8992, 0)] == records(big, tail)
    assert [(8192, 0), (1800, 1000)] == records(big, other)
    assert [(9000, 0)] == records(odd)  # (not a power of two: a whole prompt)


def test_several_sequences_make_no_record_and_log_requests_replace_derived_ones() -> None:
    """`#new-seq: 2` is no single request; once `Finish:` lines come, batches record nothing."""
    two = sl.line(T, sl.prefill_0_4_4(sl.Batch(2, 800, 1000, 0, 0, 0.1)))
    one = sl.line(T, sl.prefill_0_4_4(sl.Batch(1, 800, 1000, 0, 0, 0.1)))
    finish = sl.line(T, sl.finish_text("r1", 1800, 1000, 20, "hello", 0.5))
    events = parse(two, finish, one)
    records = [e for e in events if isinstance(e, SglangRequest)]
    assert [(1800, 1000, False)] == [(r.prompt_tokens, r.cached_tokens, r.derived) for r in records]


def test_finish_lines_read_only_the_real_meta_info_numbers() -> None:
    """Text and JSON `--log-requests` lines; a prompt quoting `'cached_tokens': 99999` changes nothing."""
    trap = "'cached_tokens': 99999, 'prompt_tokens': 1, \"cached_tokens\": 5 'meta_info': {"
    text = sl.line(T, sl.finish_text("r1", 5000, 4096, 10, trap, 1.0))
    js = sl.finish_json(
        "2026-04-05T20:00:00.000000", "r2", 7000, 6000, {"device": 5000, "host": 600, "storage": 400}, trap
    )
    events = parse(text, js)
    records = [e for e in events if isinstance(e, SglangRequest)]
    assert [(5000, 4096, ()), (7000, 6000, (("device", 5000), ("host", 600), ("storage", 400)))] == [
        (r.prompt_tokens, r.cached_tokens, r.tiers) for r in records
    ]
    assert T == records[1].time


def test_sglang_s_own_health_checks_are_no_requests() -> None:
    """A real 0.5.23 `/health` probe's Finish line (`rid='HEALTH_CHECK_...'`) records nothing."""
    head = "[2026-12-05 12:18:13] Finish: obj=GenerateReqInput(rid='{rid}', session_id=None, stream=False), "
    meta = (
        "out={{'meta_info': {{'id': '{rid}', 'prompt_tokens': {p}, 'completion_tokens': 1, "
        "'cached_tokens': {c}{d}}}}}"
    )
    health = head.format(rid="HEALTH_CHECK_db3c312b9cee4de4b5f95956572f0a2a") + meta.format(
        rid="HEALTH_CHECK_db3c312b9cee4de4b5f95956572f0a2a", p=1, c=0, d=""
    )
    real = head.format(rid="a9e0ca6800cb46ef81198c0ddc093be3") + meta.format(
        rid="a9e0ca6800cb46ef81198c0ddc093be3",
        p=1484,
        c=1390,
        d=", 'cached_tokens_details': {'device': 1390, 'host': 0}",
    )
    events = parse(health, real)
    assert [(1484, 1390, (("device", 1390), ("host", 0)))] == [
        (e.prompt_tokens, e.cached_tokens, e.tiers) for e in events if isinstance(e, SglangRequest)
    ]
    assert None not in events


def test_facts_from_both_server_args_shapes() -> None:
    """`ServerArgs(...)` (<= 0.5.21) and the 0.5.22+ dict; a restart first."""
    old = sl.server_args_repr({"disable_radix_cache": True, "hicache_storage_backend": None, "tp_size": 2})
    new = sl.server_args_dict({"disable_radix_cache": False, "hicache_storage_backend": "mooncake",
                               "hicache_storage_prefetch_policy": "best_effort"})  # fmt: skip
    first, second = parse(sl.line(T, old)), parse(sl.line(T, new))
    facts = {e.key: e.value for e in first if isinstance(e, EngineFact)}
    assert {"prefix_cache": "disabled", "tp_size": "2", "prefetch_logged": "unknown"}.items() <= facts.items()
    assert "cache_storage_backend" not in facts
    facts = {e.key: e.value for e in second if isinstance(e, EngineFact)}
    assert {
        "cache_storage_backend": "mooncake",
        "cache_prefetch_policy": "best_effort",
        "prefetch_logged": "yes",
    }.items() <= facts.items()


def test_hicache_and_access_lines() -> None:
    """Prefetch outcomes by version (DEBUG lines of older builds too), declined benign; access recognised."""
    events = parse(
        sl.line(T, sl.prefetch("success", "r", 4096, 0, 4096, 0)),
        sl.line(
            T,
            "HiCache prefetch dropped req=r completed_local=1 completed_synced=2 matched=0 loaded=512 "
            "released=0 occupied=0",
        ),
        sl.line(T, sl.declined("r", 100, 10)),
        sl.line(T, "Prefetch abc completed with 768 tokens"),
    )
    prefetches = [(e.outcome, e.tokens, e.benign) for e in events if isinstance(e, CachePrefetch)]
    assert [
        ("success", 4096, False),
        ("dropped", 512, False),
        ("declined", 0, True),
        ("success", 768, False),
    ] == prefetches
    access = sl.line(T, sl.access(status="503 Service Unavailable"))
    assert [] == SglangParser("s", ParserSettings()).parse(LogLine("s", access))  # recognised, no event


def test_every_sample_is_detected_as_sglang() -> None:
    """`engine = "auto"` tells every SGLang sample from its head."""
    for log in sample_logs("sglang-", rotated=False):
        assert "sglang" == detect_engine(log.read_text()[:4000]), log.name


def _replay(capsys: pytest.CaptureFixture[str], fmt: str, log: Path) -> str:
    assert 0 == main(["replay", "--format", fmt, "--year", "2026", str(log)])
    return capsys.readouterr().out


def test_metrics_are_exact_sums_of_the_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """Prefill counters equal the sums of `#new-seq`, `#new-token`, `#cached-token` over the lines."""
    log = SAMPLES / "sglang-v0-5-4-dp.log"
    sums: dict[str, list[int]] = {"0": [0, 0, 0], "1": [0, 0, 0]}
    for text in log.read_text().splitlines():
        if "Prefill batch" in text:
            rank = text.split(" DP", 1)[1][0]
            for i, key in enumerate(("#new-seq: ", "#new-token: ", "#cached-token: ")):
                sums[rank][i] += int(text.split(key, 1)[1].split(",")[0])
    body = json.loads(_replay(capsys, "json", log))["metrics"]
    for i, name in enumerate(("seqs", "computed_tokens", "cached_tokens")):
        got = {s["labels"]["engine"]: s["value"] for s in body[f"kvwatch_sglang_prefill_{name}_total"]}
        assert {rank: float(v[i]) for rank, v in sums.items()} == got, name


def test_prompt_text_never_leaves_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    """The 0.4.4 sample's Finish lines carry prompt text: no output format shows any of it."""
    log = SAMPLES / "sglang-v0-4-4.log"
    assert "SECRET-PROMPT-TEXT" in log.read_text()
    for fmt in ("text", "json", "prom", "golden"):
        assert "SECRET-PROMPT-TEXT" not in _replay(capsys, fmt, log), fmt


def test_contract_metrics_and_promtool(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/contract/metrics.txt's SGLang rows exist with their types and labels; promtool is clean."""
    out = _replay(capsys, "prom", SAMPLES / "sglang-v0-5-23-hicache-unused.log")
    # (this sample has no decode lines)
    assert check_contract_rows(out, ("kvwatch_sglang_",), skip=("kvwatch_sglang_decode",)) >= 10
    check_promtool_clean(out)


def test_a_500_kb_finish_line_is_read_live_as_in_replay(tmp_path: Path) -> None:
    """The daemon following a file reads a 500 KB `Finish:` line to the same record replay does."""
    log = tmp_path / "sg.log"
    log.write_text(sl.line(T, sl.server_args_repr({"log_requests": True})) + "\n")
    cfg = write_config(tmp_path / "kv.toml", file_source("sg", log, engine="sglang"))
    kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv.err")
    wait_until(lambda: kv.lines("sg") == 1, what="first line")
    huge = sl.line(T + 1, sl.finish_text("r1", 123456, 120000, 5, "x" * 500_000, 3.0))
    with log.open("a") as f:
        f.write(huge + "\n")
    wait_until(lambda: kv.value("kvwatch_sglang_requests_total", {"source": "sg"}) == 1, what="the record")
    assert 123456 == kv.value("kvwatch_sglang_prompt_tokens_total", {"source": "sg"})
    assert 120000 == kv.value("kvwatch_sglang_cached_tokens_total", {"source": "sg", "tier": "unknown"})
    _, _, body = kv.get("/metrics")
    assert "xxxxxxxx" not in body
    assert 0 == kv.stop()


# -- diagnoses --------------------------------------------------------------------------------


def _windows(*events: object) -> Windows:
    windows = Windows(FACTS)
    for event in events:
        windows.observe(event)  # type: ignore[arg-type]
    return windows


def _fact(key: str, value: str, t: float = T) -> EngineFact:
    return EngineFact("s", t, key, value)


def _request(t: float, prompt: int, cached: int) -> SglangRequest:
    return SglangRequest("s", t, prompt, cached)


def test_prefix_cache_disabled_by_setting_and_by_a_cache_that_never_hits() -> None:
    """Both rules fire; a session reusing its previous turn and a shared system prompt do not."""
    cfg = prefix_cache_disabled.Settings()
    off = _windows(_fact("prefix_cache", "disabled"), _fact("prefix_cache_setting", "--disable-radix-cache"))
    assert ["setting"] == [f.evidence["rule"] for f in prefix_cache_disabled.detect(off, T, cfg)]
    never = [_request(T + i, 4000 + i, 0) for i in range(20)]
    on = _windows(_fact("prefix_cache", "enabled"), *never)
    assert ["never_hits"] == [f.evidence["rule"] for f in prefix_cache_disabled.detect(on, T + 30, cfg)]
    session = [_request(T + i, 4000 + 300 * i, 4000 + 300 * (i - 1) if i else 0) for i in range(20)]
    shared = [_request(T + i, 3000 + 17 * i, 1500) for i in range(20)]
    for healthy in (session, shared):
        assert [] == prefix_cache_disabled.detect(
            _windows(_fact("prefix_cache", "enabled"), *healthy), T + 30, cfg
        )
    assert [] == prefix_cache_disabled.detect(_windows(*never), T + 30, cfg)  # no startup fact: not judged


def _prefetch(t: float, outcome: str, benign: bool = False) -> CachePrefetch:
    return CachePrefetch("s", t, "storage", outcome, 4096, benign=benign)


def test_hicache_storage_unused_fires_resolves_and_spares_the_benign_cases() -> None:
    """Five dropped prefetches fire; one success resolves; declined and best_effort never fire."""
    cfg = hicache_storage_unused.Settings()
    backend = _fact("cache_storage_backend", "mooncake")
    dropped = [_prefetch(T + i, "dropped") for i in range(5)]
    found = hicache_storage_unused.detect(_windows(backend, *dropped), T + 10, cfg)
    assert [{"dropped": 5}] == [f.evidence["outcomes"] for f in found]
    assert [] == hicache_storage_unused.detect(
        _windows(backend, *dropped, _prefetch(T + 6, "success")), T + 10, cfg
    )
    declined = [_prefetch(T + i, "declined", benign=True) for i in range(9)]
    assert [] == hicache_storage_unused.detect(_windows(backend, *declined), T + 10, cfg)
    best = _fact("cache_prefetch_policy", "best_effort")
    assert [] == hicache_storage_unused.detect(_windows(backend, best, *dropped), T + 10, cfg)
    assert [] == hicache_storage_unused.detect(
        _windows(backend, *dropped), T + 2000, cfg
    )  # out of the window


def test_no_signal_names_the_storage_setting_where_prefetches_are_unseen() -> None:
    """A storage backend on a build before 0.5.22 and no prefetch line: info, naming the setting."""
    events = parse(
        sl.line(
            T, sl.server_args_repr({"enable_hierarchical_cache": True, "hicache_storage_backend": "file"})
        )
    )
    windows = _windows(*events)
    found = no_signal.detect(windows, T + 10, no_signal.Settings())
    assert [("info", "--hicache-storage-backend file")] == [
        (f.severity, f.evidence["setting"]) for f in found
    ]
    windows.observe(_prefetch(T + 1, "success"))
    assert [] == no_signal.detect(windows, T + 10, no_signal.Settings())


@pytest.mark.parametrize(
    "name",
    ["sglang-v0-1-14", "sglang-v0-2-5", "sglang-v0-2-14", "sglang-v0-4-1", "sglang-v0-4-4",
     "sglang-v0-4-9-pd", "sglang-v0-5-4-dp", "sglang-v0-5-10-ray"],
)  # fmt: skip
def test_healthy_samples_raise_no_alert_and_recognise_every_line(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Healthy traffic of each version family: every line recognised, no alert."""
    body = json.loads(_replay(capsys, "json", SAMPLES / f"{name}.log"))
    metrics = body["metrics"]
    lines = metrics["kvwatch_lines_total"][0]["value"]
    assert lines == metrics["kvwatch_lines_recognized_total"][0]["value"]
    assert [] == body["alerts"]


def test_all_miss_prefills_without_server_args_reach_prefix_reuse_broken(tmp_path: Path) -> None:
    """Ten growing single prompts with nothing cached and no `server_args` line: prefix_reuse_broken."""
    import contextlib
    import io

    from kvwatch.cli import main

    log = tmp_path / "sglang.log"
    log.write_text(
        "".join(
            f"[2026-08-17 10:{i:02d}:00 TP0] Prefill batch, #new-seq: 1, #new-token: {5000 + 700 * i}, "
            "#cached-token: 0, token usage: 0.10, #running-req: 0, #queue-req: 0, #pending-token: 0, "
            "cuda graph: False, input throughput (token/s): 1000.00\n"
            for i in range(10)
        )
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert 0 == main(["replay", "--format", "json", str(log)])
    assert "prefix_reuse_broken" in {a["alert"] for a in json.loads(out.getvalue())["alerts"]}
