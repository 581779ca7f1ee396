"""The landing page as a function: sources with their last line, firing alerts, escaping, evidence."""

from __future__ import annotations

import html
import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

from daemon_helpers import Kvwatch, shifted_sample, wait_until

from kvwatch.model import Alert
from kvwatch.notify.status import Status
from kvwatch.web.landing import SourceRow, evidence_value, landing_page

NOW = datetime(2026, 12, 1, 21, 3, 22, tzinfo=timezone.utc).timestamp()
HOSTILE = "<script>alert(1)</script>"


def text(page: str) -> str:
    """What a person reads: the body's text, tags stripped, entities decoded, spaces collapsed."""
    body = page.split("<body>", 1)[1]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def row(name: str = "vllm", last: float | None = NOW - 12, up: bool = True) -> SourceRow:
    """A source row."""
    return SourceRow(name, "file", "vllm", up, None if up else "FileNotFoundError: x", last, 589, 134, 2)


def alert(**changes: object) -> Alert:
    """A firing write_only_offload alert."""
    fields: dict[str, object] = {
        "alert": "write_only_offload",
        "labels": {"source": "vllm", "engine": "0"},
        "severity": "warning",
        "state": "firing",
        "at": NOW - 300,
        "summary": "KV offload stored 58.2 GB and loaded nothing back",
        "cause": "The excluded KV groups never store their trailing chunk.",
        "fix": "Take the upstream fix, or turn the offload off.",
        "evidence": {"stored_bytes_total": 58242908160, "lookups_window": 1893, "span_seconds": 230.0},
    }
    fields.update(changes)
    return Alert(**fields)  # type: ignore[arg-type]


def test_a_source_row_shows_its_last_line_time_and_counts() -> None:
    """Name, type, engine, up, the last event time with its age, and the three counts."""
    page = text(landing_page("1.2.3", [row()], [], NOW))
    assert "vllm file vllm up 2026-12-01 21:03:10Z (12 s ago) 589 134 2" in page
    assert "kvwatch 1.2.3" in page


def test_no_line_yet_and_a_down_source_with_its_reason() -> None:
    """A source without an event says so; a down one says why."""
    page = text(landing_page("1", [row("a", last=None), row("b", last=NOW - 7200, up=False)], [], NOW))
    assert "a file vllm up no line yet 589" in page
    assert "b file vllm down FileNotFoundError: x 2026-12-01 19:03:22Z (2 h ago)" in page
    assert "1/2 sources up" in page


def test_no_alert_firing() -> None:
    """Without firing alerts the page says so, and still links the metrics, health and report pages."""
    page = landing_page("1", [row()], [], NOW)
    assert "Firing alerts no alert firing Sources" in text(page)
    links = (
        "<a href='metrics'>/metrics</a>",
        "<a href='healthz'>/healthz</a>",
        "<a href='report'>/report</a>",
    )
    assert links == tuple(re.findall(r"<a href='[a-z]+'>[^<]+</a>", page))  # (and #sources: see below)
    assert "<meta http-equiv='refresh' content='15'>" in page


def test_firing_alerts_come_critical_first_then_newest_the_silenced_last() -> None:
    """Notified alerts before silenced ones; each by severity (critical, warning, info), then newest
    first; whatever order the daemon hands them in."""
    given = [
        (alert(alert="no_signal", severity="info", at=NOW - 10), False),
        (alert(alert="old_warning", at=NOW - 9000), False),
        (alert(alert="silenced_critical", severity="critical", at=NOW - 5), True),
        (alert(alert="new_warning", at=NOW - 60), False),
        (alert(alert="old_critical", severity="critical", at=NOW - 7200), False),
        (alert(alert="new_critical", severity="critical", at=NOW - 120), False),
    ]
    expected = [
        "new_critical",
        "old_critical",
        "new_warning",
        "old_warning",
        "no_signal",
        "silenced_critical",
    ]
    for order in (given, given[::-1], sorted(given, key=lambda pair: pair[0].alert)):
        page = landing_page("1", [row()], order, NOW)
        assert expected == re.findall(r"<span class='sev'>\w+</span> (\w+)</h3>", page)


def test_the_sources_are_a_click_away_from_the_top() -> None:
    """The header says how many sources are up and links the table, as the nav does, however many
    alerts come before it."""
    page = landing_page("1", [row(), row("llama", up=False)], [(alert(), False)] * 30, NOW)
    header = page.split("</header>", 1)[0]
    assert "<a href='#sources'>1/2 sources up</a>" in header and "<a href='#sources'>sources</a>" in header
    assert 1 == page.count("id='sources'") and page.index("id='sources'") > page.rindex("class='alert")


