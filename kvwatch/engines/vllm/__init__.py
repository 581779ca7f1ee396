"""vLLM, 0.4 to 0.33: stats, KV Transfer and SpecDecoding lines, startup facts (parser, metrics, report);
the lines of the cache layers it carries (LMCache) through their own parsers (`layers`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kvwatch.engines.base import Engine, Gathering
from kvwatch.model import EngineFact, VllmKvTransfer, VllmPrefixV0, VllmSpecDecoding, VllmStats
from kvwatch.parsers.base import Parser, ParserSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kvwatch.output.summary import SourceView


def _parser(source: str, settings: ParserSettings, options: Any) -> Parser:
    from kvwatch.engines import layer_parsers
    from kvwatch.engines.vllm.parser import VllmParser

    return VllmParser(source, settings, layer_parsers(ENGINE.name, source, settings))


def _metrics(registry: CollectorRegistry) -> Mapping[type, Callable[[Any], None]]:
    from kvwatch.engines.vllm.metrics import VllmMetrics  # (replay's parsing child needs no metrics)

    family = VllmMetrics(registry)
    return {
        VllmStats: family.stats,
        VllmKvTransfer: family.kv_transfer,
        VllmPrefixV0: family.prefix_v0,
        VllmSpecDecoding: family.spec_decoding,
        EngineFact: family.fact,
    }


def _report(view: SourceView) -> list[str] | None:
    from kvwatch.engines.vllm.report import section

    return section(view)


def _gather() -> Gathering:
    from kvwatch.engines.vllm.report import Figures

    return Figures()


ENGINE = Engine(
    name="vllm",
    display="vLLM",
    home="kvwatch.engines.vllm.parser",
    parser=_parser,
    sniff_rank=2,
    events=(VllmStats, VllmKvTransfer, VllmPrefixV0, VllmSpecDecoding, EngineFact),
    signals=frozenset({"cache_rate", "offload"}),
    metrics=_metrics,
    report=_report,
    gather=_gather,
    restart_forgets=("stats_disabled", "api_server_count", "offload_excluded_groups"),
    layers=("lmcache",),
)
