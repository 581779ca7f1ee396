"""LMCache's lines inside vLLM's log, built from each release's format strings (`pip download lmcache==X`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvwatch.engines import FACTS, detect_engine, make_parser, markers_of
from kvwatch.engines.lmcache.events import (
    LmcacheFailure,
    LmcacheLookup,
    LmcachePrefetch,
    LmcacheStoreRequest,
    LmcacheTransfer,
)
from kvwatch.model import EngineFact, LogLine
from kvwatch.parsers.base import ParseError, ParserSettings

GIB = 1 << 30
STAMP = "2026-09-14 08:00:05,123"
T = 1789372805.0  # 2026-09-14T08:00:05Z
ADAPTER = "(vllm_v1_adapter.py:1327:lmcache.integration.vllm.vllm_v1_adapter)"
ENGINE = "(cache_engine.py:552:lmcache.v1.cache_engine)"
COLOUR = {"DEBUG": "\x1b[1m", "INFO": "\x1b[32;20m", "WARNING": "\x1b[33;20m", "ERROR": "\x1b[31;20m"}


def rec(message: str, level: str = "INFO", where: str = ENGINE, tag: str = "") -> str:
    """A record as lmcache/logging.py's CustomFormatter prints it (0.3.0-0.5.6), behind a vLLM tag."""
    return f"{tag}{COLOUR[level]}[{STAMP}] LMCache {level}:\x1b[0m {message} \x1b[3m{where}\x1b[0m"


def parse(*texts: str) -> list[object]:
    """Every event of the lines through a vLLM source's parser (but the fact that LMCache lines are read)."""
    parser = make_parser("vllm", "s", ParserSettings())
    events: list[object] = []
    for text in texts:
        result = parser.parse(LogLine("s", text))
        assert isinstance(result, list), (text, result)
        events += result
    facts = [e for e in events if isinstance(e, EngineFact)]
    assert [("lmcache_lines", "yes")] == [(f.key, f.value) for f in facts]
    return [e for e in events if not isinstance(e, EngineFact)] + parser.flush()


LOOKUPS = [
    # 0.3.0 vllm_v1_adapter.py:745 .. 0.3.12:1602 (and vLLM 0.33's in-tree copy): no computed tokens
    (
        "Reqid: cmpl-a-0, Total tokens 1024, LMCache hit tokens: 768, need to load: 768",
        (1024, 768, 768, None),
    ),
    # <= 0.3.12 prints hit - computed, negative when vLLM holds more (LMCache #2703): added as 0
    ("Reqid: cmpl-a-0, Total tokens 1024, LMCache hit tokens: 768, need to load: -64", (1024, 768, 0, None)),
    # 0.3.15 vllm_v1_adapter.py:1311 .. 0.5.6:1477
    (
        "Reqid: cmpl-a-0, Total tokens 2048, Inference Engine computed tokens: 512, LMCache hit tokens: 1536, "  # noqa: E501
        "need to load: 1024",
        (2048, 1536, 1024, 512),
    ),
    # 0.3.15-0.5.6 min_retrieve form: nothing loaded
    (
        "Reqid: cmpl-a-0, Total tokens 2048, Inference Engine computed tokens: 0, LMCache hit tokens: 256, "
        "but need to load: 256 < min_retrieve 512, skip retrieve but record for save skip",
        (2048, 256, 0, 0),
    ),
]


@pytest.mark.parametrize(("message", "expected"), LOOKUPS)
def test_lookup_forms(message: str, expected: tuple[int, int, int, int | None]) -> None:
    """Each release's lookup line gives query, hit, need (never negative) and vLLM's computed tokens."""
    (event,) = parse(rec(message, where=ADAPTER, tag="(EngineCore_DP0 pid=7) "))
    assert isinstance(event, LmcacheLookup)
    assert expected == (event.query_tokens, event.hit_tokens, event.need_load_tokens, event.local_tokens)
    assert T == event.time


