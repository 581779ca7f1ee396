"""The engine metrics kvwatch's advice tells a user to look up are named as Prometheus stores them: SGLang
declares `sglang:...` counters, and Prometheus, which asks for OpenMetrics, gets them from its
prometheus_client as `sglang_...` (0.23 and later), so every alert text and rule names those."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry, Counter, start_http_server
from prometheus_helpers import free_port, query, start_prometheus, stop_prometheus, wait_for

from kvwatch.detectors import hicache_storage_unused, no_signal

ROOT = Path(__file__).resolve().parents[1]
#: Where kvwatch tells a user which engine metric to look at: alert texts (detectors, advice) and rules.
TEXTS = [
    *sorted((ROOT / "kvwatch" / "detectors").glob("*.py")),
    *sorted((ROOT / "kvwatch" / "engines").glob("*/advice.py")),
    *sorted((ROOT / "kvwatch" / "engines").glob("*/rules*.yml")),
    *sorted((ROOT / "prometheus").glob("*.yml")),
    ROOT / "kubernetes" / "prometheusrule.yaml",
]
#: An engine's own Prometheus name as its /metrics page shows it: `sglang:cached_tokens_total`.
COLON_NAME = re.compile(r"\b(?:sglang|vllm|lmcache):[a-z][a-z0-9_]*_(?:total|count|sum|bucket)\b")


def test_no_alert_text_or_rule_names_an_engine_metric_with_a_colon() -> None:
    """Alert texts, advice and rules name no `engine:metric` a Prometheus query would not find."""
    found = [(p.relative_to(ROOT), m) for p in TEXTS for m in COLON_NAME.findall(p.read_text())]
    assert [] == found


def advised() -> list[str]:
    """The SGLang metric names the alert texts and the SGLang rules advise looking at."""
    rules = (ROOT / "kvwatch" / "engines" / "sglang" / "rules.yml").read_text()
    descriptions = [
        rule["annotations"]["description"]
        for group in yaml.safe_load(rules)["groups"]
        for rule in group["rules"]
    ]
    texts = [hicache_storage_unused.FIX, no_signal.FIX_PREFETCH, *descriptions]
    return sorted({name for text in texts for name in re.findall(r"\bsglang_[a-z_]+_total\b", text)})


@pytest.fixture
def sglang_exporter() -> Iterator[str]:
    """SGLang's two HiCache storage counters, declared as SGLang 0.5.23 declares them
    (srt/observability/metrics_collector.py: `Counter(name="sglang:backuped_tokens_total", ...)`) and
    served by prometheus_client, which serves SGLang's /metrics; its host:port."""
    registry = CollectorRegistry()
    for name in ("sglang:backuped_tokens_total", "sglang:storage_prefetch_hit_tokens_total"):
        Counter(name=name, documentation="as SGLang's", labelnames=["model_name"], registry=registry).labels(
            "m"
        ).inc(4096)
    port = free_port()
    server, thread = start_http_server(port, "127.0.0.1", registry)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.slow  # a real Prometheus
def test_the_sglang_metrics_the_advice_names_are_what_prometheus_holds(
    sglang_exporter: str, tmp_path: Path
) -> None:
    """A real Prometheus scraping SGLang's counters holds every name the advice gives (and not the
    `sglang:` spelling of SGLang's plain-text page)."""
    names = advised()
    assert ["sglang_backuped_tokens_total", "sglang_storage_prefetch_hit_tokens_total"] == names
    url, process = start_prometheus(tmp_path, [sglang_exporter], job="sglang")
    try:
        for name in names:
            wait_for(lambda name=name: query(url, name) or None, 30.0, f"Prometheus to hold {name}")
        assert [] == query(url, '{__name__="sglang:backuped_tokens_total"}')
    finally:
        stop_prometheus(process)
