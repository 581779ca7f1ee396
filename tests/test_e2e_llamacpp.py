"""End to end: the daemon tails real llama-servers; a Slack-shaped receiver gets the varying-header alerts."""

# Two llama-servers (scripts/llamacpp: build.sh, make_models.py, capture.py's flags and `-lv 4`) write
# their logs to files one daemon tails; its Slack notifier posts to a receiver on 127.0.0.1.
# `llama-healthy` gets capture.py's two interleaved 5-turn conversations first. Then `llama-varying`
# gets the same conversations with a new `x-anthropic-billing-header ... cch=` first system line per
# request: 3 turns, until `prefix_reuse_broken` arrives (it needs 6 poor prompts), then 2 more, until
# `pinned_cache_length` arrives (it needs 8 requests). Each alert is a detector run made after the
# healthy conversations were complete (their 10 requests counted in /metrics before the first varying
# request), the second a later run than the first: at least two detector runs saw the finished healthy
# source, and neither the receiver nor the daemon's alert book may hold anything about it.

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import Kvwatch, file_source, wait_until, write_config
from llama_helpers import (
    BuildProgress,
    Dialogue,
    LlamaServer,
    case,
    llama_server_binary,
    terminal_lines,
    tiny_models,
)
from notify_helpers import SECRET_PATH, Receiver
from prometheus_client.parser import text_string_to_metric_families

HEALTHY = "llama-healthy"
VARYING = "llama-varying"
REQUESTS = 10
#: After a burst the first wall-clock tick only notes it, the second runs the detectors (10 s apart).
ALERT_DEADLINE_S = 45.0
COUNT_DEADLINE_S = 30.0
TITLE = re.compile(r"(FIRING|RESOLVED): (\w+) — (\S+)")

pytestmark = pytest.mark.slow  # builds llama-server once (minutes), then runs two of them


def titles(receiver: Receiver) -> list[tuple[str, str, str]]:
    """(state, alert, source) of each Slack message the receiver accepted, from its header block."""
    found = []
    for body in receiver.accepted():
        header: dict[str, Any] = body["blocks"][0]
        match = TITLE.search(header["text"]["text"])
        assert match is not None, body
        found.append((match[1], match[2], match[3]))
    return found


def alert_book(daemon: Kvwatch) -> dict[tuple[str, str], float]:
    """Every alert identity the daemon knows, firing (1) or resolved (0), from kvwatch_alert_firing."""
    _, _, body = daemon.get("/metrics")
    return {
        (sample.labels["alert"], sample.labels["source"]): sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == "kvwatch_alert_firing"
    }


def all_counted(daemon: Kvwatch, source: str) -> Callable[[], bool]:
    """A predicate: kvwatch_llamacpp_requests_total of `source` has reached REQUESTS."""
    return lambda: REQUESTS == daemon.value("kvwatch_llamacpp_requests_total", {"source": source})


def await_(
    daemon: Kvwatch, slack: Receiver, predicate: Callable[[], object], timeout: float, what: str
) -> None:
    """wait_until, failing with what the receiver got and the end of the daemon's log."""
    try:
        wait_until(predicate, timeout, what)
    except AssertionError as err:
        log = daemon.log.read_text(errors="replace").splitlines()[-30:]
        raise AssertionError(f"{err}; Slack got {titles(slack)}; kvwatch log:\n" + "\n".join(log)) from None


def test_varying_header_alerts_slack_and_the_same_conversations_without_it_do_not(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    """Slack gets prefix_reuse_broken then pinned_cache_length for the varying header, nothing for healthy."""
    binary = llama_server_binary(BuildProgress(terminal_lines(pytestconfig)))
    models = tiny_models(tmp_path / "models")
    logs = {name: tmp_path / f"{name}.log" for name in (HEALTHY, VARYING)}
    cases = {HEALTHY: case("healthy-two-slots"), VARYING: case("varying-header-chat")}
    with contextlib.ExitStack() as stack:
        slack = stack.enter_context(Receiver())
        servers = {}
        for name, run in cases.items():
            servers[name] = server = LlamaServer(binary, models, run, logs[name])
            stack.callback(server.stop)
        sources = "".join(file_source(name, log, engine="llamacpp") for name, log in logs.items())
        notifier = f'[[notifier]]\nname = "slack"\ntype = "slack"\nurl = "{slack.url}"\n'
        config = write_config(tmp_path / "kv.toml", sources + notifier)
        daemon = Kvwatch(["--config", str(config)], tmp_path / "kvwatch.err")
        stopped: list[int] = []
        stack.callback(lambda: stopped.append(daemon.stop()))
        for server in servers.values():
            server.wait_ready()

        healthy = Dialogue(servers[HEALTHY])
        healthy.turns(5)
        await_(daemon, slack, all_counted(daemon, HEALTHY), COUNT_DEADLINE_S, "the healthy requests counted")
        varying = Dialogue(servers[VARYING])
        varying.turns(3)
        await_(daemon, slack, slack.accepted, ALERT_DEADLINE_S, "a Slack message after 3 varying turns")
        assert [("FIRING", "prefix_reuse_broken", VARYING)] == titles(slack)
        varying.turns(2)
        await_(daemon, slack, lambda: len(slack.accepted()) >= 2, ALERT_DEADLINE_S, "a second Slack message")
        await_(daemon, slack, all_counted(daemon, VARYING), COUNT_DEADLINE_S, "the varying requests counted")

        fired = [("FIRING", "prefix_reuse_broken", VARYING), ("FIRING", "pinned_cache_length", VARYING)]
        assert fired == titles(slack)
        assert {SECRET_PATH} == {seen.path for seen in slack.seen}
        book = {("prefix_reuse_broken", VARYING): 1.0, ("pinned_cache_length", VARYING): 1.0}
        assert book == alert_book(daemon)
        assert 2.0 == daemon.value("kvwatch_notifications_total", {"notifier": "slack", "result": "ok"})
        reused = {
            name: daemon.value("kvwatch_llamacpp_cached_tokens_total", {"source": name}) for name in cases
        }
        assert {HEALTHY: healthy.cached_tokens(), VARYING: varying.cached_tokens()} == reused
    assert [0] == stopped
