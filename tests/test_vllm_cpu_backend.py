"""vLLM V0 on the CPU backend: the cache's figures in the CPU column (vllm PR #18674's own lines).

From 0.9.0 to 0.10.2 V0's `_get_stats` (engine/llm_engine.py) swaps the GPU and CPU figures when the
engine runs on the CPU; on GPU hosts the CPU column stays swap space and is never exported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from kvwatch.cli import main
from kvwatch.engines import detect_engine
from kvwatch.engines.vllm.events import VllmPrefixV0, VllmStats
from kvwatch.engines.vllm.metrics import VllmMetrics
from kvwatch.engines.vllm.parser import VllmParser
from kvwatch.model import EngineFact, LogLine
from kvwatch.parsers.base import ParserSettings

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "vllm-cpu-backend.log"
SETTINGS = ParserSettings(year=2026, tz="UTC")

PLATFORM_CPU = "INFO 05-25 06:48:41 [__init__.py:243] Automatically detected platform cpu."
PLATFORM_CUDA = "INFO 05-25 06:48:41 [__init__.py:243] Automatically detected platform cuda."
PLATFORM_NEURON = "INFO 05-25 06:48:41 [__init__.py:243] Automatically detected platform neuron."
BANNER = "INFO 05-25 06:48:43 [api_server.py:1289] vLLM API server version {}"
INIT = (
    "INFO 05-25 06:48:52 [llm_engine.py:230] Initializing a V0 LLM engine (v{}) with config: "
    "model='Qwen/Qwen2.5-1.5B-Instruct', enforce_eager=True, kv_cache_dtype=auto,  device_config={}, "
    "seed=None, enable_prefix_caching=True, use_cached_outputs=True, "
)
# vllm PR #18674, its comment of 2025-05-25: two stats pairs of the fixed CPU build, verbatim.
PR_LINES = (
    "INFO 05-25 06:50:34 [metrics.py:486] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
    "15.3 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, CPU KV "
    "cache usage: 0.1%.",
    "INFO 05-25 06:50:34 [metrics.py:502] Prefix cache hit rate: GPU: 0.00%, CPU: 90.00%",
    "INFO 05-25 06:50:39 [metrics.py:486] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
    "14.5 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, CPU KV "
    "cache usage: 0.2%.",
    "INFO 05-25 06:50:39 [metrics.py:502] Prefix cache hit rate: GPU: 0.00%, CPU: 90.00%",
)
# vllm issue #17954 (the bug the PR fixed): a CPU build without the swap prints the cache as GPU.
ISSUE_LINES = (
    "INFO 05-11 12:04:19 [metrics.py:486] Avg prompt throughput: 13.2 tokens/s, Avg generation "
    "throughput: 13.0 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: "
    "0.1%, CPU KV cache usage: 0.0%.",
    "INFO 05-11 12:04:19 [metrics.py:502] Prefix cache hit rate: GPU: 0.00%, CPU: 0.00%",
)
# A GPU host's V0 pair whose swap column is busy (0.6.6's format, `metrics.py:467/483`).
GPU_HOST_LINES = (
    "INFO 12-20 14:00:52 metrics.py:467] Avg prompt throughput: 10.0 tokens/s, Avg generation "
    "throughput: 5.0 tokens/s, Running: 2 reqs, Swapped: 1 reqs, Pending: 1 reqs, GPU KV cache usage: "
    "12.5%, CPU KV cache usage: 55.0%.",
    "INFO 12-20 14:00:52 metrics.py:483] Prefix cache hit rate: GPU: 61.25%, CPU: 77.00%",
)


def events(*texts: str, parser: VllmParser | None = None) -> list[object]:
    """Every event of the lines, parsed in order by one parser."""
    parser = parser or VllmParser("v", SETTINGS)
    out: list[object] = []
    for text in texts:
        result = parser.parse(LogLine("v", text))
        assert isinstance(result, list | None), result
        out.extend(result or [])
    return out


def cache_figures(
    found: list[object],
) -> tuple[list[tuple[float | None, str]], list[tuple[float, float, str]]]:
    """(kv usage, device) of each stats event and (hit, swap hit, device) of each V0 prefix event."""
    stats = [(e.kv_cache_usage, e.kv_device) for e in found if isinstance(e, VllmStats)]
    prefix = [(e.hit, e.swap_hit, e.device) for e in found if isinstance(e, VllmPrefixV0)]
    return stats, prefix


def exported(found: list[object]) -> str:
    """The kvwatch_vllm_* page the events make."""
    registry = CollectorRegistry()
    family = VllmMetrics(registry)
    for event in found:
        if isinstance(event, VllmStats):
            family.stats(event)
        elif isinstance(event, VllmPrefixV0):
            family.prefix_v0(event)
        elif isinstance(event, EngineFact):
            family.fact(event)
    return generate_latest(registry).decode()


def value(page: str, name: str) -> float:
    """The one sample of a family on the page."""
    (line,) = [ln for ln in page.splitlines() if ln.startswith(name + "{")]
    return float(line.rsplit(" ", 1)[1])


def test_cpu_backend_reads_the_cache_in_the_cpu_column() -> None:
    """0.9.0 on the CPU: the PR's lines give usage 0.1% / 0.2% and a 90% hit rate, from the CPU column."""
    found = events(PLATFORM_CPU, BANNER.format("0.9.0"), *PR_LINES)
    assert cache_figures(found) == (
        [(0.001, "CPU"), (0.002, "CPU")],
        [(0.9, 0.0, "CPU"), (0.9, 0.0, "CPU")],
    )
    page = exported(found)
    assert value(page, "kvwatch_vllm_prefix_cache_hit_ratio") == 0.9
    assert value(page, "kvwatch_vllm_kv_cache_usage_ratio") == 0.002


