"""End to end: the daemon tails the write-only-offload sample and a webhook gets the alert, once."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from daemon_helpers import Kvwatch, file_source, shifted_sample, wait_until, write_config
from notify_helpers import Receiver


@pytest.mark.slow
def test_write_only_offload_alert_reaches_a_webhook_once_across_a_restart(tmp_path: Path) -> None:
    """The webhook receives the write_only_offload alert JSON; after a restart it is not sent again."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    log = tmp_path / "vllm.log"
    shifted_sample(log, now - timedelta(seconds=60))
    with Receiver() as hook:
        notifier = f'[[notifier]]\nname = "hook"\ntype = "webhook"\nurl = "{hook.base}/alerts"\n'
        source = file_source("vllm", log) + f"year = {now.year}\n"
        cfg = write_config(tmp_path / "kv.toml", source + notifier)
        first = Kvwatch(["--config", str(cfg)], tmp_path / "run1.err")
        wait_until(hook.accepted, 20.0, "the alert delivered")
        body = hook.accepted()[0]
        assert ("write_only_offload", "firing", {"source": "vllm", "engine": "0"}) == (
            body["alert"], body["state"], body["labels"],
        )  # fmt: skip
        assert {"summary", "cause", "fix", "evidence", "severity", "at"} <= set(body)
        assert 0 == first.stop()
        second = Kvwatch(["--config", str(cfg)], tmp_path / "run2.err")
        wait_until(lambda: second.value("kvwatch_alert_firing", {"alert": "write_only_offload"}) == 1.0,
                   what="the alert restored")  # fmt: skip
        # Newer lines make the detectors tick on event time in the second run.
        stamp = (now + timedelta(seconds=30)).strftime("%m-%d %H:%M:%S")
        with log.open("a") as out:
            out.write(
                f"(APIServer pid=1) INFO {stamp} [loggers.py:310] Engine 000: Avg prompt throughput: "
                "0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, "
                "GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%\n"
            )
        wait_until(lambda: second.lines("vllm") == 1, what="the new line processed")
        assert 0 == second.stop()
        spool = tmp_path / "state" / "notify-hook.json"
        pending = json.loads(spool.read_text())["pending"] if spool.exists() else []
        assert (1, []) == (len(hook.accepted()), pending)
        state = json.loads((tmp_path / "state" / "alerts.json").read_text())
        assert ["write_only_offload{engine=0,source=vllm}"] == list(state["sent"])
        assert time.time() - state["sent"]["write_only_offload{engine=0,source=vllm}"]["at"] < 120
