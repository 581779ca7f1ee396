"""Two llama-servers in one journal, as an SRE lives it: one incident is one alert (no resolution and
new firing when a second server shows up, or when the daemon restarts), one server's restart forgets
only its own requests, and the report draws a request group per server."""

from __future__ import annotations

import contextlib
import io
import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import Kvwatch, file_source, wait_until, write_config
from notify_helpers import Receiver
from prometheus_client.parser import text_string_to_metric_families

from kvwatch.alerts import AlertBook
from kvwatch.cli import main
from kvwatch.engines import FACTS
from kvwatch.forensic.collect import EventCollector
from kvwatch.model import Finding, RequestRecord, ServerRestart, ServerStopped
from kvwatch.parsers.base import ParserSettings
from kvwatch.replay import plan, replay
from kvwatch.windows.window import Windows
from scripts.samples.llamacpp.journal import START, entries

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
BROKEN = "llamacpp-varying-header-chat.log"  # (fires pinned_cache_length and prefix_reuse_broken alone)
HEALTHY = "llamacpp-healthy-two-slots.log"
EXIT = "cleaning up before exit"


def lines_of(sample: str, *, exits: bool = True) -> list[str]:
    """A real capture's lines (without its `cleaning up before exit` line unless `exits`)."""
    text = (SAMPLES / sample).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if exits or EXIT not in line]


def exit_line(minutes: int) -> list[str]:
    """The line llama-server writes as it exits on SIGTERM, `minutes` after it started."""
    return [f"{minutes}.00.000.000 I srv    operator(): operator(): cleaning up before exit..."]


def journal(path: Path, *servers: tuple[list[str], str, float]) -> Path:
    """`journalctl -o short` of several servers' output: (lines, `name[pid]`, seconds after the first
    started), in time order, as scripts/samples/llamacpp/journal.py makes the journal samples."""
    merged = []
    for index, (lines, tag, offset) in enumerate(servers):
        merged += [(at, index, number, text) for at, number, text in entries(lines, tag, offset)]
    merged.sort(key=lambda entry: entry[:3])
    path.write_text("".join(text + "\n" for *_, text in merged), encoding="utf-8")
    return path


