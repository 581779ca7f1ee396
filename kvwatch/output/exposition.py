"""The registry as others read it: Prometheus text, the replay JSON contract, and golden lines."""

from __future__ import annotations

import math
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from kvwatch.model import Alert
from kvwatch.times import iso


def prom_text(registry: CollectorRegistry) -> str:
    """The Prometheus text exposition of the kvwatch_* metrics."""
    return generate_latest(registry).decode("utf-8")


def samples(registry: CollectorRegistry) -> dict[str, list[dict[str, Any]]]:
    """Every kvwatch_* sample, keyed by its exposition name, labels as strings."""
    out: dict[str, list[dict[str, Any]]] = {}
    for family in registry.collect():
        for sample in family.samples:
            if not sample.name.startswith("kvwatch_") or sample.name.endswith("_created"):
                continue
            value: float | None = sample.value
            if value is not None and not math.isfinite(value):
                value = None  # JSON has no inf/nan; the contract wants numbers, so leave such samples out
            if value is None:
                continue
            out.setdefault(sample.name, []).append({"labels": dict(sample.labels), "value": value})
    return out


def _labels(labels: dict[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return "{" + inner + "}" if inner else ""


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def golden_lines(registry: CollectorRegistry, alerts: list[Alert]) -> list[str]:
    """One fact per line: the sorted samples, then one line per alert transition in time order."""
    lines = sorted(
        f"{name}{_labels(s['labels'])} {_number(s['value'])}"
        for name, series in samples(registry).items()
        for s in series
    )
    for alert in alerts:
        lines.append(
            f"ALERT {iso(alert.at)} {alert.state} {alert.alert}{_labels(alert.labels)} "
            f"{alert.severity}: {alert.summary}"
        )
    return lines
