"""vLLM running without its prefix cache is alerted: `prefix_cache_disabled` from the engine config line.

The lines are vLLM 0.25.1's, from the log of tests/wild/vllm-0.25-hybrid-prefix-caching-off.log (a Qwen3.6
hybrid model whose prefix cache vLLM turned off by itself), the config line cut to the keys kvwatch reads.
"""

# ruff: noqa: E501 - real log lines, kept as logged

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from kvwatch.cli import main

API = "(APIServer pid=37727) INFO 08-02 "
LOGO = API + "09:19:29 [api_utils.py:339]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.25.1"
ARGS = (
    API + "09:19:29 [api_utils.py:273] non-default args: {'model_tag': 'RedHatAI/Qwen3.6-35B-A3B-NVFP4', "
    "'host': '0.0.0.0', 'model': 'RedHatAI/Qwen3.6-35B-A3B-NVFP4', 'max_model_len': 262144"
)
CONFIG = (
    "(EngineCore pid=38078) INFO 08-02 09:19:57 [core.py:114] Initializing a V1 LLM engine (v0.25.1) with "
    "config: model='RedHatAI/Qwen3.6-35B-A3B-NVFP4', seed=0, served_model_name=RedHatAI/Qwen3.6-35B-A3B-NVFP4, "
    "enable_prefix_caching={on}, enable_chunked_prefill=True, pooler_config=None"
)
STATS = (
    API + "09:5{m}:12 [loggers.py:273] Engine 000: Avg prompt throughput: 4448.4 tokens/s, Avg generation "
    "throughput: 14.9 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 2.9%, Prefix cache "
    "hit rate: {rate}%"
)


def replay(tmp_path: Path, lines: list[str]) -> list[dict[str, Any]]:
    """The firing alerts of `kvwatch replay --format json` over `lines`."""
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(lines) + "\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["replay", "--format", "json", "--year", "2026", str(log)])
    return [a for a in json.loads(out.getvalue())["alerts"] if a["state"] == "firing"]


def start(extra: str = "", on: str = "False") -> list[str]:
    """A vLLM start whose engine config line says enable_prefix_caching=`on`, then traffic."""
    stats = [STATS.format(m=m, rate="0.0" if on == "False" else "62.5") for m in range(3)]
    return [LOGO, ARGS + extra + "}", CONFIG.format(on=on), *stats]


def test_vllm_default_off_is_alerted_with_vllms_cause_and_flag(tmp_path: Path) -> None:
    """A prefix cache vLLM turned off by itself (the command line did not name it) fires
    prefix_cache_disabled, whose cause says vLLM's default did it and whose fix names --enable-prefix-caching."""
    (alert,) = replay(tmp_path, start())
    assert alert["alert"] == "prefix_cache_disabled"
    assert alert["evidence"] == {"rule": "setting", "setting": "vLLM's default for this model"}
    assert "enable_prefix_caching=False" in alert["cause"] and "hybrid" in alert["cause"]
    assert "--enable-prefix-caching" in alert["fix"] and "--no-enable" not in alert["fix"]
    assert "#cached-token" not in alert["fix"]  # (SGLang's words are not vLLM's)


def test_vllm_off_by_flag_names_the_flag_to_drop(tmp_path: Path) -> None:
    """`--no-enable-prefix-caching` on the command line is named as the setting, and the fix drops it."""
    (alert,) = replay(tmp_path, start(extra=", 'enable_prefix_caching': False"))
    assert alert["evidence"]["setting"] == "--no-enable-prefix-caching"
    assert "started with --no-enable-prefix-caching" in alert["cause"]
    assert "drop --no-enable-prefix-caching" in alert["fix"]


def test_vllm_before_0_8_names_the_default_from_its_namespace_line(tmp_path: Path) -> None:
    """vLLM 0.7's `args: Namespace(...)` line says the flag was not given (enable_prefix_caching=None):
    the V0 engine's default turned the cache off, and the summary says so in vLLM's words."""
    lines = [
        "INFO 04-18 14:12:51 api_server.py:841] args: Namespace(host=None, port=8000, model='Qwen/Qwen2.5-14B-Instruct', enable_prefix_caching=None, disable_sliding_window=False)",
        "INFO 04-18 14:19:58 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.2) with config: model='Qwen/Qwen2.5-14B-Instruct', seed=0, enable_prefix_caching=False, chunked_prefill_enabled=False",
        "INFO 04-18 14:22:45 metrics.py:455] Avg prompt throughput: 117.5 tokens/s, Avg generation throughput: 33.6 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.1%, CPU KV cache usage: 0.0%.",
    ]
    (alert,) = replay(tmp_path, lines)
    assert alert["evidence"]["setting"] == "vLLM's default for this model"
    assert alert["summary"].startswith("vLLM runs without its prefix cache")
    assert "the V0 engine for every model" in alert["cause"]


def test_vllm_with_its_prefix_cache_on_fires_nothing(tmp_path: Path) -> None:
    """enable_prefix_caching=True (by default or asked for) fires nothing."""
    assert replay(tmp_path, start(on="True")) == []
    assert replay(tmp_path, start(extra=", 'enable_prefix_caching': True", on="True")) == []


def test_a_restart_with_the_cache_on_resolves_it(tmp_path: Path) -> None:
    """A restart whose engine config line turns the prefix cache on ends the alert (the restart forgets
    the old state and the new line states the new one)."""
    later = [line.replace("08-02 09:", "08-02 10:") for line in start(on="True")]
    out = io.StringIO()
    log = tmp_path / "vllm.log"
    log.write_text("\n".join([*start(), *later]) + "\n")
    with contextlib.redirect_stdout(out):
        main(["replay", "--format", "json", "--year", "2026", str(log)])
    alerts = json.loads(out.getvalue())["alerts"]
    states = [a["state"] for a in alerts if a["alert"] == "prefix_cache_disabled"]
    assert states == ["firing", "resolved"]  # (the silence between the two starts is no_signal's)