def test_cpu_backend_is_a_startup_fact() -> None:
    """The platform line and device_config are facts of the source."""
    found = events(PLATFORM_CPU, INIT.format("0.9.0", "cpu"))
    facts = {(e.key, e.value) for e in found if isinstance(e, EngineFact)}
    assert {("platform", "cpu"), ("device", "cpu"), ("version", "0.9.0")} <= facts


def test_device_config_alone_says_cpu() -> None:
    """Without the platform line (a log cut after it), `device_config=cpu` decides."""
    found = events(INIT.format("0.10.2", "cpu"), *PR_LINES[:2])
    assert cache_figures(found) == ([(0.001, "CPU")], [(0.9, 0.0, "CPU")])


def test_neuron_prints_device_config_cpu_but_is_not_the_cpu_backend() -> None:
    """DeviceConfig prints torch.device('cpu') for neuron too; the platform line says it is not the CPU."""
    found = events(PLATFORM_NEURON, INIT.format("0.9.0", "cpu"), *PR_LINES[:2])
    assert cache_figures(found) == ([(0.0, "GPU")], [(0.0, 0.9, "GPU")])


def test_before_the_pr_the_cpu_backend_prints_the_cache_as_gpu() -> None:
    """0.8.5 has no swap in `_get_stats`: issue #17954's lines carry the cache in the GPU column."""
    found = events(PLATFORM_CPU, BANNER.format("0.8.5.post1"), *ISSUE_LINES)
    assert cache_figures(found) == ([(0.001, "GPU")], [(0.0, 0.0, "GPU")])
    assert value(exported(found), "kvwatch_vllm_kv_cache_usage_ratio") == 0.001


@pytest.mark.parametrize("startup", [(), (PLATFORM_CUDA, INIT.format("0.9.0", "cuda"))], ids=["none", "cuda"])
def test_gpu_host_cpu_column_stays_swap_and_is_not_exported(startup: tuple[str, ...]) -> None:
    """On a GPU host the CPU column is swap space: neither its usage nor its hit rate is exported."""
    found = events(*startup, *GPU_HOST_LINES)
    assert cache_figures(found) == ([(0.125, "GPU")], [(0.6125, 0.77, "GPU")])
    page = exported(found)
    assert value(page, "kvwatch_vllm_prefix_cache_hit_ratio") == 0.6125
    assert value(page, "kvwatch_vllm_kv_cache_usage_ratio") == 0.125
    samples = [ln.rsplit(" ", 1)[1] for ln in page.splitlines() if not ln.startswith("#")]
    assert "0.77" not in samples and "0.55" not in samples


def test_gpu_host_reads_the_prs_lines_in_the_gpu_column() -> None:
    """The same lines on a 0.9.0 GPU host: the GPU column, the swap's 90% left out."""
    found = events(PLATFORM_CUDA, BANNER.format("0.9.0"), *PR_LINES[:2])
    assert value(exported(found), "kvwatch_vllm_prefix_cache_hit_ratio") == 0.0


def test_a_later_platform_line_decides() -> None:
    """A restart on another host type in the same log: the platform line of the new run counts."""
    parser = VllmParser("v", SETTINGS)
    events(PLATFORM_CPU, BANNER.format("0.9.0"), parser=parser)
    found = events(PLATFORM_CUDA, BANNER.format("0.9.0"), *PR_LINES[:2], parser=parser)
    assert cache_figures(found) == ([(0.0, "GPU")], [(0.0, 0.9, "GPU")])


def test_a_restored_parser_keeps_the_backend() -> None:
    """The daemon resumes after the startup lines: the snapshot carries the backend."""
    first = VllmParser("v", SETTINGS)
    events(PLATFORM_CPU, INIT.format("0.9.2", "cpu"), parser=first)
    again = VllmParser("v", SETTINGS)
    again.restore(first.snapshot())
    assert cache_figures(events(*PR_LINES[:2], parser=again)) == ([(0.001, "CPU")], [(0.9, 0.0, "CPU")])
    with pytest.raises(ValueError, match="llamacpp"):
        again.restore({"engine": "llamacpp"})
    with pytest.raises(TypeError):
        again.restore({"engine": "vllm", "platform": 1, "device": None, "version": None})
    with pytest.raises(KeyError):
        again.restore({"engine": "vllm"})


