"""LMCache's sums, which its parser holds back per stretch of log time, reach a live daemon's /metrics
even when the log falls silent after them, and equal what the lines print."""

from __future__ import annotations

from pathlib import Path

from daemon_helpers import Kvwatch, file_source, wait_until, write_config

# vLLM 0.26 with LMCache 0.5.6 (lmcache/v1/cache_engine.py:588, integration/vllm/vllm_v1_adapter.py:1476),
# as samples/lmcache-0.5.6-tp2.log prints them: a lookup, then each TP worker's store.
LINES = (
    "(EngineCore_DP0 pid=88) \x1b[32;20m[2026-09-14 08:00:36,000] LMCache INFO:\x1b[0m Reqid: chatcmpl-1, "
    "Total tokens 1295, Inference Engine computed tokens: 0, LMCache hit tokens: 0, need to load: 0 "
    "\x1b[3m(vllm_v1_adapter.py:1476:lmcache.integration.vllm.vllm_v1_adapter)\x1b[0m",
    "(Worker_TP0 pid=120) \x1b[32;20m[2026-09-14 08:00:36,340] LMCache INFO:\x1b[0m [req_id=chatcmpl-1] "
    "Stored 1280 out of total 1295 tokens. size: 0.0977 GB, cost 12.5000 ms, throughput: 7.8125 GB/s; "
    "offload_time: 10.0000 ms, put_time: 2.5000 ms "
    "\x1b[3m(cache_engine.py:588:lmcache.v1.cache_engine)\x1b[0m",
    "(Worker_TP1 pid=121) \x1b[32;20m[2026-09-14 08:00:36,341] LMCache INFO:\x1b[0m [req_id=chatcmpl-1] "
    "Stored 1280 out of total 1295 tokens. size: 0.0977 GB, cost 12.5000 ms, throughput: 7.8125 GB/s; "
    "offload_time: 10.0000 ms, put_time: 2.5000 ms "
    "\x1b[3m(cache_engine.py:588:lmcache.v1.cache_engine)\x1b[0m",
)


def test_held_sums_reach_metrics_when_the_log_falls_silent(tmp_path: Path) -> None:
    """No line follows the stores: the next position sync hands their sums on."""
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(LINES) + "\n")
    config = write_config(tmp_path / "c.toml", file_source("gpu0", log))
    daemon = Kvwatch(["--config", str(config), "--sync-interval", "0.5"], tmp_path / "kvwatch.log")
    try:
        stored = {"source": "gpu0", "worker": "tp1"}
        wait_until(lambda: daemon.value("kvwatch_lmcache_stored_tokens_total", stored) is not None, 15.0,
                   "tp1's store in /metrics")  # fmt: skip
        assert 1280 == daemon.value("kvwatch_lmcache_stored_tokens_total", stored)
        stored["worker"] = "tp0"
        assert 1280 == daemon.value("kvwatch_lmcache_stored_tokens_total", stored)
        assert 1 == daemon.value("kvwatch_lmcache_lookups_total", {"source": "gpu0"})
        assert 3 == daemon.lines("gpu0")
    finally:
        assert 0 == daemon.stop()
