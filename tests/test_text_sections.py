"""`replay --format text`: the LM Studio, Ollama and LMCache sections say what the samples' lines say.

Expected figures come from the samples' goldens (the metrics format), never from the report's code.
"""

from __future__ import annotations

import re

import pytest
from corpora import SAMPLES, sample_logs

from kvwatch.cli import main

_SAMPLE = re.compile(r"^(\w+)\{(.*)\} (\S+)$")


def golden(name: str, metric: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of one metric in a sample's golden, keyed by their labels (source left out)."""
    found = {}
    for line in (SAMPLES / f"{name}.golden").read_text().splitlines():
        match = _SAMPLE.match(line)
        if match and match[1] == metric:
            labels = tuple((k, v) for k, v in re.findall(r'(\w+)="([^"]*)"', match[2]) if k != "source")
            found[labels] = float(match[3])
    return found


def replay_text(capsys: pytest.CaptureFixture[str], name: str) -> list[list[str]]:
    """The text report of one sample up to its alerts, each line split into cells."""
    assert main(["replay", "--format", "text", str(SAMPLES / f"{name}.log")]) == 0
    report, _ = capsys.readouterr().out.split("\nalerts: ")
    return [line.split() for line in report.splitlines()]


def rate(cached: float, prompt: float) -> str:
    """A hit rate as the report prints it."""
    return f"{100 * cached / prompt:.1f}%"


LMSTUDIO = [
    "lmstudio-v0-3-18-llamacpp",
    "lmstudio-v0-4-mlx-healthy",
    "lmstudio-v0-4-mlx-vision",
    "lmstudio-v0-4-mlx-zero-reuse",
]


@pytest.mark.parametrize("name", LMSTUDIO)
def test_lmstudio_rows_per_model_equal_the_golden(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Requests, prompt and cached tokens and hit rate per model and runtime, as the counters say."""
    lines = replay_text(capsys, name)
    requests = golden(name, "kvwatch_lmstudio_requests_total")
    prompt = golden(name, "kvwatch_lmstudio_prompt_tokens_total")
    cached = golden(name, "kvwatch_lmstudio_cached_tokens_total")
    expected = sorted(
        [
            dict(labels)["model"] or "-",
            dict(labels)["runtime"],
            str(int(count)),
            str(int(prompt[labels])),
            str(int(cached[labels])),
            rate(cached[labels], prompt[labels]),
        ]
        for labels, count in requests.items()
    )
    rows = [
        cells[:6] for cells in lines if len(cells) == 7 and cells[1] in {"mlx", "mlx-vision", "llama.cpp"}
    ]
    completions = sum(golden(name, "kvwatch_lmstudio_chat_completions_total").values())
    begun = [
        f"{int(completions)},",
        "requests",
        "with",
        "a",
        "cache",
        "line",
        str(int(sum(requests.values()))),
    ]
    assert (expected, [begun]) == (
        rows,
        [cells[3:] for cells in lines if cells[:3] == ["chat", "completions", "begun"]],
    )


@pytest.mark.parametrize("name", LMSTUDIO)
def test_lmstudio_last_requests_add_up(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The last requests (all of them, in these samples) sum to the prompt and cached counters."""
    lines = replay_text(capsys, name)
    rows = [cells for cells in lines if len(cells) == 7 and cells[0].endswith("Z") and cells[0][:2] == "20"]
    assert (
        sum(golden(name, "kvwatch_lmstudio_prompt_tokens_total").values()),
        sum(golden(name, "kvwatch_lmstudio_cached_tokens_total").values()),
        True,
    ) == (
        sum(int(row[3]) for row in rows),
        sum(int(row[4]) for row in rows),
        all(int(row[3]) - int(row[4]) == int(row[5]) for row in rows),
    )


def test_lmstudio_clears_and_trims(capsys: pytest.CaptureFixture[str]) -> None:
    """mlx-engine's cache clears and trimmed tokens are those of the counters."""
    name = "lmstudio-2025-09-not-trimmable"
    lines = replay_text(capsys, name)
    clears = int(sum(golden(name, "kvwatch_lmstudio_cache_clears_total").values()))
    trimmed = int(sum(golden(name, "kvwatch_lmstudio_trimmed_tokens_total").values()))
    (row,) = [cells for cells in lines if cells[:2] == ["cache", "clears"]]
    assert (str(clears), f"({trimmed}") == (row[2], row[-2])


def test_lmstudio_says_nothing_it_does_not_know(capsys: pytest.CaptureFixture[str]) -> None:
    """A llama.cpp runtime logs no clears and a log without cache lines no tokens: neither is printed as 0."""
    llamacpp = replay_text(capsys, "lmstudio-v0-3-18-llamacpp")
    verbose_off = replay_text(capsys, "lmstudio-v0-4-verbose-off")
    assert (
        [],
        [],
        ["chat", "completions", "begun", "5,", "requests", "with", "a", "cache", "line", "0"],
    ) == (
        [cells for cells in llamacpp if cells[:2] == ["cache", "clears"]],
        [cells for cells in verbose_off if "prompt" in cells or "hit" in cells],
        next(cells for cells in verbose_off if cells[:2] == ["chat", "completions"]),
    )


def test_lmstudio_vision_disk_and_efficiency(capsys: pytest.CaptureFixture[str]) -> None:
    """The vision cache's last logged efficiency and disk use, as the gauges say."""
    name = "lmstudio-v0-4-mlx-vision"
    lines = replay_text(capsys, name)
    (efficiency,) = golden(name, "kvwatch_lmstudio_lifetime_efficiency_ratio").values()
    (used,) = golden(name, "kvwatch_lmstudio_disk_cache_used_bytes").values()
    (row,) = [cells for cells in lines if cells[1:2] == ["mlx-vision"] and len(cells) == 7]
    (disk,) = [cells for cells in lines if cells[:3] == ["vision", "disk", "cache"]]
    assert (f"{efficiency * 100:.1f}%", f"{used / 1e9:.1f}") == (row[-1], disk[3])


OLLAMA = ["ollama-0.1-embedded", "ollama-0.29-debug", "ollama-0.30-two-runners", "ollama-mlx-stuck"]


@pytest.mark.parametrize("name", OLLAMA)
def test_ollama_rows_per_model_equal_the_golden(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Requests, prompt and cached tokens and hit rate per model, and HTTP requests, as the counters say."""
    lines = replay_text(capsys, name)
    requests = golden(name, "kvwatch_ollama_requests_total")
    prompt = golden(name, "kvwatch_ollama_prompt_tokens_total")
    cached = golden(name, "kvwatch_ollama_cached_tokens_total")
    expected = sorted(
        [
            dict(labels)["model"],
            str(int(count)),
            str(int(prompt[labels])),
            str(int(cached[labels])),
            rate(cached[labels], prompt[labels]),
        ]
        for labels, count in requests.items()
    )
    models = {dict(labels)["model"] for labels in requests}
    rows = [cells[:5] for cells in lines if len(cells) == 6 and cells[0] in models]
    http = int(sum(golden(name, "kvwatch_ollama_http_requests_total").values()))
    (said,) = [cells[2] for cells in lines if cells[:2] == ["http", "requests"]]
    assert (expected, str(http)) == (rows, said)


@pytest.mark.parametrize("name", OLLAMA)
def test_ollama_last_requests_match_the_log(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The last requests' rows: at most 10, new = prompt - cached."""
    lines = replay_text(capsys, name)
    rows = [cells for cells in lines if len(cells) >= 8 and cells[0].endswith("Z") and cells[0][:2] == "20"]
    count = int(sum(golden(name, "kvwatch_ollama_requests_total").values()))
    assert (min(count, 10), True) == (
        len(rows),
        all(int(row[4]) - int(row[5]) == int(row[6]) for row in rows),
    )


def test_ollama_failed_restores_and_unknown_full_reprocess(capsys: pytest.CaptureFixture[str]) -> None:
    """An MLX runner's failed restores are counted; it never says whether it re-processed in full, so
    that cell is `-`, and the Go runner's cache events (which it does not log) are left out."""
    name = "ollama-mlx-stuck"
    lines = replay_text(capsys, name)
    failed = int(sum(golden(name, "kvwatch_ollama_failed_restores_total").values()))
    (model,) = [dict(labels)["model"] for labels in golden(name, "kvwatch_ollama_requests_total")]
    (events,) = [cells for cells in lines if cells[:2] == ["cache", "events:"]]
    (row,) = [cells for cells in lines if cells[:1] == [model] and len(cells) == 6]
    assert (["failed", "restores", str(failed)], "-") == (events[2:], row[-1])


def test_ollama_without_cache_lines_prints_no_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    """At the default log level Ollama logs HTTP requests only: no token, hit rate or cache event figures."""
    lines = replay_text(capsys, "ollama-0.29-default")
    assert [] == [cells for cells in lines if {"prompt", "hit", "cache", "events:"} & set(cells)]


LMCACHE = [
    "lmcache-0.3.12-write-only",
    "lmcache-0.3.9-failed-loads",
    "lmcache-0.4.4-healthy",
    "lmcache-0.5.6-mp",
    "lmcache-0.5.6-tp2",
]


def total(name: str, metric: str) -> int:
    """A counter of a sample's golden summed over its series (0: no series)."""
    return int(sum(golden(name, f"kvwatch_lmcache_{metric}_total").values()))


@pytest.mark.parametrize("name", LMCACHE)
def test_lmcache_lookups_equal_the_golden(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Lookups, query, hit and need-load tokens and the hit rate, beside vLLM's own section."""
    lines = replay_text(capsys, name)
    said = [" ".join(cells) for cells in lines if cells[:2] == ["lmcache", "lookups"]]
    lookups, query, hit = total(name, "lookups"), total(name, "query_tokens"), total(name, "hit_tokens")
    apc = golden(name, "kvwatch_lmcache_vllm_apc_tokens_total")
    if not lookups:  # (an MP-mode server's log has no lookup lines)
        assert [] == said
        return
    expected = [
        f"lmcache lookups {lookups}: query tokens {query}, hit {hit} ({rate(hit, query)}), "
        f"need load {total(name, 'need_load_tokens')}"
        + (f", vLLM prefix cache {int(sum(apc.values()))}" if apc else "")
    ]
    assert expected == said


def _size(value: float) -> str:
    """Bytes as decimal GB with one decimal (every sample's transfers are in the GB)."""
    return f"{value / 1e9:.1f} GB"


@pytest.mark.parametrize("name", LMCACHE)
def test_lmcache_workers_equal_the_golden(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Per worker: tokens asked to store, stores, stored tokens and bytes, retrieves, retrieved and
    required tokens and bytes, short loads; `-` where the lines carry no such figure."""
    lines = replay_text(capsys, name)

    def of(metric: str, worker: str) -> float | None:
        return golden(name, f"kvwatch_lmcache_{metric}_total").get((("worker", worker),))

    def cell(value: float | None, in_bytes: bool = False) -> str:
        return "-" if value is None else _size(value) if in_bytes else str(int(value))

    workers = sorted(dict(labels)["worker"] for labels in golden(name, "kvwatch_lmcache_stores_total"))
    expected = [
        " ".join(
            [
                worker,
                cell(of("store_requested_tokens", worker)),
                cell(of("stores", worker)),
                cell(of("stored_tokens", worker)),
                cell(of("stored_bytes", worker), in_bytes=True),
                cell(of("retrieves", worker) or 0),
                cell(of("retrieved_tokens", worker) or 0),
                cell(of("retrieve_required_tokens", worker)),
                cell(of("retrieved_bytes", worker), in_bytes=True),
                cell(of("retrieve_short", worker) if of("retrieve_required_tokens", worker) else None),
            ]
        )
        for worker in workers
    ]
    assert expected and expected == [" ".join(cells) for cells in lines if cells[:1] and cells[0] in workers]


def test_lmcache_failures_and_short_loads(capsys: pytest.CaptureFixture[str]) -> None:
    """Failed retrieves by worker and kind with the tokens they lost, as the counters say."""
    name = "lmcache-0.3.9-failed-loads"
    lines = replay_text(capsys, name)
    lost = golden(name, "kvwatch_lmcache_failed_retrieve_tokens_total")
    expected = [
        f"lmcache failures {dict(labels)['worker']} {dict(labels)['kind']} {int(count)}, "
        f"{int(lost[(('worker', dict(labels)['worker']),)])} tokens lost"
        for labels, count in golden(name, "kvwatch_lmcache_failures_total").items()
    ]
    assert expected and expected == [
        " ".join(cells) for cells in lines if cells[:2] == ["lmcache", "failures"]
    ]


def test_lmcache_mp_prefetches(capsys: pytest.CaptureFixture[str]) -> None:
    """An MP-mode server's log: its prefetches (no lookup lines, so no lookup figures)."""
    name = "lmcache-0.5.6-mp"
    lines = replay_text(capsys, name)
    hits, keys = total(name, "prefetch_hit_keys"), total(name, "prefetch_requested_keys")
    expected = (
        f"lmcache prefetches {total(name, 'prefetches')}: keys found {hits} of {keys} ({rate(hits, keys)})"
    )
    assert [expected] == [" ".join(cells) for cells in lines if cells[:2] == ["lmcache", "prefetches"]]


SGLANG = [path.stem for path in sample_logs("sglang-", rotated=False)]


@pytest.mark.parametrize("name", SGLANG)
def test_sglang_ranks_equal_the_golden(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Per DP rank: prefill batches, sequences, computed and cached tokens, the hit rate, decode lines."""
    lines = replay_text(capsys, name)

    def of(metric: str, rank: str) -> int:
        return int(golden(name, f"kvwatch_sglang_{metric}").get((("engine", rank),), 0))

    ranks = sorted(dict(labels)["engine"] for labels in golden(name, "kvwatch_sglang_prefill_batches_total"))
    expected = []
    for rank in ranks:
        computed, cached = of("prefill_computed_tokens_total", rank), of("prefill_cached_tokens_total", rank)
        expected.append(
            [
                rank,
                str(of("prefill_batches_total", rank)),
                str(of("prefill_seqs_total", rank)),
                str(computed),
                str(cached),
                rate(cached, computed + cached),
                str(of("decode_lines_total", rank)),
            ]
        )
    assert expected and expected == [cells[:7] for cells in lines if len(cells) == 10 and cells[0] in ranks]


@pytest.mark.parametrize("name", SGLANG)
def test_sglang_requests_equal_the_golden(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Requests, prompt and cached tokens and the hit rate; cached tokens by tier where the log splits."""
    lines = replay_text(capsys, name)
    requests = int(sum(golden(name, "kvwatch_sglang_requests_total").values()))
    prompt = int(sum(golden(name, "kvwatch_sglang_prompt_tokens_total").values()))
    tiers = {
        dict(labels)["tier"]: int(v)
        for labels, v in golden(name, "kvwatch_sglang_cached_tokens_total").items()
    }
    cached = sum(tiers.values())
    (said,) = [" ".join(cells) for cells in lines if cells[:1] == ["requests"] and "prompt" in cells]
    split = [" ".join(cells) for cells in lines if cells[:4] == ["cached", "tokens", "by", "tier:"]]
    known = ", ".join(f"{tier} {tokens}" for tier, tokens in sorted(tiers.items()) if tier != "unknown")
    assert (
        f"prompt tokens {prompt}, cached {cached} ({rate(cached, prompt)})",
        [known] if known else [],
    ) == (
        said.split(": ", 1)[1],
        [line.split(": ", 1)[1] for line in split],
    )
    assert said.startswith(f"requests {requests} (")


def test_sglang_hicache_prefetches(capsys: pytest.CaptureFixture[str]) -> None:
    """HiCache prefetches ended, by outcome, as the counters say."""
    name = "sglang-v0-5-23-hicache-unused"
    lines = replay_text(capsys, name)
    outcomes = {
        dict(k)["outcome"]: int(v) for k, v in golden(name, "kvwatch_sglang_hicache_prefetches_total").items()
    }
    said = ", ".join(f"{outcome} {count}" for outcome, count in sorted(outcomes.items()))
    expected = f"hicache prefetches {sum(outcomes.values())} ({said})"
    assert [expected] == [" ".join(cells) for cells in lines if cells[:2] == ["hicache", "prefetches"]]
