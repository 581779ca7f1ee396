"""The alerting half of the config schema: `[detectors.<name>]`, `[[notifier]]`, `[[silence]]`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from kvwatch.config.bounds import out_of_range
from kvwatch.config.fields import Fields, unknown
from kvwatch.config.types import (
    NOTIFIER_TYPES,
    SEVERITIES,
    Config,
    DetectorConfig,
    NotifierConfig,
    NotifierType,
    SilenceConfig,
)
from kvwatch.detectors import ALERTS, ALIASES, DetectorSettings
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
    auth = _auth(f, kind)
    return NotifierConfig(name, kind, url, url_file, alerts, severity, f.path("ca_file"), *auth)


def _auth(f: Fields, kind: str) -> tuple[str | None, Path | None, str | None, Path | None, str | None]:
    """`basic_auth` (username; password_file or password_credential) or a bearer token (file or
    credential): at most one of them, and none for Slack, whose URL is its credential."""
    token_file, token_credential = f.path("bearer_token_file"), _credential_name(f, "bearer_token_credential")
    if token_file is not None and token_credential is not None:
        f.problem("bearer_token_file", "give bearer_token_file or bearer_token_credential, not both")
    user = password_file = password_credential = None
    table = f.get("basic_auth")
    if table is not None and not isinstance(table, dict):
        f.problem("basic_auth", "must be a table (basic_auth = { username = ..., password_file = ... })")
    elif table is not None:
        sub = Fields(table, f.name("basic_auth"), f.problems, f.base)
        user = sub.string("username", required="")
        password_file, password_credential = (
            sub.path("password_file"),
            _credential_name(sub, "password_credential"),
        )
        if (password_file is None) == (password_credential is None):
            sub.problem("password_file", "give password_file or password_credential (exactly one)")
        sub.done()
        if token_file is not None or token_credential is not None:
            f.problem("basic_auth", "give basic_auth or a bearer token, not both")
    if kind == "slack":
        for key in ("basic_auth", "bearer_token_file", "bearer_token_credential"):
            if f.has(key):
                f.problem(key, 'not a setting of type "slack" (the webhook URL is its credential)')
        return None, None, None, None, None
    return user, password_file, password_credential, token_file, token_credential


def _credential_name(f: Fields, key: str) -> str | None:
    """A systemd credential's name: a file name in $CREDENTIALS_DIRECTORY."""
    name = f.string(key)
    if name is not None and ("/" in name or name in (".", "..")):
        f.problem(key, "must be a credential name (a file name, no /)")
        return None
    return name


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


def detector_settings(config: Config, problems: list[str]) -> DetectorSettings:
    """DetectorSettings from `[detectors.<name>]`; unknown detectors or settings are problems."""
    settings = DetectorSettings()
    fields = {f.name for f in dataclasses.fields(settings)}
    for name, table in config.detectors.items():
        attr = ALIASES.get(name, name)
        if attr not in fields:
            problems.append(f"detectors.{name}: {unknown('detector', name, sorted(fields | set(ALIASES)))}")
            continue
        current = getattr(settings, attr)
        values: dict[str, Any] = {"enabled": table.enabled}
        defaults = {f.name: getattr(current, f.name) for f in dataclasses.fields(current)}
        for key, value in table.settings.items():
            if key not in defaults:
                problems.append(f"detectors.{name}.{key}: unknown setting")
            elif _fits(defaults[key], value):
                values[key] = float(value) if isinstance(defaults[key], float) else value
            else:
                problems.append(f"detectors.{name}.{key}: must be {_kind(defaults[key])}")
        chosen = dataclasses.replace(current, **values)
        problems += [
            f"detectors.{name}.{problem}" for problem in out_of_range(attr, dataclasses.asdict(chosen))
        ]
        check = getattr(chosen, "problems", None)  # (a detector whose settings constrain each other)
        if check is not None:
            problems += [f"detectors.{name}.{problem}" for problem in check()]
        settings = dataclasses.replace(settings, **{attr: chosen})
    return settings


def _fits(default: object, value: object) -> bool:
    """Whether `value` has the type of `default` (an int may stand for a float)."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, int | float)
    return type(value) is type(default)


def _kind(default: object) -> str:
    """How an error names a setting's type."""
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return "an integer"
    return "a number" if isinstance(default, float) else "a string"
