"""vLLM, 0.4 to 0.33: stats, KV Transfer and SpecDecoding lines, startup facts (parser, metrics, report);
the lines of the cache layers it carries (LMCache) through their own parsers (`layers`)."""

from __future__ import annotations

from kvwatch.engines.base import Engine, Later
from kvwatch.engines.vllm.advice import ADVICE
from kvwatch.engines.vllm.events import VllmKvTransfer, VllmPrefixV0, VllmSpecDecoding, VllmStats
from kvwatch.model import EngineFact


class Vllm(Engine):
    """vLLM's optional capabilities (kvwatch.engines.capabilities): Reports, ForgetsOnRestart,
    Advises, CarriesLayers."""

    section = Later("kvwatch.engines.vllm.report:section")
    gather = Later("kvwatch.engines.vllm.report:Figures")
    restart_forgets = (
        "stats_disabled",
        "api_server_count",
        "offload_excluded_groups",
        "prefix_cache",
        "prefix_cache_setting",
    )
    advice = ADVICE
    layers = ("lmcache",)


ENGINE = Vllm(
    name="vllm",
    display="vLLM",
    home="kvwatch.engines.vllm.parser",
    parser=Later("kvwatch.engines.vllm.parser:make_parser"),
    sniff_rank=2,
    events=(VllmStats, VllmKvTransfer, VllmPrefixV0, VllmSpecDecoding, EngineFact),
    signals=frozenset({"cache_rate", "offload"}),
    metrics=Later("kvwatch.engines.vllm.metrics:handlers"),
)
