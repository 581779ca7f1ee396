"""What each notifier puts on the wire: Slack Block Kit within limits, webhook, Alertmanager."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from notify_helpers import Receiver, make_alert

from kvwatch.notify.alertmanager import AlertmanagerNotifier
from kvwatch.notify.base import new_session
from kvwatch.notify.payload import (
    alert_from_record,
    alert_to_record,
    fingerprint,
    iso_utc,
    transition_id,
)
from kvwatch.notify.secrets import Secret
from kvwatch.notify.slack import build_message, fit
from kvwatch.notify.webhook import WebhookNotifier


def test_webhook_body_is_the_replay_alert_object() -> None:
    """The webhook posts one alert exactly as `replay --format json` lists it."""
    alert = make_alert(at=1767225600.25, evidence={"bytes": 10, "groups": ("a", "b")})
    with Receiver() as receiver:
        notifier = WebhookNotifier("hook", Secret(receiver.url), timeout=2)
        assert "ok" == notifier.send([alert], new_session()).kind
        seen = receiver.seen[0]
    assert {
        "id": "39da7fe0ba1a95d4:firing:2026-01-01T00:00:00.25Z",
        "fingerprint": "39da7fe0ba1a95d4",
        "alert": "pinned_cache_length",
        "labels": {"source": "llama-a"},
        "severity": "warning",
        "state": "firing",
        "at": "2026-01-01T00:00:00.25Z",
        "summary": "cached length pinned at 17920 tokens",
        "cause": "a per-request header changes after the tool definitions",
        "fix": "strip the header at the gateway",
        "evidence": {"bytes": 10, "groups": ["a", "b"]},
    } == seen.body
    assert "application/json; charset=utf-8" == seen.headers["Content-Type"]


def test_fingerprint_is_pinned() -> None:
    """The fingerprint is sha256 of the canonical JSON of name and sorted labels, 16 hex digits: a fixed
    alert keeps this exact value (receivers store it; a change here breaks their de-duplication)."""
    labels = {"source": "llama-a", "slot": "0", "engine": "é"}
    alert = make_alert("prefix_reuse_broken", labels=labels, at=1767225600.0)
    canonical = '{"alert":"prefix_reuse_broken","labels":{"engine":"é","slot":"0","source":"llama-a"}}'
    assert ("cc3e4f0f53666794", "cc3e4f0f53666794") == (
        fingerprint(alert),
        hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16],
    )
    assert "cc3e4f0f53666794:firing:2026-01-01T00:00:00Z" == transition_id(alert)
    other = make_alert("prefix_reuse_broken", labels=dict(reversed(labels.items())), summary="new text")
    assert fingerprint(alert) == fingerprint(other)  # label order and annotations do not count
    assert fingerprint(alert) != fingerprint(make_alert("prefix_reuse_broken", labels={"source": "b"}))


def test_iso_utc_prints_whole_seconds_without_a_fraction() -> None:
    """Event times print as UTC with Z; a fraction only when there is one, without trailing zeros."""
    assert ["2026-01-01T00:00:00Z", "2026-01-01T00:00:01.5Z"] == [
        iso_utc(1767225600.0),
        iso_utc(1767225601.5),
    ]


def test_spool_records_round_trip() -> None:
    """An alert survives the spool's record form unchanged."""
    alert = make_alert(at=1767225600.123456, state="resolved", severity="critical")
    assert alert == alert_from_record(json.loads(json.dumps(alert_to_record(alert))))


def test_alertmanager_posts_labels_annotations_and_times() -> None:
    """Alertmanager gets a list of alerts at /api/v2/alerts; resolved ones carry endsAt."""
    firing = make_alert(labels={"source": "vllm-a", "engine": "0"}, severity="critical")
    resolved = make_alert(state="resolved", at=1767225900.0)
    with Receiver() as receiver:
        notifier = AlertmanagerNotifier("am", Secret(receiver.base + "/"), timeout=2)
        assert "ok" == notifier.send([firing, resolved], new_session()).kind
        seen = receiver.seen[0]
    annotations = {
        "summary": "cached length pinned at 17920 tokens",
        "description": (
            "a per-request header changes after the tool definitions. Fix: strip the header at the gateway"
        ),
        "runbook_url": "docs/alerts.md#pinned_cache_length",
        "cause": "a per-request header changes after the tool definitions",
        "fix": "strip the header at the gateway",
        "evidence": '{"cached_tokens": 17920, "share": 0.9}',
    }
    assert "/api/v2/alerts" == seen.path
    assert [
        {
            "labels": {
                "alertname": "pinned_cache_length",
                "severity": "critical",
                "source": "vllm-a",
                "engine": "0",
            },
            "annotations": annotations,
            "startsAt": "2026-01-01T00:00:00Z",
        },
        {
            "labels": {
                "alertname": "pinned_cache_length",
                "severity": "warning",
                "source": "llama-a",
            },
            "annotations": annotations,
            "endsAt": "2026-01-01T00:05:00Z",
        },
    ] == seen.body