def test_lookup_counts_once_per_request_until_it_ran() -> None:
    """`None.` and repeats do not count; after a store of the request, a new lookup counts again."""
    none = "Reqid: r1, Total tokens 900, LMCache hit tokens: None."  # 0.3.6 vllm_v1_adapter.py:1088
    none15 = "Reqid: r1, Total tokens 900, Inference Engine computed tokens: 0, LMCache hit tokens: None."
    looked = "Reqid: r1, Total tokens 900, LMCache hit tokens: 512, need to load: 512"
    store = "[req_id=r1] Stored 388 out of total 388 tokens. size: 0.0533 GB, cost 4.0000 ms, throughput: 13.3 GB/s"  # noqa: E501
    events = parse(rec(none), rec(none15), rec(looked), rec(looked), rec(store), rec(looked))
    assert 2 == sum(e.lookups for e in events if isinstance(e, LmcacheLookup))


STORES = [
    # 0.3.3 cache_engine.py:251 .. 0.3.12:446
    (
        "Stored 512 out of total 768 tokens. size: 0.0703 gb, cost 5.1000 ms, throughput: 13.7900 GB/s; "
        "offload_time: 2.0000 ms, put_time: 3.1000 ms",
        (512, 768, round(0.0703 * GIB), 0.0051),
    ),
    # 0.3.15 cache_engine.py:544 .. 0.5.6:588
    (
        "[req_id=cmpl-b-0] Stored 256 out of total 256 tokens. size: 0.0352 GB, cost 2.5000 ms, "
        "throughput: 14.0800 GB/s; offload_time: 1.0000 ms, put_time: 1.5000 ms",
        (256, 256, round(0.0352 * GIB), 0.0025),
    ),
    # 0.3.15+ layerwise cache_engine.py:721
    (
        "[req_id=cmpl-b-0] Stored 256 out of total 512 tokens. size: 0.0352 GB, cost 2.5000 ms, throughput: 14.08 GB/s",  # noqa: E501
        (256, 512, round(0.0352 * GIB), 0.0025),
    ),
    # 0.3.0 cache_engine.py:287 (DEBUG), 0.3.3-0.3.12 layerwise (DEBUG)
    ("Stored 512 out of total 1024 tokens", (512, 1024, None, None)),
    # MP mode: v1/multiprocess/server.py (0.3.12-0.4.x), modules/engine_driven_transfer.py:448 (0.5.6)
    ("Stored 1024 tokens in 0.012 seconds", (1024, None, None, 0.012)),
]


@pytest.mark.parametrize(("message", "expected"), STORES)
def test_store_forms(message: str, expected: tuple[int, int | None, float | None, float | None]) -> None:
    """Each release's store line gives stored and offered tokens, bytes and seconds, per TP worker."""
    (event,) = parse(rec(message, tag="(Worker_TP1 pid=9) "))
    assert isinstance(event, LmcacheTransfer) and not event.load and "tp1" == event.worker
    assert expected[:3] == (event.tokens, event.asked, event.bytes)
    assert expected[3] == (None if event.seconds is None else pytest.approx(event.seconds))


RETRIEVES = [
    # 0.3.3 cache_engine.py:500 (f-string; 0.3.0 DEBUG)
    ("Retrieved 256 out of 512 out of total 1024 tokens", (256, 512, None, 1)),
    # 0.3.6 cache_engine.py:519
    (
        "Retrieved 512 out of total 512 out of total 1024 tokens. size: 0.0703 gb, cost 3.0000 ms, "
        "throughput: 23.4 GB/s;",
        (512, 512, round(0.0703 * GIB), 0),
    ),
    # 0.3.9 cache_engine.py:513 .. 0.3.12:742
    (
        "Retrieved 512 out of 512 required tokens (from 1024 total tokens). size: 0.0703 gb, cost 3.0000 ms, "
        "throughput: 23.4333 GB/s;",
        (512, 512, round(0.0703 * GIB), 0),
    ),
    # 0.3.15 cache_engine.py:873 .. 0.5.6:985
    (
        "[req_id=cmpl-c-0] Retrieved 0 out of 768 required tokens (from 1024 total tokens). size: 0.0000 gb, "
        "cost 0.5000 ms, throughput: 0.0000 GB/s;",
        (0, 768, 0, 1),
    ),
    # 0.3.15+ layerwise cache_engine.py:1024
    ("[req_id=cmpl-c-0] Retrieved 768 out of 768 out of total 1024 tokens", (768, 768, None, 0)),
    # MP mode
    ("Retrieved 512 tokens in 0.004 seconds", (512, None, None, 0)),
]


