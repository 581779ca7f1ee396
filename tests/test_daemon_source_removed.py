"""A source removed from the config (by SIGHUP, or while kvwatch was down) is forgotten cleanly."""

from __future__ import annotations

import json
import signal
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import Kvwatch, file_source, shifted_sample, wait_until, write_config
from notify_helpers import Receiver
from prometheus_client.parser import text_string_to_metric_families


def of_source(kv: Kvwatch, source: str) -> list[str]:
    """Every sample on /metrics labelled with `source`."""
    body = kv.get("/metrics")[2]
    return [
        f"{s.name}{s.labels}"
        for family in text_string_to_metric_families(body)
        for s in family.samples
        if s.labels.get("source") == source
    ]


def resolutions(hook: Receiver) -> list[dict[str, Any]]:
    """The resolved alerts the webhook received."""
    return [body for body in hook.accepted() if body["state"] == "resolved"]


def stats_line(at: datetime) -> str:
    """One vLLM V1 stats line at `at`."""
    return (
        f"(APIServer pid=1) INFO {at:%m-%d %H:%M:%S} [loggers.py:310] Engine 000: Avg prompt throughput: "
        "0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, "
        "GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%\n"
    )


def firing_setup(tmp_path: Path, hook: Receiver) -> tuple[Path, str, str, datetime]:
    """The write-only-offload sample as source `vllm` next to a quiet source `b`, and a webhook:
    (config path, the config with both, the config with `b` only, now)."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    log = tmp_path / "vllm.log"
    shifted_sample(log, now - timedelta(seconds=60))
    (tmp_path / "b.log").touch()
    notifier = f'[[notifier]]\nname = "hook"\ntype = "webhook"\nurl = "{hook.base}/alerts"\n'
    vllm = file_source("vllm", log) + f"year = {now.year}\n"
    quiet = file_source("b", tmp_path / "b.log")
    both, without = vllm + quiet + notifier, quiet + notifier
    return write_config(tmp_path / "kv.toml", both), both, without, now


def assert_resolved_for_removal(hook: Receiver) -> None:
    """The one resolution sent: the alert that fired, with reason source_removed in its evidence."""
    wait_until(lambda: resolutions(hook), 20.0, "the resolution delivered")
    (resolved,) = resolutions(hook)
    assert ("write_only_offload", {"source": "vllm", "engine": "0"}) == (
        resolved["alert"],
        resolved["labels"],
    )
    assert "source_removed" == resolved["evidence"]["reason"]


@pytest.mark.slow
def test_sighup_without_a_source_resolves_its_alerts_drops_its_series_and_keeps_its_position(
    tmp_path: Path,
) -> None:
    """Removed: alert resolved (reason told), no series left, position kept; re-added: resumes there."""
    with Receiver() as hook:
        cfg, both, without, now = firing_setup(tmp_path, hook)
        kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv.err")
        wait_until(hook.accepted, 20.0, "the alert delivered")
        lines = (tmp_path / "vllm.log").read_text().count("\n")
        wait_until(lambda: kv.lines("vllm") == lines, what="the sample read")
        assert of_source(kv, "vllm")
        cfg.write_text(cfg.read_text().replace(both, without))
        kv.proc.send_signal(signal.SIGHUP)
        assert_resolved_for_removal(hook)
        wait_until(lambda: "reloaded" in kv.log.read_text(), what="the reload")
        assert [] == of_source(kv, "vllm")
        assert (tmp_path / "state" / "positions" / "vllm.json").exists()
        with (tmp_path / "vllm.log").open("a") as out:
            out.write(stats_line(now + timedelta(seconds=30)))
        cfg.write_text(cfg.read_text().replace(without, both))
        kv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: kv.lines("vllm") == 1, what="only the new line read after the return")
        assert 0 == kv.stop()
        assert 1 == len(resolutions(hook))


@pytest.mark.slow
def test_a_restart_without_a_source_resolves_its_restored_alerts(tmp_path: Path) -> None:
    """Stopped while the alert fires, started with a config that lacks its source: it resolves at start."""
    with Receiver() as hook:
        cfg, both, without, _ = firing_setup(tmp_path, hook)
        first = Kvwatch(["--config", str(cfg)], tmp_path / "run1.err")
        wait_until(hook.accepted, 20.0, "the alert delivered")
        assert 0 == first.stop()
        cfg.write_text(cfg.read_text().replace(both, without))
        second = Kvwatch(["--config", str(cfg)], tmp_path / "run2.err")
        assert_resolved_for_removal(hook)
        assert [] == of_source(second, "vllm")
        assert 0 == second.stop()
        state = json.loads((tmp_path / "state" / "alerts.json").read_text())
        assert ({}, {}) == (state["book"], state["sent"])
        assert (tmp_path / "state" / "positions" / "vllm.json").exists()


def test_forgetting_a_source_drops_its_series_of_every_family_and_keeps_the_others() -> None:
    """vLLM, llama.cpp and usage families, line counts and derived gauges: none of `a` left, `b` whole."""
    from prometheus_client import CollectorRegistry, generate_latest

    from kvwatch.engines.llamacpp.events import LlamaRequest
    from kvwatch.engines.usage.events import UsageSkipped
    from kvwatch.engines.vllm.events import VllmStats
    from kvwatch.metrics import Metrics
    from kvwatch.model import EngineFact, UsageRecord
    from kvwatch.pipeline import Pipeline

    registry = CollectorRegistry()
    pipeline = Pipeline(Metrics(registry))
    for name in ("a", "b"):
        pipeline.apply(VllmStats(name, 10.0, "0", 1.0, 2.0, 1, 0, 0.5, prefix_hit=0.9))
        pipeline.apply(EngineFact(name, 10.0, "version", "0.11.0"))
        pipeline.apply(LlamaRequest(name, 11.0, 0, 1, 100, 90, 10, "lcp", sim_best=0.9, f_keep=1.0))
        pipeline.apply(UsageRecord(name, 12.0, "/v1/chat/completions", "m", 100, 50))
        pipeline.apply(UsageSkipped(name, 12.0, "error"))
        pipeline.metrics.sources.of(name).lines += 5
    before = generate_latest(registry).decode()
    pipeline.forget("a")
    after = generate_latest(registry).decode()
    assert 'source="a"' in before
    assert 'source="a"' not in after
    kept = [line for line in before.splitlines() if 'source="b"' in line]
    assert kept == [line for line in after.splitlines() if 'source="b"' in line]
