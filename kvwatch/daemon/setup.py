"""From a validated Config to the live objects: detector settings, notifiers and their delivery queues.

What the config loader cannot check without reading secrets or knowing each detector is checked here
(detector settings by config.alerting's `detector_settings`), with the same exact-field sentences:
`detectors.pinned_cache.min_share: must be a number`, `notifier[0].url_file: cannot read
/etc/kvwatch/slack-url: ...` (never quoting a URL). `kvwatch check-config` and `kvwatch run` both call
`prepare`, so a config that passes the check also starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter

from kvwatch.config.alerting import detector_settings
from kvwatch.config.types import Config, ConfigError, NotifierConfig
from kvwatch.detectors import DetectorSettings
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
            transport = spec.resolve_transport()
            if spec.type == "alertmanager":
                # A firing alert carries endsAt beyond the next repeat, so Alertmanager does not resolve
                # it on its own (resolve_timeout, 5 min by default) between kvwatch's repeats.
                ttl = 1.5 * config.alerting.repeat_interval
                base = config.alerting.runbook_base_url
                am = AlertmanagerNotifier(
                    spec.name, url, firing_ttl=ttl, runbook_base_url=base, transport=transport
                )
                notifiers.append((spec, am))
                continue
            notifiers.append((spec, _CLASSES[spec.type](spec.name, url, transport=transport)))
        except SecretError as exc:
            problems.append(f"notifier[{i}].{exc}")  # (the error starts with the setting it is about)
    if problems:
        raise ConfigError(str(config.path or "config"), problems)
    return Prepared(detectors, tuple(notifiers))


def build_deliveries(prepared: Prepared, config: Config, counter: Counter) -> list[Delivery]:
    """One started Delivery per notifier, routed by its `alerts` and `min_severity`."""
    deliveries = []
    for spec, notifier in prepared.notifiers:
        route = Route(frozenset(spec.alerts) or None, spec.min_severity)
        delivery = Delivery(notifier, config.state_dir, counter, route=route)
        delivery.start()
        deliveries.append(delivery)
    return deliveries