@pytest.mark.parametrize(("message", "expected"), RETRIEVES)
def test_retrieve_forms(message: str, expected: tuple[int, int | None, float | None, int]) -> None:
    """Each release's retrieve line gives loaded and required tokens, bytes, and whether it fell short."""
    (event,) = parse(rec(message, tag="(VllmWorker rank=1 pid=9) "))
    assert isinstance(event, LmcacheTransfer) and event.load and "tp1" == event.worker
    assert expected == (event.tokens, event.asked, event.bytes, event.short)


def test_retrieve_error_pair_and_warnings() -> None:
    """The adapter's ERROR pair is one failure with its request and lost tokens; warnings by kind."""
    events = parse(
        # 0.3.15+ vllm_v1_adapter.py:845 ("Request %s" with no space), then :851
        rec(
            "Request cmpl-d-0The number of retrieved tokens is less than the expected number of tokens! "
            "This should not happen!",
            "ERROR",
            ADAPTER,
            "(Worker_TP0 pid=3) ",
        ),
        rec("Num retrieved tokens: 256, num expected tokens: 768", "ERROR", ADAPTER, "(Worker_TP0 pid=3) "),
        # 0.3.6+ cache_engine.py
        rec("The cache block is in the storage, but it can't be retrieved", "WARNING"),
        # 0.3.0-0.4.x adapter (LMCache #842)
        rec("In connector.start_load_kv, but the attn_metadata is None", "WARNING", ADAPTER),
        # 0.5.6 cache_engine.py:519 (two spaces: the format's own)
        rec(
            "Local cpu memory under pressure so choosing to store only  3 total chunks of KV cache.",
            "WARNING",
        ),
        # 0.5.6 local_cpu_backend.py:725
        rec(
            "No eviction candidates found in local cpu backend. Local cpu memory is under pressure. "
            "Waiting for 0.1 seconds before retrying.",
            "WARNING",
        ),
        rec("No eviction candidates found. Disk space under pressure.", "WARNING"),
    )
    kinds = [(e.kind, e.request, e.tokens, e.retrieve) for e in events if isinstance(e, LmcacheFailure)]
    assert [
        ("retrieve_error", "cmpl-d-0", 512, True),
        ("unretrievable_block", "", None, True),
        ("no_attn_metadata", "", None, True),
        ("cpu_memory_pressure", "", None, False),
        ("cpu_memory_pressure", "", None, False),
        ("storage_pressure", "", None, False),
    ] == kinds


def test_storing_prefetch_and_quiet_forms() -> None:
    """Storing lines, MP prefetches; the adapter's layerwise count and capped loads: recognised, unsummed."""
    events = parse(
        # 0.3.0-0.5.6 vllm_v1_adapter.py (INFO to 0.3.12)
        rec("Storing KV cache for 512 out of 1024 tokens (skip_leading_tokens=512) for request cmpl-e-0"),
        # before 0.3.0 (lmcache.experimental, LMCache #485)
        rec("Storing KV cache for 512 out of 1024 tokens for request cmpl-e-0"),
        # 0.5.6 storage_manager.py:651
        rec(
            "Prefetch request completed (L1+L2): 3/4 retained keys (2 L1, 1 L2) in 1.5 ms "
            "(external_request_id=cmpl-e-0, prefetch_request_id=7)"
        ),
        rec("Retrieved 768 tokens", where=ADAPTER),
        rec(
            "Reqid: cmpl-e-0, Chunked KV loading: capped from 4096 to 2048 external tokens (max_tokens_per_load=2048)",  # noqa: E501
            "DEBUG",
            ADAPTER,
        ),
    )
    assert [LmcacheStoreRequest, LmcacheStoreRequest, LmcachePrefetch] == [type(e) for e in events]
    prefetch = events[2]
    assert isinstance(prefetch, LmcachePrefetch) and (3, 4) == (prefetch.hit_keys, prefetch.requested_keys)