def replayed(log: Path) -> dict[str, Any]:
    """`kvwatch replay --format json` of a log."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert 0 == main(["replay", "--format", "json", "--year", "2026", str(log)])
    found: dict[str, Any] = json.loads(out.getvalue())
    return found


def transitions(found: dict[str, Any]) -> list[tuple[str, str, str, dict[str, str]]]:
    """Its alert transitions: (time, state, name, labels)."""
    return [(a["at"], a["state"], a["alert"], a["labels"]) for a in found["alerts"]]


def pinned_groups(found: dict[str, Any]) -> set[str]:
    """The request groups the pinned gauge names: their `server` ("" for the source's own group)."""
    return {sample["labels"].get("server", "") for sample in found["metrics"]["kvwatch_pinned_cache_tokens"]}


def test_an_alert_fired_before_the_second_server_spoke_goes_on_under_its_labels(tmp_path: Path) -> None:
    """The broken server fires alone (no `server` label); a healthy second server starts a minute
    later and its requests split the journal per server: the alerts go on, never resolved, and no
    labelled copy fires, while each server is judged on its own."""
    log = journal(
        tmp_path / "late-second.log",
        (lines_of(BROKEN, exits=False), "llama-server[4377]", 0.0),
        (lines_of(HEALTHY, exits=False), "llama-server[4101]", 60.0),
        (exit_line(10), "llama-server[4377]", 0.0),  # (event time moves 10 minutes on: resolutions due)
    )
    found = replayed(log)
    source = {"source": "late-second"}
    assert transitions(found) == [
        ("2026-12-05T09:14:10Z", "firing", "pinned_cache_length", source),
        ("2026-12-05T09:14:10Z", "firing", "prefix_reuse_broken", source),
    ]
    assert pinned_groups(found) == {"llama-server[4377]", "llama-server[4101]"}


def test_a_second_server_starting_is_no_restart_of_the_first(tmp_path: Path) -> None:
    """Before the second server's requests split the source, its start line leaves the first one's
    requests (and so its alerts) as they were: only a server that said it stopped is replaced."""
    log = journal(
        tmp_path / "second-start.log",
        (lines_of(BROKEN, exits=False), "llama-server[4377]", 0.0),
        ([line for line in lines_of(HEALTHY) if "slot " not in line], "llama-server[4101]", 60.0),
        (exit_line(10), "llama-server[4377]", 0.0),
    )
    assert [t[1:3] for t in transitions(replayed(log))] == [
        ("firing", "pinned_cache_length"),
        ("firing", "prefix_reuse_broken"),
    ]


def test_a_lone_server_stopped_and_started_under_a_new_pid_is_a_restart(tmp_path: Path) -> None:
    """A lone server that said it stopped, then its unit's new process: the source's history goes
    (its alerts resolve), and the new process keeps the source's own group, unlabelled."""
    log = journal(
        tmp_path / "restarted.log",
        (lines_of(BROKEN), "llama-server[4377]", 0.0),
        (lines_of(HEALTHY, exits=False), "llama-server[4460]", 60.0),
        (exit_line(10), "llama-server[4460]", 60.0),
    )
    found = replayed(log)
    source = {"source": "restarted"}
    assert [(state, name, labels) for _, state, name, labels in transitions(found)] == [
        ("firing", "pinned_cache_length", source),
        ("firing", "prefix_reuse_broken", source),
        ("resolved", "pinned_cache_length", source),
        ("resolved", "prefix_reuse_broken", source),
    ]
    assert pinned_groups(found) == {""}


def test_one_server_s_restart_forgets_only_its_own_requests(tmp_path: Path) -> None:
    """Of two servers, the healthy one stops and its unit starts again under a new pid: the broken
    one's alerts go on firing (its requests kept), the stopped one's group is gone, the new one's is
    its own."""
    log = journal(
        tmp_path / "one-restarts.log",
        (lines_of(BROKEN, exits=False), "llama-server[4377]", 0.0),
        (lines_of(HEALTHY), "llama-server[4101]", 1.0),
        (lines_of(HEALTHY, exits=False), "llama-server[4999]", 300.0),
        (exit_line(15), "llama-server[4377]", 0.0),
    )
    found = replayed(log)
    broken = {"source": "one-restarts", "server": "llama-server[4377]"}
    assert transitions(found) == [
        ("2026-12-05T09:14:10Z", "firing", "pinned_cache_length", broken),
        ("2026-12-05T09:14:10Z", "firing", "prefix_reuse_broken", broken),
    ]
    assert pinned_groups(found) == {"llama-server[4377]", "llama-server[4999]"}


@pytest.mark.parametrize("framing", ["bare", "journal"])
def test_ollama_s_two_runners_are_judged_apart(tmp_path: Path, framing: str) -> None:
    """Ollama's two bundled llama-servers (one a model), its log bare or under journald's
    `ollama[PID]:`: each runner's requests are a request group of their own, named by its model."""
    text = (SAMPLES / "ollama-0.30-two-runners.log").read_text(encoding="utf-8")
    if framing == "journal":
        stamp, lines = "Jun 10 09:00:00", []
        for line in text.splitlines():
            found = re.match(r"time=\d{4}-(\d\d)-(\d\d)T(\d\d:\d\d:\d\d)", line)
            if found:
                stamp = datetime.strptime(found.expand(r"\1 \2 \3"), "%m %d %H:%M:%S").strftime(
                    "%b %d %H:%M:%S"
                )
            lines.append(f"{stamp} gpu-host ollama[2001]: {line}\n")
        text = "".join(lines)
    log = tmp_path / "ollama.log"
    log.write_text(text, encoding="utf-8")
    found = replayed(log)
    assert pinned_groups(found) == {"sha256-a3de86cd1c13", "sha256-dde5aa3fc5ff"}
    assert found["metrics"]["kvwatch_ollama_requests_total"] == [
        {"labels": {"model": "sha256-a3de86cd1c13", "source": "ollama"}, "value": 7.0},
        {"labels": {"model": "sha256-dde5aa3fc5ff", "source": "ollama"}, "value": 4.0},
    ]


def on_port(lines: list[str], port: str) -> list[str]:
    """A capture's lines with its server listening on another port."""
    return [
        line.replace("listening on http://127.0.0.1:34267", f"listening on http://127.0.0.1:{port}")
        for line in lines
    ]


def test_a_server_killed_without_a_word_is_replaced_by_the_one_on_its_address(tmp_path: Path) -> None:
    """Of two servers, the broken one is killed (no `cleaning up before exit`) and its unit's new
    process listens on its address: the killed one's requests go (its alerts resolve), the other
    server's stay, and the new one is judged on its own."""
    log = journal(
        tmp_path / "killed.log",
        (lines_of(HEALTHY, exits=False), "llama-server[4101]", 0.0),
        (lines_of(BROKEN, exits=False), "llama-server[4377]", 1.0),
        (on_port(lines_of(HEALTHY, exits=False), "43719"), "llama-server[4999]", 300.0),
        (exit_line(15), "llama-server[4101]", 0.0),
    )
    found = replayed(log)
    broken = {"source": "killed", "server": "llama-server[4377]"}
    assert [(state, name, labels) for _, state, name, labels in transitions(found)] == [
        ("firing", "pinned_cache_length", broken),
        ("firing", "prefix_reuse_broken", broken),
        ("resolved", "pinned_cache_length", broken),
        ("resolved", "prefix_reuse_broken", broken),
    ]
    assert pinned_groups(found) == {"llama-server[4101]", "llama-server[4999]"}


def test_a_lone_server_killed_and_started_on_its_address_is_a_restart(tmp_path: Path) -> None:
    """A lone server killed without a word, its unit's new process on its address: a restart (the
    source's own group goes on, unlabelled), not a second server."""
    log = journal(
        tmp_path / "lone-killed.log",
        (lines_of(BROKEN, exits=False), "llama-server[4377]", 0.0),
        (on_port(lines_of(HEALTHY, exits=False), "43719"), "llama-server[4999]", 300.0),
        (exit_line(15), "llama-server[4999]", 300.0),
    )
    found = replayed(log)
    source = {"source": "lone-killed"}
    assert [(state, name, labels) for _, state, name, labels in transitions(found)] == [
        ("firing", "pinned_cache_length", source),
        ("firing", "prefix_reuse_broken", source),
        ("resolved", "pinned_cache_length", source),
        ("resolved", "prefix_reuse_broken", source),
    ]
    assert pinned_groups(found) == {""}


def record(server: str | None, time: float, cached: int = 900) -> RequestRecord:
    """A 1000-token request of source `s`."""
    return RequestRecord("s", time, 1000, cached, slot=0, server=server)


def test_windows_restart_one_server_of_several_and_those_that_stopped() -> None:
    """A restart naming a server of a split source clears its group and those of the servers that said
    they stopped; one naming none (a plain log's) clears the source's every group, as ever."""
    windows = Windows(FACTS)
    for i, server in enumerate(("a[1]", "b[2]", "c[3]")):
        windows.observe(record(server, float(i)))
    windows.observe(ServerStopped("s", 4.0, "a[1]"))
    windows.observe(ServerRestart("s", 5.0, "llamacpp", "d[4]"))
    assert {dict(k)["server"] for k in windows.requests} == {"b[2]", "c[3]"}
    windows.observe(ServerRestart("s", 6.0, "llamacpp", "c[3]"))
    assert {dict(k)["server"]: len(v) for k, v in windows.requests.items()} == {"b[2]": 1}
    windows.observe(ServerRestart("s", 7.0, "llamacpp"))
    assert [len(points) for points in windows.requests.values()] == [0]


def finding(labels: dict[str, str], server: str | None = None) -> Finding:
    """A pinned_cache_length finding with these labels, of `server`'s requests."""
    return Finding("pinned_cache_length", tuple(labels.items()), "warning", "s", "c", "f", {}, server)


SOURCE = {"source": "j"}
A = {"source": "j", "server": "a[1]"}
B = {"source": "j", "server": "b[2]"}


def test_the_book_keeps_one_incident_one_alert_when_the_server_label_comes() -> None:
    """A lone server's alert (no label) goes on when its findings gain their `server` label; another
    server's finding fires on its own; once resolved, the server's next firing carries its label."""
    book = AlertBook(resolve_after=60)
    (fired,) = book.update([finding(SOURCE, "a[1]")], 0.0)
    assert [] == book.update([finding(A)], 10.0)
    assert [(a.labels, a.evidence) for a in book.firing()] == [(SOURCE, {"server": "a[1]"})]
    (other,) = book.update([finding(A), finding(B)], 20.0)
    assert (fired.labels, other.labels) == (SOURCE, B)
    assert [a.labels for a in book.firing()] == [B, SOURCE]  # (in identity order)
    resolved = book.update([finding(B)], 100.0)
    assert [(a.state, a.labels, a.evidence) for a in resolved] == [("resolved", SOURCE, {"server": "a[1]"})]
    assert [(a.state, a.labels) for a in book.update([finding(A), finding(B)], 110.0)] == [("firing", A)]


def test_the_book_does_not_give_one_server_s_alert_to_another() -> None:
    """A lone server's unlabelled alert is not carried on by another server's finding."""
    book = AlertBook(resolve_after=60)
    book.update([finding(SOURCE, "a[1]")], 0.0)
    (fired,) = book.update([finding(B)], 10.0)
    assert fired.labels == B
    (resolved,) = book.update([finding(B)], 70.0)
    assert (resolved.state, resolved.labels) == ("resolved", SOURCE)


def test_a_restarted_daemon_s_unlabelled_finding_goes_on_as_the_labelled_alert() -> None:
    """After a daemon restart the windows are empty: a server's finding, unlabelled until the second
    server speaks again, goes on as its labelled alert restored from the state, not a new one."""
    book = AlertBook(resolve_after=60)
    book.update([finding(A), finding(B)], 0.0)
    restored = AlertBook(resolve_after=60)
    restored.load(json.loads(json.dumps(book.dump())))
    assert [] == restored.update([finding(SOURCE, "a[1]")], 10.0)
    assert [] == restored.update([finding(A), finding(B)], 20.0)
    assert [a.labels for a in restored.firing()] == [A, B]


@pytest.mark.parametrize(
    ("sample", "groups"),
    [
        ("llamacpp-journal-two-servers", {("", "llama-server[4101]"), ("", "llama-server[4377]")}),
        ("llamacpp-synthetic-incident4", {("", "")}),  # (a journal of one server)
        ("ollama-0.30-two-runners", {("", "sha256-a3de86cd1c13"), ("", "sha256-dde5aa3fc5ff")}),
    ],
)
def test_the_report_draws_a_request_group_per_server(sample: str, groups: set[tuple[str, str]]) -> None:
    """`kvwatch report`'s groups of a replayed journal: one per server where it holds several (named
    and labelled as the windows label their alerts), the source's own where it holds one."""
    collector = EventCollector()
    replay(
        plan([str(SAMPLES / f"{sample}.log")], "auto", None),
        ParserSettings(year=2026),
        report=False,
        observers=[collector.observe],
    )
    drawn = {(g.labels.get("entry", ""), g.labels.get("server", "")) for g in collector.data.groups.values()}
    assert drawn == groups
    assert all(g.name == g.labels.get("server", "") for g in collector.data.groups.values())


STAMP = re.compile(r"(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) ")


def later(lines: list[str], seconds: int) -> list[str]:
    """A running server's request lines again, `seconds` later on its own clock (those after its
    `listening on` line, their `M.SS.mmm.uuu` stamps moved on)."""
    start = next(i for i, line in enumerate(lines) if "listening on" in line) + 1

    def moved(found: re.Match[str]) -> str:
        minutes, secs, millis, micros = (int(g) for g in found.groups())
        total = minutes * 60 + secs + seconds
        return f"{total // 60}.{total % 60:02d}.{millis:03d}.{micros:03d} "

    return [STAMP.sub(moved, line, count=1) for line in lines[start:]]


def firing(daemon: Kvwatch) -> set[tuple[str, str]]:
    """The alerts `kvwatch_alert_firing` says fire: (name, server label or "")."""
    _, _, body = daemon.get("/metrics")
    return {
        (sample.labels["alert"], sample.labels.get("server", ""))
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == "kvwatch_alert_firing" and sample.value == 1.0
    }


def posted(receiver: Receiver) -> set[tuple[str, str]]:
    """The alerts posted to a receiver as Alertmanager's API takes them: (name, server label or "")."""
    return {
        (a["labels"]["alertname"], a["labels"].get("server", ""))
        for body in receiver.accepted()
        for a in body
    }


@pytest.mark.slow
def test_the_daemon_restarted_mid_incident_sends_alertmanager_no_second_alert(tmp_path: Path) -> None:
    """The live daemon tails a journal of two servers and posts the broken one's alerts to a real HTTP
    receiver as Alertmanager's API takes them, labelled with its server; restarted with empty windows,
    it reads that server's next requests alone (unlabelled) and then the healthy one's again: the
    restored alerts go on, and Alertmanager gets no unlabelled copy, no resolution."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    offset = (now - timedelta(seconds=300) - START).total_seconds()
    # (the broken server starts once the healthy one's requests are written: whenever the daemon's
    # reads end and its clock ticks, the broken one's requests are judged as one server's of two)
    log = journal(
        tmp_path / "two.log",
        (lines_of(HEALTHY, exits=False), "llama-server[4101]", offset),
        (lines_of(BROKEN, exits=False), "llama-server[4377]", offset + 30.0),
        (exit_line(1), "llama-server[4101]", offset),  # (a later event: the detectors tick on its time)
    )
    broken = {("pinned_cache_length", "llama-server[4377]"), ("prefix_reuse_broken", "llama-server[4377]")}
    with Receiver() as am:
        notifier = f'[[notifier]]\nname = "am"\ntype = "alertmanager"\nurl = "{am.base}"\n'
        source = file_source("two", log, engine="llamacpp") + f"year = {now.year}\n"
        cfg = write_config(tmp_path / "kv.toml", source + notifier)
        first = Kvwatch(["--config", str(cfg)], tmp_path / "run1.err")
        wait_until(lambda: posted(am) == broken, 20.0, "the broken server's alerts posted")
        assert 0 == first.stop()
        more = tmp_path / "more.log"
        journal(
            more,
            (later(lines_of(BROKEN, exits=False), 120), "llama-server[4377]", offset + 30.0),
            (later(lines_of(HEALTHY, exits=False), 180)[:40], "llama-server[4101]", offset),
        )
        with log.open("a", encoding="utf-8") as out:
            out.write(more.read_text(encoding="utf-8"))
        second = Kvwatch(["--config", str(cfg)], tmp_path / "run2.err")
        # (the healthy server's requests split the windows again: the ticks before them have run)
        wait_until(lambda: second.value("kvwatch_pinned_cache_tokens", {"server": "llama-server[4101]"})
                   is not None, 20.0, "the second run's requests of both servers read")  # fmt: skip
        assert firing(second) == broken
        assert 0 == second.stop()
        sent = [(a["labels"]["alertname"], a["labels"].get("server", ""), "startsAt" in a)
                for body in am.accepted() for a in body]  # fmt: skip
    assert sorted(sent) == sorted((name, server, True) for name, server in broken)  # (each once, firing)
