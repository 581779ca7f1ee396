"""Makes samples/sglang-main-decode-cached-token.log and samples/sglang-pr26976-tier-keys.log (+ .golden)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from scripts.samples.made import Made

SAMPLES = Path(__file__).resolve().parents[3] / "samples"
#: The real 0.5.23 capture both are made from (samples/README.real.md): only the named lines change.
REAL = "sglang-0.5.23-real-healthy.log"
DECODE_HEAD = "Decode batch, #running-req: "
PREFILL_CACHED = re.compile(r"(Prefill batch, .*?#cached-token: (\d+), )")


def decode_in_main_shape(line: str) -> str:
    """A 0.5.23 decode line as sglang main (after v0.5.23) prints it on a server that is no PD decode
    instance: `python/sglang/srt/managers/scheduler_components/metrics_reporter.py`, report_decode_stats,
    f"Decode batch{iter_msg}, #running-req: {num_running_reqs}, #cached-token: {num_decode_cached_tokens},
    {token_usage_msg}", the sum of the running requests' cached_tokens under
    --disaggregation-decode-enable-radix-cache, else 0."""
    at = line.find(DECODE_HEAD)
    if at < 0:
        return line
    end = line.index(", ", at + len(DECODE_HEAD))
    return f"{line[:end]}, #cached-token: 0{line[end:]}"


def prefill_in_pr26976_shape(line: str) -> str:
    """A 0.5.23 prefill line as sglang PR #26976 (open; "Break down prefill #cached-token into device /
    host / storage tiers") prints it without HiCache: `#cached-token-device/-host` after `#cached-token`,
    every hit on the device, `-storage` left out (shown only when a storage tier is on or non-zero)."""
    found = PREFILL_CACHED.search(line)
    if found is None:
        return line
    tiers = f"#cached-token-device: {found[2]}, #cached-token-host: 0, "
    return line[: found.end()] + tiers + line[found.end() :]


def reshape(name: str, change: Callable[[str], str]) -> Made:
    """The real capture with `change` applied to every line (the others unchanged)."""
    lines = (SAMPLES / REAL).read_text(encoding="utf-8").split("\n")
    made = [change(line) for line in lines]
    changed = sum(1 for old, new in zip(lines, made, strict=True) if old != new)
    return Made(name, "\n".join(made).encode("utf-8"), f"{name}: {changed} lines of {REAL} reshaped")


def make() -> list[Made]:
    """Both reshaped captures."""
    return [
        reshape("sglang-main-decode-cached-token.log", decode_in_main_shape),
        reshape("sglang-pr26976-tier-keys.log", prefill_in_pr26976_shape),
    ]
