"""Every alert kvwatch sends and every shipped Prometheus rule has a description and a runbook_url that
lands on an existing section of docs/alerts.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from notify_helpers import make_alert

from kvwatch.config import ConfigError, parse_config
from kvwatch.detectors import ALERTS
from kvwatch.notify.alertmanager import am_alert
from kvwatch.notify.runbook import RUNBOOK_BASE_URL
from kvwatch.notify.testalert import TEST_ALERT, sample_alert

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "prometheus" / "kvwatch-rules.yml"


def anchors() -> set[str]:
    """The heading anchors of docs/alerts.md as GitHub makes them (lower case, punctuation dropped)."""
    headings = re.findall(r"^#+ (.+)$", (ROOT / "docs" / "alerts.md").read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def section(url: str) -> str:
    """The anchor of a runbook_url under the default base (fails for any other base)."""
    base, _, anchor = url.partition("#")
    assert RUNBOOK_BASE_URL == base, url
    return anchor


def test_every_alert_sent_to_alertmanager_has_a_description_and_a_runbook() -> None:
    alerts = [make_alert(name) for name in ALERTS] + [sample_alert(1767225600.0)]
    assert TEST_ALERT in {a.alert for a in alerts}
    for alert in alerts:
        notes = am_alert(alert)["annotations"]
        assert notes["description"].strip() and notes["description"] != notes["summary"], alert.alert
        assert section(notes["runbook_url"]) in anchors(), alert.alert


def test_every_rule_has_a_description_and_a_runbook_on_the_alerts_page() -> None:
    groups = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    rules = [rule for group in groups for rule in group["rules"] if "alert" in rule]
    assert len(rules) >= 8
    for rule in rules:
        notes = rule["annotations"]
        assert notes["description"].strip(), rule["alert"]
        anchor = section(notes["runbook_url"])
        if anchor == "{{ $labels.alert }}":  # KvwatchAlertFiring: the relayed alert's own section
            assert set(ALERTS) <= anchors(), rule["alert"]
        else:
            assert anchor in anchors(), rule["alert"]


def test_the_runbook_base_url_is_configurable() -> None:
    config = parse_config({"alerting": {"runbook_base_url": "https://wiki.internal/kvwatch/alerts"}}, ROOT)
    base = config.alerting.runbook_base_url
    url = am_alert(make_alert("no_signal"), runbook_base_url=base)["annotations"]["runbook_url"]
    assert "https://wiki.internal/kvwatch/alerts#no_signal" == url


def test_the_default_runbook_url_names_no_host() -> None:
    """Without runbook_base_url the runbook is the page's path in kvwatch's sources, not a made-up link."""
    default = parse_config({}, ROOT).alerting.runbook_base_url
    assert (
        "docs/alerts.md#no_signal"
        == am_alert(make_alert("no_signal"), runbook_base_url=default)["annotations"]["runbook_url"]
    )
    assert 'runbook_url: "docs/alerts.md#' in RULES.read_text(encoding="utf-8")
    with pytest.raises(ConfigError, match=r"alerting\.runbook_base_url: must be an http:// or https:// URL"):
        parse_config({"alerting": {"runbook_base_url": "wiki/alerts"}}, ROOT)