def test_frames_tags_and_unknown_lines() -> None:
    """Plain, tqdm-prefixed and 2024 records parse; workers by TP rank; unknown messages: not recognised."""
    parser = make_parser("vllm", "s", ParserSettings())
    plain = f"[{STAMP}] LMCache INFO: Stored 256 tokens in 0.010 seconds {ENGINE}"
    bar = "Loading:  50%|#####     | 1/2\r" + rec(
        "Stored 256 tokens in 0.010 seconds", tag="(Worker_DP1_TP3 pid=4) "
    )
    old = "\x1b[33mINFO LMCache: \x1b[0mStoring KV cache for 256 out of 256 tokens for request r [2024-12-09 11:20:25,926] -- /x/vllm_adapter.py:35"  # noqa: E501
    ray = rec("Stored 256 tokens in 0.010 seconds", tag="(RayWorkerWrapper pid=4, ip=10.0.0.2) ")
    workers = []
    for text in (plain, bar, old, ray):
        result = parser.parse(LogLine("s", text))
        assert isinstance(result, list), text
        (event,) = [e for e in result + parser.flush() if not isinstance(e, EngineFact)]
        workers.append(getattr(event, "worker", None))
    assert ["tp0", "dp1-tp3", "tp0", "unknown"] == workers
    assert parser.parse(LogLine("s", rec("Creating LMCacheEngine with config: ..."))) is None
    # an LMCache-in-SGLang line (LMCRadixCache) is not one of these shapes
    assert parser.parse(LogLine("s", rec("LMCRadixCache: matched 3 pages"))) is None
    bad = rec("Stored 256 tokens in 0.010 seconds").replace("2026-09-14", "2026-02-31")
    assert isinstance(parser.parse(LogLine("s", bad)), ParseError)
    # vLLM's own line naming the connector stays vLLM's
    assert parser.parse(
        LogLine(
            "s",
            "INFO 09-14 08:00:00 [factory.py:62] Creating v1 connector with name: LMCacheConnectorV1 and engine_id: x",  # noqa: E501
        )
    )


def test_registry_layers_markers_and_sniff() -> None:
    """vLLM sources look for LMCache's markers; a log of LMCache's alone is detected as lmcache."""
    markers = markers_of("vllm") or ()
    assert "] LMCache " in markers and " LMCache: " in markers
    assert "lmcache" == detect_engine(rec("Stored 256 tokens in 0.010 seconds") + "\n")


def test_no_signal_names_lmcache_log_level_when_its_lines_are_missing() -> None:
    """An LMCache connector, prompts flowing and no LMCache line: no_signal names LMCACHE_LOG_LEVEL;
    one LMCache line read, or no traffic yet, and it says nothing."""
    from kvwatch.detectors import no_signal
    from kvwatch.windows.window import Windows

    def verdict(*lines: str) -> list[str]:
        windows = Windows(FACTS)
        parser = make_parser("vllm", "v", ParserSettings(year=2026))
        for text in lines:
            result = parser.parse(LogLine("v", text))
            for event in result if isinstance(result, list) else []:
                windows.observe(event)
        found = no_signal.detect(windows, T + 60, no_signal.Settings())
        return [str(f.evidence.get("setting")) for f in found]

    connector = "(EngineCore_DP0 pid=7) INFO 09-14 08:00:00 [factory.py:62] Creating v1 connector with name: LMCacheConnectorV1 and engine_id: e"  # noqa: E501
    busy = "(APIServer pid=1) INFO 09-14 08:00:10 [loggers.py:236] Engine 000: Avg prompt throughput: 900.0 tokens/s, Avg generation throughput: 30.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: 20.0%"  # noqa: E501
    idle = busy.replace("900.0 tokens/s, Avg", "0.0 tokens/s, Avg")
    store = rec("Stored 256 tokens in 0.010 seconds")
    assert ["LMCACHE_LOG_LEVEL=INFO"] == verdict(connector, busy)
    assert [] == verdict(connector, store, busy)
    assert [] == verdict(connector, idle)
    assert [] == verdict(busy)


