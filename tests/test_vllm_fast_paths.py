"""The vLLM parser's fast paths (on by default, off with `ParserSettings(fast_paths=False)`, as replay's
KVWATCH_REPLAY_PLAIN=1 turns them off) give exactly what its general way gives, on random lines."""

from __future__ import annotations

import pickle
import random

from kvwatch.engines.vllm.events import VllmKvTransfer, VllmStats
from kvwatch.engines.vllm.kv import KvPayloadError, read_kv_payload
from kvwatch.engines.vllm.parser import VllmParser
from kvwatch.model import LogLine
from kvwatch.parsers.base import ParseResult, ParserSettings

KEYS = (
    "vllm:kv_offload_store_bytes",
    "vllm:kv_offload_load_bytes",
    "vllm:kv_offload_lookup_sync_delay_seconds_count",
    "vllm:kv_offload_lookup_async_delay_seconds_count",
    "vllm:kv_offload_cpu_cache_usage_perc",
    "GPU_to_CPU_total_bytes",
    "CPU_to_GPU_total_bytes",
    "Num successful transfers",
    "x_to_y",
    " vllm:kv_offload_store_bytes",
    "",
    "a/b",
    "k:('fs', 'a')",
    "Avg prompt throughput: x",  # (with the next: a stats line to _message)
    "Running: y",
)
VALUES = (
    *("0", "8", "140", "2256535552", "0.0", "0.0008086304692276825", "1e-05", "1.5e+16"),
    *("1e400", "nan", "inf", "-1", "-0", "+3", "1_000", " 7", "", "1=2", "abc", "\u0663"),
    *("9" * 23, "9" * 400, "0x10", "1.", ".5", "True", "{'a': 1}", "np.float64(2.5)"),
)


def payload(rng: random.Random) -> str:
    """A KV Transfer payload, mostly well formed, with now and then a bad key, value or separator.

    No key twice: the quick way does not read a payload that has one (vLLM prints each key once).
    """
    items = []
    pool = KEYS[:7] if rng.random() < 0.7 else KEYS
    for key in rng.sample(pool, rng.randint(1, 7)):
        value = rng.choice(VALUES[:8]) if rng.random() < 0.85 else rng.choice(VALUES)
        items.append(key + ("=" if rng.random() < 0.97 else rng.choice(("", "==", " = "))) + value)
    separators = [", " if rng.random() < 0.95 else rng.choice((",", ",  ", ", , ")) for _ in items]
    return "".join(sep + item for sep, item in zip(separators, items, strict=True))[2:]


def outcome(text: str, fast: bool) -> object:
    """read_kv_payload's result, or the error it raises."""
    try:
        return read_kv_payload(text, fast=fast)
    except KvPayloadError as err:
        return ("error", str(err))


def test_flat_payloads_read_as_the_general_way() -> None:
    """A KV Transfer payload reads the same the quick way and the general way, and most are read."""
    rng = random.Random(7)
    texts = [payload(rng) for _ in range(4000)]
    fast = [outcome(text, True) for text in texts]
    assert fast == [outcome(text, False) for text in texts]
    assert sum(type(got) is tuple and got[0] != "error" for got in fast) > 1000


def stats_message(rng: random.Random) -> str:
    """A V1 stats message, mostly of the common shape, now and then with an odd number in it."""

    def number(typical: str) -> str:
        return typical if rng.random() < 0.9 else rng.choice(("100.1", "9" * 21, "1e3", "-1", "nan", "007"))

    engine = rng.choice(("Engine 000: ", "Engine 012: ", "2 Engines Aggregated: ", ""))
    fields = [
        f"Avg prompt throughput: {number(f'{rng.uniform(0, 5000):.1f}')} tokens/s",
        f"Avg generation throughput: {number(f'{rng.uniform(0, 500):.1f}')} tokens/s",
        f"Running: {number(str(rng.randint(0, 40)))} reqs",
        f"Waiting: {number(str(rng.randint(0, 9)))} reqs",
    ]
    if rng.random() < 0.3:
        fields.append(f"Preemptions: {number(str(rng.randint(0, 3)))}")
    fields.append(f"GPU KV cache usage: {number(f'{rng.uniform(0, 100):.1f}')}%")
    fields.append(f"Prefix cache hit rate: {number(f'{rng.uniform(0, 100):.1f}')}%")
    if rng.random() < 0.7:
        fields.append(f"External prefix cache hit rate: {number(f'{rng.uniform(0, 100):.1f}')}%")
    return engine + ", ".join(fields) + rng.choice(("", "", ".", " "))


def line(rng: random.Random) -> LogLine:
    """A vLLM line: a header of one of several shapes (odd dates too), then stats, KV or other text."""
    prefix = rng.choice(("(APIServer pid=1) ", "(EngineCore_DP1 pid=81) ", "", "[vllm] "))
    level = rng.choice(("INFO", "INFO", "WARNING", "info"))
    stamp = rng.choice(("08-18 01:12:10", "08-18 01:12:10", "08-18 01:12:20", "12-31 23:59:59"))
    if rng.random() < 0.05:  # no such date or time
        stamp = rng.choice(("02-30 01:00:00", "01-01 24:00:00", "13-01 00:00:00"))
    where = rng.choice(("[loggers.py:310] ", "[metrics.py:103] ", "loggers.py:310] ", "[a b.py:1] "))
    kind = rng.random()
    if kind < 0.45:
        message = stats_message(rng)
    elif kind < 0.9:
        message = "KV Transfer metrics: " + payload(rng)
    else:
        message = rng.choice(("Prefix cache hit rate: GPU: 1.0%, CPU: 2.0%", "vLLM server version 0.26.0"))
    text = f"{prefix}{level} {stamp} {where}{message}"
    if rng.random() < 0.03:
        text = rng.choice(("\x1b[32m", "x\r")) + text
    transport = rng.choice((None, 1787015530.5, 1787015530.5 + 200 * 86400, 1798761599.0))
    return LogLine("v", text, transport)


def test_common_lines_parse_as_the_general_way() -> None:
    """parse() with its fast paths gives the results of the general way, line after line, and most
    lines give a stats or KV Transfer event."""
    rng = random.Random(11)
    lines = [line(rng) for _ in range(6000)]

    def results(fast: bool) -> list[ParseResult]:
        parser = VllmParser("v", ParserSettings(now_year=2026, fast_paths=fast))
        return [parser.parse(item) for item in lines]

    fast = results(True)
    assert fast == results(False)
    wanted = (VllmStats, VllmKvTransfer)
    read = [r for r in fast if isinstance(r, list) and any(isinstance(e, wanted) for e in r)]
    assert len(read) > 1000


def test_vllm_events_pickle_to_themselves() -> None:
    """vLLM's stats and KV events (a replay's parsing child sends them pickled) come back equal, every
    field set and left at its default."""
    stats = VllmStats("v", 1.5, "all", 955.5, 60.7, 4, 1, 0.451, 0.925, 0.1, 3, "CPU", True)
    kv = VllmKvTransfer("v", 2.5, "1", 7, None, 3)
    for event in (
        stats,
        VllmStats("v", 1.0, "0", 1.0, 2.0, 3, 4, None),
        kv,
        VllmKvTransfer("v", 1, "0", 1, 2, 3),
    ):
        assert event == pickle.loads(pickle.dumps(event))