def test_a_firing_alert_shows_what_the_notifiers_get() -> None:
    """Name, severity, labels, since when, summary, cause, evidence and fix of the alert object."""
    page = text(landing_page("1", [row()], [(alert(), False)], NOW))
    assert (
        "warning write_only_offload engine=0, source=vllm · firing since 2026-12-01 20:58:22Z (5 min ago) "
        "KV offload stored 58.2 GB and loaded nothing back "
        "Cause The excluded KV groups never store their trailing chunk. "
        "Evidence stored_bytes_total 58,242,908,160 B (58.2 GB) lookups_window 1,893 span_seconds 230 s "
        "Fix Take the upstream fix, or turn the offload off."
    ) in page
    assert "1 alert firing" in page and "silenced" not in page


def test_a_silenced_alert_says_it_is_not_notified() -> None:
    """A firing alert a silence mutes is shown, marked."""
    assert "silenced: not notified" in text(landing_page("1", [], [(alert(), True)], NOW))


def test_evidence_values_are_formatted_for_reading() -> None:
    """Integers grouped, floats to four digits, bytes also in units, seconds with `s`, lists joined."""
    cases = [
        ("requests", 10, "10"),
        ("lookups", 1234567, "1,234,567"),
        ("implied_hit_rate", 0.0664, "0.0664"),
        ("prompt_growth_rank_correlation", 0.90512, "0.9051"),
        ("prompt_throughput_mean", 23767.7, "23,767.7"),
        ("loaded_bytes_window", 0, "0 B"),
        ("stored_bytes", 1500.0, "1,500 B (1.5 KB)"),
        ("stored_bytes", 3 * 10**12, "3,000,000,000,000 B (3.0 TB)"),
        ("span_seconds", 230.0, "230 s"),
        ("prompt_range", [614, 943], "614, 943"),
        ("groups", {"full": 1, "swa": 2}, "full: 1; swa: 2"),
        ("enabled", True, "true"),
        ("missing", None, "null"),
        ("excluded_kv_groups", "EAGLE/MTP [2]", "EAGLE/MTP [2]"),
        ("cause", "", "none"),
    ]
    assert [want for _, _, want in cases] == [evidence_value(key, value) for key, value, _ in cases]


def test_everything_from_logs_config_and_alerts_is_escaped() -> None:
    """A hostile source name, label, summary, cause, fix or evidence key/value stays inert text."""
    hostile = alert(
        alert=HOSTILE,
        labels={"source": HOSTILE},
        summary=HOSTILE,
        cause=HOSTILE,
        fix=HOSTILE,
        evidence={HOSTILE: HOSTILE, "list": [HOSTILE]},
    )
    bad = SourceRow(HOSTILE, "file", HOSTILE, False, HOSTILE, None, 0, 0, 0)
    page = landing_page(HOSTILE, [bad], [(hostile, False)], NOW)
    assert "<script" not in page.lower()
    assert text(page).count(HOSTILE) == 12


def test_a_live_daemon_shows_the_engine_auto_chose_and_the_last_line(tmp_path: Path) -> None:
    """`kvwatch run --stdin`: `auto (deciding)` and no line before input; then the engine and the time."""
    end = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(seconds=30)
    shifted_sample(tmp_path / "vllm.log", end)
    read, write = os.pipe()
    kv = Kvwatch(["--stdin"], tmp_path / "kv.err", stdin=read)
    os.close(read)
    # The port listens before the sources open.
    wait_until(lambda: "1/1 sources up" in text(kv.get("/")[2]), what="the source open")
    assert "stdin stdin auto (deciding) up no line yet 0 0 0" in text(kv.get("/")[2])
    with os.fdopen(write, "w") as pipe:
        pipe.write((tmp_path / "vllm.log").read_text())
        pipe.flush()
        wait_until(lambda: kv.value("kvwatch_lines_recognized_total", {"source": "stdin"}) == 136)
        page = text(kv.get("/")[2])
    assert f"stdin stdin auto: vllm up {end:%Y-%m-%d %H:%M:%S}Z (" in page, page
    assert 0 == kv.proc.wait(10)
    kv.err.close()


def test_a_live_daemon_shows_format_drift(tmp_path: Path) -> None:
    """`kvwatch run --stdin` fed a vLLM log whose stats lines were reworded (`Running:` as `Active:`):
    the page shows the info alert format_drift with the engine and the sanitised shape."""
    end = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(seconds=30)
    shifted_sample(tmp_path / "vllm.log", end)
    read, write = os.pipe()
    kv = Kvwatch(["--stdin"], tmp_path / "kv.err", stdin=read)
    os.close(read)
    with os.fdopen(write, "w") as pipe:
        pipe.write((tmp_path / "vllm.log").read_text().replace("Running: ", "Active: "))
        pipe.flush()
        wait_until(lambda: "format_drift" in text(kv.get("/")[2]), what="format_drift on the page")
        page = text(kv.get("/")[2])
    assert "info format_drift" in page and "vllm lines kvwatch does not fully know" in page
    assert "Active: N reqs" in page
    assert 0 == kv.proc.wait(10)
    kv.err.close()