def test_sums_are_the_lines_sums_whatever_the_path() -> None:
    """Lines summed into stretches (the fast path, the general one, a stretch cut by a failure or by 10 s)
    give the sums of the lines; a short load stays its own event, in time order."""
    stored = "[req_id=r{k}] Stored 256 out of total 512 tokens. size: 0.0352 GB, cost 2.5000 ms, throughput: 14.08 GB/s; offload_time: 1.0000 ms, put_time: 1.5000 ms"  # noqa: E501
    got = "[req_id=r{k}] Retrieved 256 out of 256 required tokens (from 512 total tokens). size: 0.0352 gb, cost 1.2500 ms, throughput: 28.16 GB/s;"  # noqa: E501
    short = "[req_id=r9] Retrieved 0 out of 256 required tokens (from 512 total tokens). size: 0.0000 gb, cost 0.5000 ms, throughput: 0.0000 GB/s;"  # noqa: E501
    parser = make_parser("vllm", "s", ParserSettings())
    events: list[object] = []
    for k in range(30):
        stamp = f"2026-09-14 08:00:{k:02d},{k:03d}"
        for tag in ("(Worker_TP0 pid=1) ", "(Worker_TP1 pid=2) "):
            for message in (stored.format(k=k), got.format(k=k)) if k != 15 else (short,):
                line = rec(message, tag=tag).replace(STAMP, stamp)
                result = parser.parse(LogLine("s", line))
                assert isinstance(result, list)
                events += result
    events += parser.flush()
    transfers = [e for e in events if isinstance(e, LmcacheTransfer)]
    assert [e.time for e in transfers] == sorted(e.time for e in transfers)
    stores = [e for e in transfers if not e.load and e.worker == "tp1"]
    loads = [e for e in transfers if e.load and e.worker == "tp1"]
    assert (29, 29 * 256, 29 * 512, round(29 * 352 * GIB / 1e4)) == (
        sum(e.lines for e in stores), sum(e.tokens for e in stores), sum(e.asked or 0 for e in stores),
        sum(e.bytes or 0 for e in stores),
    )  # fmt: skip
    assert pytest.approx(29 * 0.0025) == sum(e.seconds or 0 for e in stores)
    assert (30, 29 * 256, 1) == (
        sum(e.lines for e in loads),
        sum(e.tokens for e in loads),
        sum(e.short for e in loads),
    )
    assert len(stores) < 10  # summed, not one per line
    assert ["r9"] == [e.request for e in loads if e.short]


def test_a_log_of_lmcache_alone_hands_each_line_on_at_once() -> None:
    """An MP-mode server's own log (engine lmcache) may fall silent: no sum waits for a later line."""
    parser = make_parser("lmcache", "m", ParserSettings())
    for message, load in (
        ("Stored 256 tokens in 0.010 seconds", False),
        ("Retrieved 512 tokens in 0.004 seconds", True),
    ):
        result = parser.parse(LogLine("m", rec(message)))
        assert isinstance(result, list)
        (event,) = [e for e in result if not isinstance(e, EngineFact)]
        assert isinstance(event, LmcacheTransfer) and load == event.load
    assert [] == parser.flush()


def test_the_cache_engine_alone_reads_a_short_load_as_a_partial_hit() -> None:
    """LMCache's engine run alone (no adapter's lookups) is asked for whole prompts: short is no failure."""
    miss = "[req_id=r1] Retrieved 0 out of 484 required tokens (from 484 total tokens). size: 0.0000 gb, cost 0.2658 ms, throughput: 0.0000 GB/s;"  # noqa: E501
    partial = "[req_id=r2] Retrieved 448 out of 634 required tokens (from 634 total tokens). size: 0.0004 gb, cost 0.1622 ms, throughput: 2.6339 GB/s;"  # noqa: E501
    where = "(cache_engine.py:985:lmcache.v1.cache_engine)"
    alone = make_parser("lmcache", "m", ParserSettings())
    loads = []
    for message in (miss, partial):
        result = alone.parse(LogLine("m", rec(message, where=where)))
        assert isinstance(result, list)
        loads += [e for e in result if isinstance(e, LmcacheTransfer)]
    loads += [e for e in alone.flush() if isinstance(e, LmcacheTransfer)]
    sums = (sum(e.tokens for e in loads), sum(e.asked or 0 for e in loads), sum(e.short for e in loads))
    assert (448, 1118, 0) == sums
    # ... but once the adapter's lookup lines are there, a load is what the lookup found: short is a failure.
    looked = make_parser("lmcache", "m", ParserSettings())
    lookup = (
        "Reqid: r2, Total tokens 634, Inference Engine computed tokens: 0, LMCache hit tokens: 634, "
        "need to load: 634"
    )
    looked.parse(LogLine("m", rec(lookup, where=ADAPTER)))
    result = looked.parse(LogLine("m", rec(partial, where=where)))
    assert isinstance(result, list)
    assert [1] == [e.short for e in result if isinstance(e, LmcacheTransfer)]


