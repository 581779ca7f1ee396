"""One source, several servers (a journal's `name[pid]`): each server judged on its own requests, its
alerts labelled with its `server` on every route out, a single server's source judged as before."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from notify_helpers import Receiver

from kvwatch.cli import main
from kvwatch.engines import FACTS
from kvwatch.model import Alert, RequestRecord, ServerRestart
from kvwatch.notify.alertmanager import AlertmanagerNotifier
from kvwatch.notify.base import new_session
from kvwatch.notify.secrets import Secret
from kvwatch.notify.slack import build_message
from kvwatch.windows.window import Windows

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
#: Each journal sample (scripts/samples/llamacpp/journal.py): its broken server, the real capture that
#: server is, and its healthy server.
JOURNALS = {
    "llamacpp-journal-two-servers": (
        "llama-server[4377]",
        "llamacpp-varying-header-chat",
        "llama-server[4101]",
    ),
    "llamacpp-journal-swa-two-servers": (
        "llama-server[5188]",
        "llamacpp-swa-varying-header",
        "llama-server[5203]",
    ),
}


def alerts(name: str) -> list[dict[str, Any]]:
    """The alert transitions `kvwatch replay --format json` gives of samples/NAME.log."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert 0 == main(["replay", "--format", "json", "--year", "2026", str(SAMPLES / f"{name}.log")])
    found: list[dict[str, Any]] = json.loads(out.getvalue())["alerts"]
    return found


@pytest.mark.parametrize("journal", sorted(JOURNALS))
def test_the_broken_server_fires_as_on_its_own_log_and_the_healthy_one_not(journal: str) -> None:
    """Interleaved with a healthy server, the broken one's alerts fire with the evidence its log alone
    gives, labelled with its server; none names the healthy server."""
    broken, capture, healthy = JOURNALS[journal]
    mixed = alerts(journal)
    alone = alerts(capture)
    assert mixed and {a["labels"]["server"] for a in mixed} == {broken}
    assert all(a["labels"]["source"] == journal for a in mixed)
    assert healthy not in json.dumps(mixed)

    def judged(found: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
        return sorted(
            (a["alert"], a["state"], a["summary"], json.dumps(a["evidence"], sort_keys=True)) for a in found
        )

    assert judged(mixed) == judged(alone)
    assert all("server" not in a["labels"] for a in alone)  # (one server, one source: as before)


def record(server: str | None, time: float, cached: int) -> RequestRecord:
    """A 1000-token request of source `s` that reused `cached`."""
    return RequestRecord("s", time, 1000, cached, slot=0, server=server)


def test_windows_keep_each_server_s_requests_apart() -> None:
    """Requests of two servers of one source are two groups labelled with their server; those of a
    source's only server (no server named) the source's one group, as ever."""
    windows = Windows(FACTS)
    for i in range(4):
        windows.observe(record("llama-server[1]", float(i), 900))
        windows.observe(record("llama-server[2]", float(i), 0))
    windows.observe(RequestRecord("t", 0.0, 1000, 10))
    groups = {labels: [p.cached for p in points] for labels, points in windows.requests.items()}
    assert groups == {
        (("source", "s"), ("server", "llama-server[1]")): [900] * 4,
        (("source", "s"), ("server", "llama-server[2]")): [0] * 4,
        (("source", "t"),): [10],
    }


def test_a_source_s_only_server_is_not_named() -> None:
    """A journal of one server (one `name[pid]`), restarted under a new pid, keeps the source's one
    group: its alerts are labelled as a plain log's."""
    windows = Windows(FACTS)
    windows.observe(record("llama-server[1]", 0.0, 900))
    windows.observe(ServerRestart("s", 1.0, "llamacpp"))
    windows.observe(record("llama-server[2]", 2.0, 800))
    assert {k: [p.cached for p in v] for k, v in windows.requests.items()} == {(("source", "s"),): [800]}


def test_alertmanager_and_slack_name_the_server() -> None:
    """A server's alert reaches Alertmanager with a `server` label and Slack's header names it."""
    (firing, *_) = [a for a in alerts("llamacpp-journal-two-servers") if a["alert"] == "pinned_cache_length"]
    alert = Alert(
        firing["alert"], firing["labels"], firing["severity"], firing["state"], 1767225600.0,
        firing["summary"], firing["cause"], firing["fix"], firing["evidence"],
    )  # fmt: skip
    with Receiver() as receiver:
        notifier = AlertmanagerNotifier("am", Secret(receiver.base + "/"), timeout=2)
        assert "ok" == notifier.send([alert], new_session()).kind
        posted = receiver.seen[0].body
    assert posted[0]["labels"]["server"] == "llama-server[4377]"
    assert posted[0]["labels"]["source"] == "llamacpp-journal-two-servers"
    header = build_message([alert])["blocks"][0]["text"]["text"]
    assert header.endswith("pinned_cache_length — llamacpp-journal-two-servers · llama-server[4377]")
