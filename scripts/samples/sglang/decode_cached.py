"""Makes samples/sglang-main-decode-cached-token.log (+ .golden): the real 0.5.23 run, main's decode shape."""

from __future__ import annotations

from pathlib import Path

from scripts.samples.made import Made

NAME = "sglang-main-decode-cached-token.log"
SAMPLES = Path(__file__).resolve().parents[3] / "samples"
REAL = "sglang-0.5.23-real-healthy.log"
# sglang main after v0.5.23, python/sglang/srt/managers/scheduler_components/metrics_reporter.py,
# report_decode_stats: f"Decode batch{iter_msg}, #running-req: {num_running_reqs}, "
# f"#cached-token: {num_decode_cached_tokens}, {token_usage_msg}" where num_decode_cached_tokens is
# sum(r.cached_tokens for r in batch.reqs) under --disaggregation-decode-enable-radix-cache, else 0.
HEAD = "Decode batch, #running-req: "


def main_shape(line: str) -> str:
    """A 0.5.23 decode line as main prints it on a server that is no PD decode instance (0 cached)."""
    at = line.find(HEAD)
    if at < 0:
        return line
    start = at + len(HEAD)
    end = line.index(", ", start)
    return f"{line[:end]}, #cached-token: 0{line[end:]}"


def make() -> list[Made]:
    """The real capture with every decode line in main's shape, nothing else changed."""
    text = (SAMPLES / REAL).read_text(encoding="utf-8")
    lines = text.split("\n")
    made = "\n".join(main_shape(line) for line in lines)
    changed = sum(1 for line in lines if HEAD in line)
    return [Made(NAME, made.encode("utf-8"), f"{NAME}: {changed} decode lines of {REAL} in main's shape")]