def test_the_sample_is_detected_as_vllm_and_read_in_the_cpu_column() -> None:
    """`--engine auto` still picks vLLM on the CPU sample's head; its stats read the CPU column."""
    text = SAMPLE.read_text()
    assert detect_engine(text[:65536]) == "vllm"
    found = events(*text.splitlines())
    stats, prefix = cache_figures(found)
    assert len(stats) == len(prefix) == 27
    assert {device for _, device in stats} == {"CPU"} and {hit for hit, _, _ in prefix} == {0.9}
    assert stats[:3] == [(0.001, "CPU"), (0.001, "CPU"), (0.002, "CPU")]


def test_the_text_report_says_the_backend(capsys: pytest.CaptureFixture[str]) -> None:
    """`replay --format text` names the CPU backend on the CPU sample, and not on a GPU host's."""
    assert 0 == main(["replay", "--format", "text", "--year", "2026", str(SAMPLE)])
    cpu = capsys.readouterr().out
    assert "  platform: cpu\n" in cpu and "  backend: CPU (V0 cache figures read from the CPU column" in cpu
    assert 0 == main(["replay", "--format", "text", "--year", "2026", str(SAMPLE.with_name("vllm-v0.log"))])
    assert "backend:" not in capsys.readouterr().out


def test_a_snapshot_at_any_line_goes_on_as_if_never_stopped() -> None:
    """At every line of the CPU sample: snapshot (through JSON), restore, parse the rest: the same events."""
    lines = SAMPLE.read_text().splitlines()
    whole = events(*lines)
    for cut in range(len(lines) + 1):
        first = VllmParser("v", SETTINGS)
        head = events(*lines[:cut], parser=first)
        second = VllmParser("v", SETTINGS)
        second.restore(json.loads(json.dumps(first.snapshot())))
        assert whole == head + events(*lines[cut:], parser=second), cut


def test_without_a_version_the_last_v0_releases_are_assumed() -> None:
    """The CPU backend known, no version line seen: the CPU column, as 0.9.0-0.10.2 print it."""
    found = events(PLATFORM_CPU, *PR_LINES[:2])
    assert cache_figures(found) == ([(0.001, "CPU")], [(0.9, 0.0, "CPU")])


def test_v1_lines_on_the_cpu_backend_keep_their_one_column() -> None:
    """V1 prints one usage, the engine's own (`GPU` up to 0.29 even on the CPU): read as printed."""
    v1 = (
        "(APIServer pid=1) INFO 08-18 01:22:08 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 "
        "tokens/s, Avg generation throughput: 15.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache "
        "usage: 0.4%, Prefix cache hit rate: 88.0%"
    )
    found = events(PLATFORM_CPU, INIT.format("0.10.0", "cpu").replace("V0", "V1"), v1)
    (stats,) = [e for e in found if isinstance(e, VllmStats)]
    assert (stats.kv_cache_usage, stats.prefix_hit, stats.kv_device, stats.v0) == (0.004, 0.88, "GPU", False)


def test_without_startup_lines_the_usage_line_shows_the_cpu_backend() -> None:
    """No platform, device or version line (an excerpt): a V0 usage line with the CPU column busy and no
    request swapped is printed only by the CPU backend's swapped columns (a GPU host's CPU column is its
    swap space, held only by swapped requests): the cache is read in the CPU column from it on."""
    parser = VllmParser("v", SETTINGS)
    assert cache_figures(events(*PR_LINES, parser=parser)) == (
        [(0.001, "CPU"), (0.002, "CPU")],
        [(0.9, 0.0, "CPU"), (0.9, 0.0, "CPU")],
    )
    again = VllmParser("v", SETTINGS)
    again.restore(parser.snapshot())  # (the daemon resumes past that line)
    assert cache_figures(events(PR_LINES[1], parser=again)) == ([], [(0.9, 0.0, "CPU")])


@pytest.mark.parametrize("lines", [ISSUE_LINES, GPU_HOST_LINES], ids=["cache-in-gpu-column", "swapping"])
def test_without_startup_lines_other_usage_lines_keep_the_gpu_column(lines: tuple[str, ...]) -> None:
    """The cache in the GPU column (0.8.5's CPU build, any GPU host), or a busy CPU column beside swapped
    requests: the GPU column, as before."""
    stats, prefix = cache_figures(events(*lines))
    assert [device for _, device in stats] == ["GPU"] and [p[2] for p in prefix] == ["GPU"]