def test_record_times_across_midnight_and_bad_stamps() -> None:
    """Stamps of one day and the next read to the second (the day's midnight remembered); a minute 61 is
    a ParseError, also on a day already seen."""
    parser = make_parser("lmcache", "m", ParserSettings())
    times = []
    for stamp in ("2026-09-14 23:59:59,999", "2026-09-15 00:00:00,001", "2026-09-15 07:30:05,000"):
        result = parser.parse(LogLine("m", rec("Stored 256 tokens in 0.010 seconds").replace(STAMP, stamp)))
        assert isinstance(result, list)
        times += [e.time for e in result if isinstance(e, LmcacheTransfer)]
    assert [1789430399.0, 1789430400.0, 1789457405.0] == times
    bad = rec("Stored 256 tokens in 0.010 seconds").replace(STAMP, "2026-09-15 07:61:05,000")
    assert isinstance(parser.parse(LogLine("m", bad)), ParseError)


def _wild_metrics(name: str) -> dict[str, list[float]]:
    """`kvwatch replay --format json` of a real excerpt in tests/wild/: each family's sample values."""
    import contextlib
    import io
    import json
    from pathlib import Path

    from kvwatch.cli import main as cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert 0 == cli(["replay", "--format", "json", str(Path(__file__).resolve().parent / "wild" / name)])
    return {k: [s["value"] for s in v] for k, v in json.loads(out.getvalue())["metrics"].items()}


def test_lmcache_lines_in_an_sglang_log_are_read_as_its_layer() -> None:
    """SGLang carries LMCache: its adapter's retrieve line and the Stored line are read beside the batches."""
    metrics = _wild_metrics("lmcache-in-sglang.log")
    assert [80] == metrics["kvwatch_lmcache_stored_tokens_total"]
    assert [16] == metrics["kvwatch_lmcache_retrieved_tokens_total"]
    assert [34] == metrics["kvwatch_sglang_prefill_cached_tokens_total"]


