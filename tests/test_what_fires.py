"""Every log in the repository (samples, the real excerpts of tests/wild, bench logs) replayed: what
fires on each is exactly what is listed here, so a detector change that adds an alarm anywhere shows."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from kvwatch.cli import main

ROOT = Path(__file__).resolve().parents[1]
LOGS = sorted(
    path
    for pattern in (
        "samples/*.log",
        "samples/*.log.*.gz",
        "bench/*.log",
        "tests/wild/*.log",
        "tests/wild/heldout/*.log",
    )
    for path in ROOT.glob(pattern)
)

#: The alerts that fire on each log (every other log: none). Each is the log's point: see samples/README.md
#: and each excerpt's truth file.
FIRES = {
    "samples/llamacpp-default-verbosity.log": {"no_signal"},
    # the broken server's alerts, labelled with its `server` (the healthy one of each journal fires none)
    "samples/llamacpp-journal-swa-two-servers.log": {"prefix_reuse_broken"},
    "samples/llamacpp-journal-two-servers.log": {"pinned_cache_length", "prefix_reuse_broken"},
    "samples/llamacpp-swa-varying-header.log": {"prefix_reuse_broken"},
    "samples/llamacpp-synthetic-b9113-truncate.log": {"prefix_reuse_broken"},
    "samples/llamacpp-synthetic-incident4.log": {"prefix_reuse_broken"},
    "samples/llamacpp-varying-header-chat.log": {"pinned_cache_length", "prefix_reuse_broken"},
    "samples/lmcache-0.3.12-write-only.log": {"write_only_offload"},
    "samples/lmcache-0.3.9-failed-loads.log": {"offload_retrieve_failed"},
    "samples/lmcache-0.5.6-remote-write-only.log": {"write_only_offload"},
    "samples/lmcache-0.5.6-sglang-0.5.9-write-only.log": {"write_only_offload"},
    "samples/lmstudio-v0-4-mlx-zero-reuse.log": {"prefix_reuse_broken"},
    "samples/lmstudio-v0-4-verbose-off.log": {"no_signal"},
    "samples/ollama-0.29-default.log": {"no_signal"},
    "samples/ollama-mlx-stuck.log": {"pinned_cache_length"},
    "samples/sglang-0.5.23-real-nonce.log": {"pinned_cache_length", "prefix_reuse_broken"},
    "samples/sglang-0.5.23-real-restart.log": {"prefix_cache_disabled"},
    "samples/sglang-v0-4-6-radix-disabled.log": {"prefix_cache_disabled", "prefix_reuse_broken"},
    "samples/sglang-v0-5-12-hicache-debug.log": {"no_signal"},
    "samples/sglang-v0-5-17-agentic-broken.log": {"prefix_cache_disabled", "prefix_reuse_broken"},
    "samples/sglang-v0-5-23-hicache-unused.log": {"hicache_storage_unused"},
    "samples/usage-anthropic-double.log": {"usage_double_counting"},
    "samples/usage-newapi.log": {"hit_rate_gap", "pinned_cache_length"},
    "samples/vllm-0.34-offload-failures.log": {"offload_retrieve_failed"},
    "samples/vllm-0.34-write-only-offload.log": {"write_only_offload"},
    "samples/vllm-real-offload-native.log": {"engine_start_failed"},
    "samples/vllm-real-offload-simple.log": {"engine_start_failed"},
    "samples/vllm-real-run.log": {"engine_start_failed"},
    "samples/vllm-simplecpu-write-only.log": {"write_only_offload"},
    "samples/vllm-write-only-offload.log": {"write_only_offload"},
    # real excerpts whose own lines show the engine dying at start (each truth file says how)
    "tests/wild/llamacpp-2023-unable-to-load-model.log": {"engine_start_failed"},
    "tests/wild/ollama-0.3.6-runner-signal-terminated.log": {"engine_start_failed"},
    "tests/wild/ollama-0.9.6-runner-exit-status-2.log": {"engine_start_failed"},
    "tests/wild/ollama-2023-journald-error-starting-runner.log": {"engine_start_failed"},
    "tests/wild/vllm-0.8-enginecore-failed-kv-init.log": {"engine_start_failed"},
    "tests/wild/vllm-pp-enginecore-failed.log": {"engine_start_failed"},
    "tests/wild/heldout/ollama-0.6.6-msty-pino-json.log": {"engine_start_failed"},
    "tests/wild/heldout/vllm-0.19-kvcached-enginecore-failed.log": {"engine_start_failed"},
    "tests/wild/heldout/vllm-xpu-enginecore-failed.log": {"engine_start_failed"},
    "tests/wild/heldout/late-sglang-lmcache-scheduler-exception.log": {"engine_start_failed"},
    # vLLM 0.25.1 turned its prefix cache off by itself for a hybrid Qwen model (enable_prefix_caching=False)
    "tests/wild/vllm-0.25-hybrid-prefix-caching-off.log": {"prefix_cache_disabled"},
    "tests/wild/heldout/vllm-0.25-qwen38-prefix-caching-off.log": {"prefix_cache_disabled"},
    # vLLM 0.7.2's V0 engine: prefix caching off by default (enable_prefix_caching=False), agents' prompts
    "tests/wild/vllm-0.7.2-v0-prefix-caching-off-agents.log": {"prefix_cache_disabled"},
    # a benchmark's unique prompts: six large ones each reusing only ~40 tokens of template, line for line
    # the per-request header's signature (the truth file says why no failure is asked of it)
    "tests/wild/sglang-0.5.16-swa-radix-dflash.log": {"pinned_cache_length", "prefix_reuse_broken"},
    # the Spyre plugin's engine printed no stats line for 390 s with a request running (21:43:12 ->
    # 21:49:42): `no_signal`'s documented "silent while busy" case, as the lines show it
    "tests/wild/vllm-plugin-spyre-stats-rising.log": {"no_signal"},
}


def fired(path: Path) -> set[str]:
    """The alerts that fire when `path` is replayed (`--year 2026`, as the goldens)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["replay", "--format", "json", "--year", "2026", str(path)])
    return {a["alert"] for a in json.loads(out.getvalue())["alerts"] if a["state"] == "firing"}


def test_the_list_names_only_logs_that_exist() -> None:
    """Every log named above is in the repository, and there are logs of each kind."""
    names = {str(p.relative_to(ROOT)) for p in LOGS}
    assert set(FIRES) <= names
    assert any(n.startswith("tests/wild/") for n in names) and any(n.startswith("bench/") for n in names)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_what_fires_on_each_log_is_listed(log: Path) -> None:
    """A log fires exactly the alerts listed for it (none when unlisted): no new false alarm."""
    assert FIRES.get(str(log.relative_to(ROOT)), set()) == fired(log)
