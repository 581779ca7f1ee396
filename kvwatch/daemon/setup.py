"""From a validated Config to the live objects: detector settings, notifiers and their delivery queues.

What the config loader cannot check without reading secrets or knowing each detector is checked here
(detector settings by config.alerting's `detector_settings`), with the same exact-field sentences:
`detectors.pinned_cache.min_share: must be a number`, `notifier[0].url_file: cannot read
/etc/kvwatch/slack-url: ...` (never quoting a URL). `kvwatch check-config` and `kvwatch run` both call
`prepare`, so a config that passes the check also starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter

from kvwatch.config.alerting import detector_settings
from kvwatch.config.types import Config, ConfigError, NotifierConfig, ProbeConfig
from kvwatch.detectors import DetectorSettings
from kvwatch.notify.alertmanager import AlertmanagerNotifier
from kvwatch.notify.base import Notifier
from kvwatch.notify.delivery import Delivery
from kvwatch.notify.routing import Route
from kvwatch.notify.secrets import Secret, SecretError, load_secret
from kvwatch.notify.slack import SlackNotifier
from kvwatch.notify.webhook import WebhookNotifier
from kvwatch.probe.run import ProbeSpec

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
    probes: tuple[tuple[ProbeConfig, ProbeSpec], ...] = ()


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
    probes = []
    for i, probe in enumerate(config.probes):
        try:
            probes.append((probe, probe_spec(probe, os.environ)))
        except SecretError as exc:
            problems.append(f"probe[{i}].{exc}")
    if problems:
        raise ConfigError(str(config.path or "config"), problems)
    return Prepared(detectors, tuple(notifiers), tuple(probes))


def probe_spec(probe: ProbeConfig, env: Mapping[str, str]) -> ProbeSpec:
    """What a `[[probe]]` runs, its API key read from its variable or file; SecretError names the setting."""
    key = None
    if probe.api_key_env is not None:
        value = env.get(probe.api_key_env, "").strip()
        if not value:
            raise SecretError(f"api_key_env: ${probe.api_key_env} is not set (or empty)")
        key = Secret(value)
    elif probe.api_key_file is not None:
        key = load_secret(probe.name, file=probe.api_key_file, setting="api_key")
    return ProbeSpec(
        url=probe.url,
        api=probe.api,
        model=probe.model,
        prefix_tokens=probe.prefix_tokens,
        stream=probe.stream,
        attribution_header=probe.attribution_header,
        nonce_form=probe.nonce_form,
        timeout=float(probe.timeout),
        verify=str(probe.ca_file) if probe.ca_file is not None else True,
        key=key,
        headers=probe.headers,
    )


def build_deliveries(
    prepared: Prepared, config: Config, counter: Counter, replaced: Sequence[Delivery] = ()
) -> list[Delivery]:
    """One started Delivery per notifier, routed by its `alerts` and `min_severity`; one that replaces a
    closed one of its name (a reload) continues its failure and counts."""
    was = {old.name: old.status() for old in replaced}
    deliveries = []
    for spec, notifier in prepared.notifiers:
        route = Route(frozenset(spec.alerts) or None, spec.min_severity)
        delivery = Delivery(notifier, config.state_dir, counter, route=route, carried=was.get(spec.name))
        delivery.start()
        deliveries.append(delivery)
    return deliveries
