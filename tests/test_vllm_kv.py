"""The KV Transfer payload in its three key generations."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kvwatch.engines.vllm.kv import KvPayloadError, read_kv_payload, split_top


def parse_kv_payload(text: str) -> SimpleNamespace:
    """read_kv_payload's tuple by name."""
    values, store, load, lookups = read_kv_payload(text)
    return SimpleNamespace(values=values, store_bytes=store, load_bytes=load, lookups=lookups)


def test_gen1_keys() -> None:
    """0.16-0.23 GPU_to_CPU / CPU_to_GPU keys map to store / load."""
    kv = parse_kv_payload(
        "GPU_to_CPU_total_bytes=300, GPU_to_CPU_total_time=0.5, CPU_to_GPU_total_bytes=7, "
        "CPU_to_GPU_total_time=0.1"
    )
    assert (300, 7, None) == (kv.store_bytes, kv.load_bytes, kv.lookups)


def test_gen1_missing_direction_is_zero() -> None:
    """A direction with no transfer is left out by vLLM: zero for that interval."""
    kv = parse_kv_payload("GPU_to_CPU_total_bytes=300, GPU_to_CPU_total_time=0.5")
    assert (300, 0) == (kv.store_bytes, kv.load_bytes)


def test_gen2_flat_keys_in_any_order_with_labelled_keys() -> None:
    """0.24+ flat keys; a labelled key holding `", "` does not break the split."""
    kv = parse_kv_payload(
        "vllm:kv_offload_cpu_cache_usage_perc=0.1, vllm:kv_offload_tiering_read_bytes:('fs', 'a')=9, "
        "vllm:kv_offload_load_bytes=40, vllm:kv_offload_store_bytes=3101687808, "
        "vllm:kv_offload_lookup_sync_delay_seconds_count=7, "
        "vllm:kv_offload_lookup_async_delay_seconds_count=2"
    )
    assert (3101687808, 40, 9) == (kv.store_bytes, kv.load_bytes, kv.lookups)
    assert 9.0 == kv.values["vllm:kv_offload_tiering_read_bytes:('fs', 'a')"]


def test_gen2_gauges_only_means_nothing_moved() -> None:
    """An offload line with only manager gauges: store and load are 0, not unknown."""
    kv = parse_kv_payload("vllm:kv_offload_cpu_cache_usage_perc=0.0")
    assert (0, 0) == (kv.store_bytes, kv.load_bytes)


def test_multiconnector_nested_dicts() -> None:
    """MultiConnector nests per-connector dicts; offload bytes are found inside."""
    kv = parse_kv_payload(
        "OffloadingConnector={'vllm:kv_offload_store_bytes': 123, 'vllm:kv_offload_load_bytes': 4}, "
        "NixlConnector={'Num successful transfers': 3, 'Avg xfer time (ms)': 1.5}"
    )
    assert (123, 4) == (kv.store_bytes, kv.load_bytes)
    assert 3.0 == kv.values["NixlConnector/Num successful transfers"]


def test_other_connector_without_bytes_is_unknown() -> None:
    """A connector that reports no byte counts leaves store and load unknown, never zero."""
    kv = parse_kv_payload("Num successful transfers=3, Num failed transfers=0")
    assert (None, None) == (kv.store_bytes, kv.load_bytes)


@pytest.mark.parametrize(
    "payload",
    [
        "vllm:kv_offload_store_bytes=nan",
        "vllm:kv_offload_store_bytes=-1",
        "noequals",
        "OffloadingConnector={'vllm:kv_offload_store_bytes': -3}",
        "X={unclosed",
        # a key twice: its bad value is refused even when a good one follows (the fast path too)
        "vllm:kv_offload_store_bytes=inf, vllm:kv_offload_store_bytes=5",
        "vllm:kv_offload_store_bytes=nan, vllm:kv_offload_load_bytes=1, vllm:kv_offload_store_bytes=2",
    ],
)
def test_bad_payloads(payload: str) -> None:
    """Negative, non-finite and malformed payloads are refused."""
    with pytest.raises(KvPayloadError):
        parse_kv_payload(payload)


def test_split_top_respects_quotes_and_brackets() -> None:
    """`", "` inside quotes or brackets does not split."""
    assert ["a=1", "b:('x, y')=2", "c={'k, j': 3}"] == split_top("a=1, b:('x, y')=2, c={'k, j': 3}")


def test_numpy_scalar_reprs_in_nested_stats() -> None:
    """NixlConnector's dicts hold `np.float64(...)` reprs (numpy 2): they are numbers, not errors."""
    kv = parse_kv_payload(
        "NixlConnector={'Num successful transfers': 4, 'Avg xfer time (ms)': np.float64(18.639)}, "
        "OffloadingConnector={'vllm:kv_offload_store_bytes': 215875584}"
    )
    assert (215875584, 0, 18.639) == (
        kv.store_bytes,
        kv.load_bytes,
        kv.values["NixlConnector/Avg xfer time (ms)"],
    )
