"""The alerting half of the config schema: `[detectors.<name>]`, `[[notifier]]`, `[[silence]]`."""

from __future__ import annotations

from types import MappingProxyType
from typing import cast

from kvwatch.config_fields import Fields, unknown
from kvwatch.config_types import (
    NOTIFIER_TYPES,
    SEVERITIES,
    DetectorConfig,
    NotifierConfig,
    NotifierType,
    SilenceConfig,
)
from kvwatch.detectors import ALERTS
from kvwatch.model import Severity
from kvwatch.notify.secrets import Secret


def read_detectors(top: Fields) -> dict[str, DetectorConfig]:
    """`[detectors.<name>]` tables: `enabled` and scalar settings (each detector checks its own)."""
    value = top.get("detectors")
    if value is None:
        return {}
    if not isinstance(value, dict):
        top.problem("detectors", "must be a table of [detectors.<name>] tables")
        return {}
    out = {}
    for name, table in value.items():
        if not isinstance(table, dict):
            top.problems.append(f"detectors.{name}: must be a table ([detectors.{name}])")
            continue
        f = Fields(table, f"detectors.{name}", top.problems, top.base)
        enabled = f.boolean("enabled", True)
        settings = {}
        for key in [k for k in table if k != "enabled"]:
            if isinstance(f.get(key), str | int | float | bool):
                settings[key] = table[key]
            else:
                f.problem(key, "must be a string, number or boolean")
        out[name] = DetectorConfig(name, enabled, MappingProxyType(settings))
    return out


def read_notifier(f: Fields, name: str) -> NotifierConfig:
    """One `[[notifier]]`; the URL is a secret, so no message ever quotes it."""
    kind = cast(NotifierType, f.choice("type", NOTIFIER_TYPES, None) or "webhook")
    raw = f.get("url")
    url_file = f.path("url_file")
    url = None
    if raw is not None and f.has("url_file"):
        f.problem("url", "give url or url_file, not both")
    elif raw is not None and not (isinstance(raw, str) and raw.startswith(("http://", "https://"))):
        f.problem("url", "must be an http:// or https:// URL")
    elif raw is not None:
        url = Secret(raw)
    alerts = f.strings("alerts")
    for i, alert in enumerate(alerts):
        if alert not in ALERTS:
            f.problem(f"alerts[{i}]", unknown("alert", alert, ALERTS))
    severity = cast(Severity, f.choice("min_severity", SEVERITIES, "info"))
    return NotifierConfig(name, kind, url, url_file, alerts, severity)


def read_silence(f: Fields) -> SilenceConfig | None:
    """One `[[silence]]`: matchers (label = "value"), ends_at, optional starts_at and comment."""
    matchers = f.get("matchers")
    if matchers is None:
        f.problem("matchers", "required (at least one label)")
    elif (
        not isinstance(matchers, dict)
        or not matchers
        or not all(isinstance(v, str) for v in matchers.values())
    ):
        f.problem("matchers", 'must be a non-empty table of label = "value" strings')
    else:
        for label in ("alert", "alertname"):  # (both name the alert: notify/routing.py)
            if label in matchers and matchers[label] not in ALERTS:
                f.problem(f"matchers.{label}", unknown("alert", matchers[label], ALERTS))
    ends_at, starts_at = f.time("ends_at", required=True), f.time("starts_at", required=False)
    if ends_at is not None and starts_at is not None and ends_at <= starts_at:
        f.problem("ends_at", "must be after starts_at")
    comment = f.string("comment", "") or ""
    f.done()
    if not isinstance(matchers, dict) or ends_at is None:
        return None
    return SilenceConfig(MappingProxyType(dict(matchers)), ends_at, starts_at, comment)