def test_a_probes_runs_read_as_times_and_one_run_per_line() -> None:
    """probe_prefix_miss's `runs`: each run on its own line, its `at` a UTC time (not Unix seconds with
    thousands separators), its requests each in parentheses."""
    runs = [
        {"at": NOW - 20, "cached_share": 0.0, "verdict": "not reused",
         "requests": [{"prompt_tokens": 7635, "cached_tokens": 0},
                      {"prompt_tokens": 7678, "cached_tokens": 0}]},
        {"at": NOW, "cached_share": 0.0, "verdict": "not reused", "requests": []},
    ]  # fmt: skip
    shown = evidence_value("runs", runs)
    first, second = shown.split("\n")
    assert first == (
        "at: 2026-12-01 21:03:02Z; cached_share: 0; verdict: not reused; requests: "
        "(prompt_tokens: 7,635; cached_tokens: 0), (prompt_tokens: 7,678; cached_tokens: 0)"
    )
    assert second.startswith("at: 2026-12-01 21:03:22Z;")


def test_a_dead_engine_is_said_beside_its_source() -> None:
    """A source whose engine_start_failed fires reads `up` (its log) and `engine down` (its engine)."""
    dead = alert(alert="engine_start_failed", labels={"source": "vllm"}, severity="critical")
    page = text(landing_page("1", [row(), row("other")], [(dead, False)], NOW))
    assert "vllm file vllm up engine down" in page
    assert "other file vllm up 2026" in page


def test_probes_show_their_last_run_and_verdict() -> None:
    """Configured probes get a table: endpoint, last run, verdict (a failed run's outcome in red), share,
    and a link to a firing probe_prefix_miss; no probes, no table."""
    from kvwatch.web.landing import ProbeRow

    probes = [
        ProbeRow("billing", "http://127.0.0.1:8000/v1/messages", NOW - 20, "ok",
                 "reused: 7552 of 7634 prefix tokens cached", 0.989, False),
        ProbeRow("request-id", "http://127.0.0.1:8000/v1/chat/completions (nonce_form request-id)", NOW - 5,
                 "ok", "not reused: 0 of 7634 prefix tokens cached", 0.0, True),
        ProbeRow("gateway", "https://gw.example/v1", None, "", "", None, False),
    ]  # fmt: skip
    page = text(landing_page("1", [row()], [], NOW, probes=probes))
    assert (
        "billing http://127.0.0.1:8000/v1/messages 2026-12-01 21:03:02Z (20 s ago) "
        "reused: 7552 of 7634 prefix tokens cached 98.9%"
    ) in page
    assert "not reused: 0 of 7634 prefix tokens cached probe_prefix_miss firing 0.0%" in page
    assert "gateway https://gw.example/v1 not run yet" in page
    assert "Probes" not in text(landing_page("1", [row()], [], NOW))


def test_a_failing_notifier_is_named_at_the_top_with_its_last_status_and_what_waits() -> None:
    """A failing notifier: the header names it with the alerts waiting; its row says since when, its last
    status and what it means, the waiting count and size; a healthy one says delivering; no table
    without notifiers."""
    detail = "https://am.example:9093: HTTP 404: 404 page not found"
    failing = Status(
        "pager", "https://am.example:9093", 3, 4200, NOW - 360, "http_404", detail,
        delivered=5, dropped=1, last_drop="http_400",
    )  # fmt: skip
    healthy = Status("chat", "https://hooks.slack.com", 0, 0, delivered=12)
    page = text(landing_page("1.0", [row()], [], NOW, notifiers=[healthy, failing]))
    assert "0 alerts firing · 1/1 sources up · notifier failing: pager (3 alerts waiting)" in page
    assert (
        "chat https://hooks.slack.com delivering 0 12 0 "
        "pager https://am.example:9093 failing since 2026-12-01 20:57:22Z (6 min ago) last: http_404: "
        "https://am.example:9093: HTTP 404: 404 page not found the receiver is misconfigured: check the "
        "notifier's URL, then reload kvwatch last dropped: http_400 3 (4.2 KB) 5 1"
    ) in page
    assert "Notifiers" not in text(landing_page("1.0", [row()], [], NOW))
