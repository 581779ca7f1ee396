"""From a validated Config to the live objects: detector settings, notifiers and their delivery queues.

What config.py cannot check without reading secrets or knowing each detector is checked here, with
the same exact-field sentences: `detectors.pinned_cache.min_share: must be a number`,
`notifier[0].url_file: cannot read /etc/kvwatch/slack-url: ...` (never quoting a URL). `kvwatch
check-config` and `kvwatch run` both call `prepare`, so a config that passes the check also starts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter

from kvwatch.config_fields import unknown
from kvwatch.config_types import Config, ConfigError, NotifierConfig
from kvwatch.detectors import ALIASES, DetectorSettings
from kvwatch.notify.alertmanager import AlertmanagerNotifier
from kvwatch.notify.base import Notifier
from kvwatch.notify.delivery import Delivery
from kvwatch.notify.routing import Route
from kvwatch.notify.secrets import SecretError
from kvwatch.notify.slack import SlackNotifier
from kvwatch.notify.webhook import WebhookNotifier

_CLASSES: dict[str, Any] = {
    "slack": SlackNotifier,
    "webhook": WebhookNotifier,
    "alertmanager": AlertmanagerNotifier,
}


@dataclass(frozen=True)
class Prepared:
    """What the daemon builds from a config before it starts or reloads."""

    detectors: DetectorSettings
    notifiers: tuple[tuple[NotifierConfig, Notifier], ...]


def prepare(config: Config, deferred: frozenset[str] = frozenset()) -> Prepared:
    """Detector settings and notifiers; ConfigError lists every problem. Notifiers named in `deferred`
    (check-config: URLs that systemd will hand over) are neither resolved nor built."""
    problems: list[str] = []
    detectors = detector_settings(config, problems)
    notifiers = []
    for i, spec in enumerate(config.notifiers):
        if spec.name in deferred:
            continue
        try:
            url = spec.resolve_url()
            if spec.type == "alertmanager":
                # A firing alert carries endsAt beyond the next repeat, so Alertmanager does not resolve
                # it on its own (resolve_timeout, 5 min by default) between kvwatch's repeats.
                ttl = 1.5 * config.alerting.repeat_interval
                notifiers.append((spec, AlertmanagerNotifier(spec.name, url, firing_ttl=ttl)))
                continue
            notifiers.append((spec, _CLASSES[spec.type](spec.name, url)))
        except SecretError as exc:
            problems.append(f"notifier[{i}].{exc}")  # (the error starts with the setting it is about)
    if problems:
        raise ConfigError(str(config.path or "config"), problems)
    return Prepared(detectors, tuple(notifiers))


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


def build_deliveries(prepared: Prepared, config: Config, counter: Counter) -> list[Delivery]:
    """One started Delivery per notifier, routed by its `alerts` and `min_severity`."""
    deliveries = []
    for spec, notifier in prepared.notifiers:
        route = Route(frozenset(spec.alerts) or None, spec.min_severity)
        delivery = Delivery(notifier, config.state_dir, counter, route=route)
        delivery.start()
        deliveries.append(delivery)
    return deliveries
