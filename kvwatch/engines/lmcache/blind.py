"""LMCache's `no_signal`: vLLM runs an LMCache connector, serves traffic, and its log holds no LMCache line.

LMCache logs through its own handler on stderr at LMCACHE_LOG_LEVEL (lmcache/logging.py, default INFO;
0.3.x-0.5.6). Above INFO (WARNING, ERROR) every lookup, store and load line is gone, and so is every
LMCache diagnosis; a log pipeline that keeps only stdout loses them the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvwatch.model import Finding

#: The fact the LMCache layer sets at its first line, and the vLLM facts this verdict reads.
SEEN = "lmcache_lines"
FIX = (
    "Run vLLM with LMCACHE_LOG_LEVEL=INFO (LMCache's default; WARNING or ERROR hide every lookup, store and "
    "load line) and have kvwatch read the container's stderr as well as stdout (LMCache logs to stderr)."
)


def blindness(source: str, facts: Mapping[str, str]) -> Finding | None:
    """The finding when vLLM's connector is LMCache's, prompts are flowing, and no LMCache line was read.

    `facts` are the source's, with `traffic` = `yes` when its last stats line showed prompt throughput."""
    connector = facts.get("connector", "")
    if not connector.startswith("LMCache") or SEEN in facts or facts.get("traffic") != "yes":
        return None
    return Finding(
        alert="no_signal",
        labels=(("source", source),),
        severity="warning",
        summary=f"vLLM runs {connector} and serves prompts, but its log holds no LMCache line",
        cause="LMCache logs its lookups, stores and loads at INFO on stderr; none reached kvwatch, so "
        "write_only_offload and offload_retrieve_failed cannot judge it (LMCACHE_LOG_LEVEL above INFO, "
        "or stderr not collected).",
        fix=FIX,
        evidence={"connector": connector, "setting": "LMCACHE_LOG_LEVEL=INFO"},
    )