def test_alertmanager_firing_ttl_and_generator_url() -> None:
    """With firing_ttl a firing alert carries endsAt = at + ttl; generatorURL when configured."""
    with Receiver() as receiver:
        notifier = AlertmanagerNotifier(
            "am", Secret(receiver.base), firing_ttl=3600.0, generator_url="http://kv/"
        )
        notifier.send([make_alert()], new_session())
        body = receiver.seen[0].body[0]
    expected = ("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z", "http://kv/")
    assert expected == (body["startsAt"], body["endsAt"], body["generatorURL"])


def blocks_of(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The blocks of one type."""
    return [b for b in message["blocks"] if b["type"] == kind]


def test_slack_message_shape_for_a_firing_alert() -> None:
    """Header, summary, evidence fields, cause, fix and a context line, with a text fallback."""
    message = build_message([make_alert(labels={"source": "llama-a"})])
    types = [b["type"] for b in message["blocks"]]
    assert ["header", "section", "section", "section", "section", "context"] == types
    header = message["blocks"][0]["text"]
    assert "plain_text" == header["type"]
    assert ":rotating_light: FIRING: pinned_cache_length — llama-a" == header["text"]
    assert "cached length pinned at 17920 tokens" == message["blocks"][1]["text"]["text"]
    fields = [f["text"] for f in message["blocks"][2]["fields"]]
    assert ["*cached_tokens*\n17920", "*share*\n0.9"] == fields
    assert message["blocks"][3]["text"]["text"].startswith("*Cause*\n")
    assert message["blocks"][4]["text"]["text"].startswith("*Fix*\n")
    context = message["blocks"][5]["elements"][0]["text"]
    assert "firing at 2026-01-01T00:00:00Z · severity warning · source=llama-a" == context
    expected = "[FIRING: pinned_cache_length — llama-a] cached length pinned at 17920 tokens"
    assert expected == message["text"]


def test_slack_resolved_message_leaves_out_cause_and_fix() -> None:
    """A resolved message says RESOLVED and keeps summary, evidence and time only."""
    message = build_message([make_alert(state="resolved")])
    assert ["header", "section", "section", "context"] == [b["type"] for b in message["blocks"]]
    assert message["blocks"][0]["text"]["text"].startswith(":white_check_mark: RESOLVED: ")


def test_slack_escapes_mrkdwn_control_characters() -> None:
    """&, < and > in alert text are escaped so Slack shows them literally."""
    message = build_message([make_alert(summary="a<b & c>d")])
    assert "a&lt;b &amp; c&gt;d" == message["blocks"][1]["text"]["text"]


def test_slack_limits_hold_for_huge_alerts() -> None:
    """A huge evidence dict and huge texts stay within every Slack limit, cut with an ellipsis."""
    evidence = {f"key_{i:04d}": "v" * 5000 for i in range(1000)}
    alert = make_alert(
        alert="a" * 400, summary="s" * 9000, cause="c" * 9000, fix="&" * 9000, evidence=evidence
    )
    message = build_message([alert, alert])
    blocks = message["blocks"]
    assert 50 == len(blocks)
    for block in blocks:
        if block["type"] == "header":
            assert 150 >= len(block["text"]["text"])
        if "text" in block and block["type"] == "section":
            assert 3000 >= len(block["text"]["text"])
        if "fields" in block:
            assert 10 >= len(block["fields"])
            assert all(2000 >= len(f["text"]) for f in block["fields"])
    sections = blocks_of(build_message([alert]), "section")
    fields = [f["text"] for s in sections if "fields" in s for f in s["fields"]]
    assert "… and 551 more evidence items" == fields[-1]
    fix = sections[-1]["text"]["text"]
    assert fix.endswith("&amp;…")
    assert 3000 >= len(message["text"])


def test_fit_never_cuts_an_entity() -> None:
    """Truncation backs off to before a partial &...; entity."""
    assert ["abc", "ab…", "a&amp;…", "a…"] == [
        fit("abc", 3),
        fit("abcd", 3),
        fit("a&amp;&amp;", 8),
        fit("a&amp;&amp;", 5),
    ]


def test_alertmanager_url_may_name_the_alerts_endpoint_itself() -> None:
    """A URL given as Alertmanager's docs show it (`…/api/v2/alerts`) is posted to as it is, not doubled."""
    with Receiver() as receiver:
        for url in (receiver.base, receiver.base + "/api/v2/alerts", receiver.base + "/api/v2/alerts/"):
            notifier = AlertmanagerNotifier("am", Secret(url), timeout=2)
            assert "ok" == notifier.send([make_alert()], new_session()).kind
        paths = [seen.path for seen in receiver.seen]
    assert ["/api/v2/alerts"] * 3 == paths
