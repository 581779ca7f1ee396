"""Startup facts from vLLM's log that detectors need: version, KV connector, excluded KV groups, ...

Each rule is (a substring that must be present, a function of the message returning (key, value) pairs).
"""

from __future__ import annotations

import re
from collections.abc import Callable

Facts = list[tuple[str, str]]

_VERSION = re.compile(
    r"vLLM (?:API )?server version ([0-9][\w.+-]*)|Initializing an? (?:V[01] )?LLM engine \(v([^)\s]+)\)"
)
_CONNECTOR_NAME = re.compile(r"Creating v1 connector with name: (\w+)")
_KV_CONNECTOR = re.compile(r"kv_connector='(\w+)'")
_EXTRA = re.compile(r"kv_connector_extra_config=(\{[^{}]*\})")
_OFFLOAD_SIZE = re.compile(r"'kv_offloading_size': ([0-9.]+)")
_BACKEND = re.compile(r"'kv_offloading_backend': '(\w+)'")
_BLOCK = re.compile(r"'block_size': (\d+)")
# The model served: `vllm serve MODEL` (0.8+: `model_tag`) or `--model`, named by --served-model-name.
_MODEL = re.compile(r"'served_model_name': \['([^']+)'|'model': '([^']+)'|'model_tag': '([^']+)'")
_SPEC = re.compile(r"(?:'method': |SpeculativeConfig\(method=)'(\w+)'")
_API_SERVERS = re.compile(r"'api_server_count': (\d+)|api_server_count to data_parallel_size \((\d+)\)")
_EXCLUDED = re.compile(r"KV offloading: (EAGLE/MTP) draft attention groups (\[[^\]]*\]) detected")
_CAPACITY = re.compile(r"\b([A-Z]+) KV cache size: ([\d,]+) tokens")
# `platforms/__init__.py` and VllmConfig.__str__ (`config.py`, 0.10.1+ `config/__init__.py`), read in
# 0.8.5-0.10.2; device_config prints a torch.device: `cpu` for neuron too (the platform line says which).
_PLATFORM = re.compile(r"Automatically detected platform (\w+)\.")
_DEVICE = re.compile(r"\bdevice_config=(\w+)")
_PREFIX_CACHING = re.compile(r"\benable_prefix_caching=(True|False)")
# The logo (0.15+; `vLLM server version` only with VLLM_DISABLE_LOG_LOGO): `█  version 0.32.0`, which
# vLLM prints once per start, before the engine (0.32.0's api_utils.py).
_LOGO = re.compile(r"█ +version ([0-9][\w.+-]*)")
_SIMPLE_OFFLOAD = re.compile(r"\b(SimpleCPUOffloadConnector): role=")
_NAMESPACE_CACHING = re.compile(r"\benable_prefix_caching=(None|False)\b")
#: The prefix-cache setting when the command line did not name it (vLLM chose by the model).
VLLM_DEFAULT = "vLLM's default for this model"


def _version(message: str) -> Facts:
    match = _VERSION.search(message)
    return [("version", match.group(1) or match.group(2))] if match else []


def _connector(message: str) -> Facts:
    match = _CONNECTOR_NAME.search(message)
    return [("connector", match.group(1))] if match else []


def _non_default(message: str) -> Facts:
    facts: Facts = []
    for key, pattern in (
        ("connector", _KV_CONNECTOR),
        ("connector_config", _EXTRA),
        ("kv_offloading_size", _OFFLOAD_SIZE),
        ("kv_offloading_backend", _BACKEND),
        ("block_size", _BLOCK),
        ("spec_method", _SPEC),
    ):
        match = pattern.search(message)
        if match:
            facts.append((key, match.group(1)))
    servers = _API_SERVERS.search(message)
    if servers:
        facts.append(("api_server_count", servers.group(1) or servers.group(2)))
    models = {i: m for found in _MODEL.finditer(message) for i, m in enumerate(found.groups()) if m}
    if models:  # (the served name first: what clients ask for)
        facts.append(("model", models[min(models)]))
    if "'disable_log_stats': True" in message:
        facts.append(("stats_disabled", "--disable-log-stats"))
    # Who turned the prefix cache off, should the engine config line say it is: the user, or vLLM for a
    # model it leaves uncached by default (0.25.1 engine/arg_utils.py: enable_prefix_caching unset takes
    # ModelConfig.is_prefix_caching_supported, False for hybrid, attention-free, encoder-decoder models)
    if "'enable_prefix_caching': False" in message:
        facts.append(("prefix_cache_setting", "--no-enable-prefix-caching"))
    elif "'enable_prefix_caching'" not in message:
        facts.append(("prefix_cache_setting", VLLM_DEFAULT))
    return facts


