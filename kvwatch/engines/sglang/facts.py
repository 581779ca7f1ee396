"""Startup facts from SGLang's `server_args=` line: chunking, radix cache, HiCache and its storage tier.

`server_args=ServerArgs(key=value, ...)` up to 0.5.21 (`logger.info(f"{server_args=}")`), a dict
`server_args={'key': value, ...}` from 0.5.22 (srt/entrypoints/engine.py `_server_args_for_logging`).
"""

from __future__ import annotations

import re

Facts = list[tuple[str, str]]

_FIELD = re.compile(
    r"[(,{] ?'?(page_size|chunked_prefill_size|disable_radix_cache|enable_hierarchical_cache|"
    r"hicache_storage_backend|hicache_storage_prefetch_policy|tp_size|dp_size|log_requests|"
    r"enable_dp_attention|disaggregation_mode|decode_log_interval|model_path|served_model_name)'?(?:=|: )"
    r"('[^']*'|[\w.-]+)"
)


def server_args(message: str) -> Facts:
    """The facts of a `server_args=` message (0.5.22+ logs INFO HiCache prefetch lines: `prefetch_logged`)."""
    facts: Facts = [("prefetch_logged", "yes" if message.startswith("server_args={") else "unknown")]
    for key, raw in _FIELD.findall(message):
        value = raw.strip("'")
        if key == "disable_radix_cache":
            facts.append(("prefix_cache", "disabled" if value == "True" else "enabled"))
            facts.append(("prefix_cache_setting", "--disable-radix-cache"))
        elif key == "hicache_storage_backend":
            if value not in ("None", ""):
                facts.append(("cache_storage_backend", value))
        elif key == "hicache_storage_prefetch_policy":
            facts.append(("cache_prefetch_policy", value))
        elif key in ("model_path", "served_model_name"):  # (the served name, when given, last: it wins)
            if value not in ("None", "") and not (key == "model_path" and "served_model_name='" in message):
                facts.append(("model", value))
        elif key == "enable_hierarchical_cache":
            facts.append(("hierarchical_cache", "on" if value == "True" else "off"))
        else:
            facts.append((key, value))
    return facts