def test_sglang_adapter_skip_and_store_kv_lines_of_the_releases_are_recognised(tmp_path: Path) -> None:
    """LMCache 0.5.0-0.5.6's SGLang adapter: `retrieve skipped: ... no new tokens to retrieve` loads
    nothing, `store_kv started` / `completed` are recognised without adding to the engine's `Stored` line."""
    import contextlib
    import io

    from kvwatch.cli import main as cli

    tail = "(sglang_adapter.py:{}:lmcache.integration.sglang.sglang_adapter)"
    log = tmp_path / "lm.log"
    log.write_text(
        "[2026-01-20 21:24:54,336] LMCache INFO: LMCache retrieve skipped: lookup=32, offset=32, no new "
        f"tokens to retrieve {tail.format(325)}\n"
        "[2026-01-20 21:24:54,340] LMCache INFO: LMCache store_kv started: tokens=80, num_layers=28, "
        f"offset=0 {tail.format(368)}\n"
        "[2026-01-20 21:24:54,347] LMCache INFO: Stored 80 out of total 80 tokens. size: 0.0107 GB, cost "
        "2.1000 ms, throughput: 5.0952 GB/s; offload_time: 2.0000 ms, put_time: 0.1000 ms "
        "(cache_engine.py:588:lmcache.v1.cache_engine)\n"
        "[2026-01-20 21:24:54,348] LMCache INFO: LMCache store_kv completed: stored 80 tokens "
        f"{tail.format(410)}\n"
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert 0 == cli(["replay", "--engine", "lmcache", "--format", "json", str(log)])
    metrics = json.loads(out.getvalue())["metrics"]
    assert [4] == [s["value"] for s in metrics["kvwatch_lines_recognized_total"]]
    assert [80] == [s["value"] for s in metrics["kvwatch_lmcache_stored_tokens_total"]]
    assert not [s for s in metrics.get("kvwatch_lmcache_retrieved_tokens_total", []) if s["value"]]


def test_2024_store_skips_and_injections_are_stores_and_loads() -> None:
    """lmcache_vllm's `Store skips N tokens and then stores M tokens` is a store of M; `Injected token
    number: K` a load of K (LMCache#469's lines)."""
    metrics = _wild_metrics("lmcache-2024-store-skips.log")
    assert [3302] == metrics["kvwatch_lmcache_stored_tokens_total"]
    assert [2] == metrics["kvwatch_lmcache_retrieves_total"]


def test_mp_window_stats_and_remote_put_lines_are_recognised_not_summed_twice(tmp_path: Path) -> None:
    """MP mode's `L0<->L1 stats [...] last Xs: store ops=... | retrieve ops=...` (and its cumulative twin)
    and remote connectors' DEBUG `[...]Bytes offloaded: X MBytes in Y ms` / `Bytes loaded` are LMCache's
    (lmcache 0.5.6 extra_stats.py, instrumented_connector.py; 0.3.9's and 0.3.0's forms too), recognised
    without adding to the sums: the per-operation INFO lines beside them already count those transfers."""
    import contextlib
    import io

    from kvwatch.cli import main as cli

    log = tmp_path / "lm.log"
    log.write_text(
        "[2026-01-20 21:24:54,347] LMCache INFO: L0<->L1 stats [cuda:0] last 10.0s: store ops=3 tokens=768 "
        "size=0.10GB avg_copy=1.20GB/s | retrieve ops=0 tokens=0 size=0.00GB avg_copy=n/a "
        "(extra_stats.py:160:x)\n"
        "[2026-01-20 21:24:54,347] LMCache INFO: L0<->L1 stats [cuda:0] cumulative: store ops=3 tokens=768 "
        "size=0.10GB avg_copy=1.20GB/s | retrieve ops=0 tokens=0 size=0.00GB avg_copy=n/a "
        "(extra_stats.py:169:x)\n"
        "[2026-01-20 21:24:54,348] LMCache DEBUG: [InstrumentedRemoteConnector(MooncakestoreConnector)]Bytes "
        "offloaded: 12.345 MBytes in 3.210 ms (instrumented_connector.py:40:x)\n"
        # its get / batched_get twin; 0.3.9's f-string (`ms` unspaced); 0.3.0's (no name, no time)
        "[2026-01-20 21:24:54,349] LMCache DEBUG: [InstrumentedRemoteConnector(<lmcache.v1.storage_backend."
        "connector.redis_connector.RedisConnector object at 0x7f3a5c1e2d90>)]Bytes loaded: 37.749 MBytes in "
        "20.112 ms (instrumented_connector.py:166:x)\n"
        "[2026-01-20 21:24:54,350] LMCache DEBUG: [InstrumentedRemoteConnector(x)]Bytes offloaded: 12.345 "
        "MBytes in 3.210ms (instrumented_connector.py:40:x)\n"
        "[2026-01-20 21:24:54,351] LMCache DEBUG: Bytes offloaded: 12.3450 MBytes "
        "(instrumented_connector.py:51:x)\n"
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert 0 == cli(["replay", "--engine", "lmcache", "--format", "json", str(log)])
    metrics = json.loads(out.getvalue())["metrics"]
    assert [6] == [s["value"] for s in metrics["kvwatch_lines_recognized_total"]]
    assert not [s for s in metrics.get("kvwatch_lmcache_stores_total", []) if s["value"]]