def _engine_config(message: str) -> Facts:
    facts = _version(message)
    spec = _SPEC.search(message)
    if spec:
        facts.append(("spec_method", spec.group(1)))
    device = _DEVICE.search(message)
    if device:
        facts.append(("device", device.group(1)))
    caching = _PREFIX_CACHING.search(message)
    if caching:
        facts.append(("prefix_caching", caching.group(1)))
        # (the engine-neutral state prefix_cache_disabled judges; the engine config line states the
        # value vLLM settled on, whoever chose it)
        facts.append(("prefix_cache", "enabled" if caching.group(1) == "True" else "disabled"))
    return facts


def _namespace(message: str) -> Facts:
    # (before 0.8 the API server logs every argument, `args: Namespace(..., enable_prefix_caching=None,
    # ...)`, 0.7.2's entrypoints/openai/api_server.py; None is the flag not given)
    match = _NAMESPACE_CACHING.search(message)
    if match is None:
        return []
    return [("prefix_cache_setting", "--no-enable-prefix-caching" if match[1] == "False" else VLLM_DEFAULT)]


def _logo(message: str) -> Facts:
    match = _LOGO.search(message)
    return [("version", match.group(1))] if match else []


def _simple_offload(message: str) -> Facts:
    # (VLLM_USE_SIMPLE_KV_OFFLOAD=1 picks it; no `Creating v1 connector` line names it, 0.32-0.34)
    match = _SIMPLE_OFFLOAD.search(message)
    return [("simple_offload", match.group(1))] if match else []


def _platform(message: str) -> Facts:
    match = _PLATFORM.search(message)
    return [("platform", match.group(1))] if match else []


def _excluded(message: str) -> Facts:
    match = _EXCLUDED.search(message)
    return [("offload_excluded_groups", f"{match.group(1)} {match.group(2)}")] if match else []


def _hybrid(message: str) -> Facts:
    return [("hybrid_kv_disabled", message.split(".", 1)[0][:160])]


def _stats_off(message: str) -> Facts:
    return [("stats_disabled", "api_server_count > 1")]


def _api_servers(message: str) -> Facts:
    match = _API_SERVERS.search(message)
    return [("api_server_count", match.group(1) or match.group(2))] if match else []


def _capacity(message: str) -> Facts:
    match = _CAPACITY.search(message)
    return [("kv_capacity_tokens", match.group(2).replace(",", ""))] if match else []


def _no_drafter(message: str) -> Facts:
    return [("offload_excluded_groups", "none (no drafter group annotated)")]


RULES: tuple[tuple[str, Callable[[str], Facts]], ...] = (
    ("server version", _version),
    ("LLM engine (v", _engine_config),
    ("Creating v1 connector", _connector),
    ("non-default args", _non_default),
    ("args: Namespace(", _namespace),
    ("KV offloading: EAGLE/MTP", _excluded),
    ("no KV-cache group is annotated as a drafter", _no_drafter),
    ("ybrid kv cache manager", _hybrid),
    ("ybrid KV cache manager is disabled", _hybrid),
    ("disabling stats logging", _stats_off),
    ("Defaulting api_server_count", _api_servers),
    ("KV cache size:", _capacity),
    ("detected platform", _platform),
    ("█  version ", _logo),
    ("OffloadConnector: role=", _simple_offload),
)

#: Substrings that make a line worth a look for startup facts (the prefilter's share).
MARKERS = (
    "version",
    "LLM engine",
    "connector",
    "non-default",
    "args: Namespace(",
    "KV offloading",
    "ybrid",
    "stats logging",
    "api_server_count",
    "KV cache size",
    "detected platform",
    "OffloadConnector: role=",
)


def facts_of(message: str) -> Facts:
    """Every startup fact the message states."""
    facts: Facts = []
    for needle, rule in RULES:
        if needle in message:
            facts.extend(rule(message))
    return facts
