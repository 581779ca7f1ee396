"""vLLM's periodic stats message, every shape from 0.4 to 0.33, matched by label, never by position.

V1: `[Engine 000: | 4 Engines Aggregated: ]Avg prompt throughput: ..., Running: N reqs, Waiting: N reqs
[, Deferred][, KV fetch][, Preemptions], <DEV> KV cache usage: x%[, Prefix cache hit rate: y%][, Corrupted]
[, External prefix cache hit rate: z%][, MM cache hit rate: w%]`.
V0: `... Running: N reqs, Swapped: N reqs, Pending: N reqs, GPU KV cache usage: x%, CPU KV cache usage: y%.`
followed by a separate `Prefix cache hit rate: GPU: x%, CPU: y%` record. The CPU column is swap space,
except on the CPU backend from 0.9.0 (vllm PR #18674, `engine/llm_engine.py` `_get_stats`): the engine's
cache is printed there and the GPU column is the (empty) swap. The parser says which column to read.
"""

from __future__ import annotations

import re
from typing import Any

from kvwatch.engines.vllm.events import VllmPrefixV0, VllmStats
from kvwatch.parsers.base import ParseError
from kvwatch.parsers.drift import Shapes
from kvwatch.parsers.text import count, finite, percent

_ENGINE = re.compile(r"^(?:Engine (\d+)|(\d+) Engines Aggregated): ")
_DEVICE_USAGE = re.compile(r"^([A-Z][A-Z0-9]*) KV cache usage$")
_V0_PREFIX = re.compile(r"^Prefix cache hit rate: GPU: ([^%]+)%, CPU: ([^%]+)%")


#: Every label a stats line of a released version prints (0.4 to 0.33; `<DEV> KV cache usage` apart):
#: another is counted as unknown (format drift), the line still read for these.
LABELS = frozenset(
    {
        "Avg prompt throughput", "Avg generation throughput", "Running", "Waiting", "Swapped", "Pending",
        "Preemptions", "Prefix cache hit rate", "External prefix cache hit rate", "MM cache hit rate",
        "Deferred", "KV fetch", "Corrupted",
    }
)  # fmt: skip
#: What a stats line must say (and `Waiting`, V0: `Pending`): without one it is a shape no release printed
#: (drift) or a torn line.
REQUIRED = ("Avg prompt throughput", "Avg generation throughput", "Running")

#: vLLM's lines of the kinds kvwatch reads (kvwatch.parsers.drift): the stats loggers' records
#: (`vllm/v1/metrics/loggers.py`, V0's `vllm/engine/metrics.py`, the KV Transfer and SpecDecoding
#: `metrics.py` modules), and any `throughput:` message (a JSON log has no file column). Known and not
#: read: the aggregated logger's `vllm cache_config_info` record (DEBUG from 0.11.2).
SHAPES = Shapes(("loggers.py:", "metrics.py:", "throughput:"), re.compile(r"cache_config_info"))


def engine_label(message: str) -> tuple[str, str]:
    """The engine label (`"1"` for `Engine 001:`, `"all"` aggregated, `"0"` none) and the rest."""
    match = _ENGINE.match(message)
    if match is None:
        return "0", message
    return ("all" if match.group(2) else str(int(match.group(1)))), message[match.end() :]


# The V1 line with the labels 0.10-0.33 print by default, in their fixed order: one match gives the
# same fields, in the same order, as reading it piece by piece would.
_V1_LABELS = (
    "Avg prompt throughput",
    "Avg generation throughput",
    "Running",
    "Waiting",
    "Preemptions",
    "GPU KV cache usage",
    "Prefix cache hit rate",
    "External prefix cache hit rate",
)
_V1 = re.compile(
    r"Avg prompt throughput: ([^,]*), Avg generation throughput: ([^,]*), Running: ([^,]*), "
    r"Waiting: ([^,]*)(?:, Preemptions: ([^,]*))?, GPU KV cache usage: ([^,]*), "
    r"Prefix cache hit rate: ([^,]*)(?:, External prefix cache hit rate: ([^,]*))?"
)


def _fields(body: str) -> dict[str, str]:
    common = _V1.fullmatch(body)
    if common is not None:
        return {
            label: value.strip()
            for label, value in zip(_V1_LABELS, common.groups(), strict=True)
            if value is not None
        }
    # Any other shape, piece by piece: `label: value`, the label whatever it is spelt with (a hyphen, a
    # digit), so that a label no release printed is counted, never skipped. A piece without `: ` that
    # starts with a count goes on the value before it (`KV fetch: 1 waiting to start, 3 in progress`);
    # any other is kept whole as a label (an unknown one).
    fields: dict[str, str] = {}
    last = ""
    for piece in body.split(", "):
        label, colon, value = piece.partition(": ")
        label = label.strip()
        if not colon and last and label[:1].isdigit():
            fields[last] += ", " + label
        elif label:
            fields[label] = value.strip() if colon else ""
            last = label
    return fields


# The same line with an `Engine NNN: ` label and plain numbers, every value read by the regex: what
# parse_stats makes of it is then known without its general steps (see common_stats). The vLLM parser
# matches it behind the header, in one regex with it (a pattern, not compiled here).
# (Optional parts as `(?:...|)`: re reads them faster than `(?:...)?`, the same matches in the same order.)
_NUM = r"([0-9]{1,20}(?:\.[0-9]{1,20}|))"
COMMON = (
    rf"Engine ([0-9]{{1,9}}): Avg prompt throughput: {_NUM} tokens/s, Avg generation throughput: {_NUM} "
    r"tokens/s, Running: ([0-9]{1,12}) reqs, Waiting: ([0-9]{1,12}) reqs(?:, Preemptions: ([0-9]{1,12})|), "
    rf"GPU KV cache usage: {_NUM}%, Prefix cache hit rate: {_NUM}%"
    rf"(?:, External prefix cache hit rate: {_NUM}%|)"
)


def common_stats(source: str, time: float, groups: tuple[str | Any, ...]) -> VllmStats | None:
    """parse_stats() of a message COMMON matched, from the match's groups; None for a bad percentage."""
    # (Match.groups() types them `str | Any`: Preemptions and External are None when absent.)
    engine, prompt, generation, running, waiting, preemptions, usage, prefix, external = groups
    kv_usage, prefix_hit = _RATIOS[usage], _RATIOS[prefix]
    external_hit = None if external is None else _RATIOS[external]
    if kv_usage is None or prefix_hit is None or (external is not None and external_hit is None):
        return None
    # At most 20 digits before the point: finite and non-negative, as _rate and count require.
    return VllmStats(
        source,
        time,
        str(int(engine)),
        float(prompt),
        float(generation),
        int(running),
        int(waiting),
        kv_usage,
        prefix_hit,
        external_hit,
        int(preemptions) if preemptions else 0,
        "GPU",
        False,
    )


# A log prints few distinct percentages (one decimal), and percent()'s round() costs more than the rest
# of a field: remembered, and looked up by a subscript that calls nothing once a text is known.
class _Ratios(dict[str, float | None]):
    """percent() of each text looked up, computed on first sight."""

    def __missing__(self, text: str) -> float | None:
        if len(self) >= 4096:
            self.clear()
        ratio = self[text] = percent(text)
        return ratio


_RATIOS = _Ratios()


def _rate(value: str | None, unit: str) -> float | None:
    if value is None or not value.endswith(unit):
        return None
    number = finite(value[: -len(unit)].strip())
    return number if number is not None and number >= 0 else None


def _kv_usage(fields: dict[str, str], v0: bool, column: str) -> tuple[str, str] | None:
    for label, value in fields.items():
        match = _DEVICE_USAGE.match(label)
        if match and (not v0 or match.group(1) == column):
            return match.group(1), value
    return None


def unknown_labels(fields: dict[str, str] | list[str]) -> list[str]:
    """The labels of a stats line that no release printed (a `<DEV> KV cache usage` is known)."""
    return [label for label in fields if label not in LABELS and _DEVICE_USAGE.match(label) is None]


def parse_stats(
    source: str, time: float, message: str, v0_column: str = "GPU", unknown: list[str] | None = None
) -> VllmStats | ParseError | None:
    """Parse a stats message (after the log header) into one engine's interval; None when it lacks a
    label every release prints and has one no release printed (a shape of no release: drift, not an
    error; without one in its place, a torn line: an error).

    `v0_column` is the V0 line's column that holds the engine's KV cache (GPU, or CPU: see above);
    `unknown`, when given, receives the labels no release printed (the line is read for the others).
    """
    engine, body = engine_label(message)
    fields = _fields(body.rstrip("."))
    if any(label not in fields for label in REQUIRED) or (
        "Waiting" not in fields and "Pending" not in fields
    ):
        # a label renamed (one no release printed in its place) is drift; none in its place, a torn line
        return (
            None
            if unknown_labels(fields)
            else ParseError("vllm stats: a label every release prints is missing")
        )
    if unknown is not None:
        unknown += unknown_labels(fields)
    v0 = "Swapped" in fields or "Pending" in fields
    prompt = _rate(fields.get("Avg prompt throughput"), "tokens/s")
    generation = _rate(fields.get("Avg generation throughput"), "tokens/s")
    running = count(fields.get("Running", "").removesuffix("reqs"))
    waiting = count(fields.get("Pending" if v0 else "Waiting", "").removesuffix("reqs"))
    if prompt is None or generation is None or running is None or waiting is None:
        return ParseError("vllm stats: throughput or request counts unreadable")
    usage = _kv_usage(fields, v0, v0_column)
    kv_usage = percent(usage[1].rstrip("%")) if usage else None
    ratios: dict[str, float | None] = {}
    for label in ("Prefix cache hit rate", "External prefix cache hit rate"):
        raw = fields.get(label)
        ratios[label] = None if raw is None else percent(raw.rstrip("%"))
        if raw is not None and ratios[label] is None:
            return ParseError(f"vllm stats: {label} out of range")
    if usage is not None and kv_usage is None:
        return ParseError("vllm stats: KV cache usage out of range")
    preemptions = count(fields.get("Preemptions", "0")) or 0
    return VllmStats(
        source=source,
        time=time,
        engine=engine,
        prompt_throughput=prompt,
        generation_throughput=generation,
        running=running,
        waiting=waiting,
        kv_cache_usage=kv_usage,
        prefix_hit=ratios["Prefix cache hit rate"],
        external_hit=ratios["External prefix cache hit rate"],
        preemptions=preemptions,
        kv_device=usage[0] if usage else "GPU",
        v0=v0,
    )


def parse_v0_prefix(
    source: str, time: float, message: str, column: str = "GPU"
) -> VllmPrefixV0 | ParseError | None:
    """V0's separate prefix-cache record, the cache's rate from `column`; None for another message."""
    match = _V0_PREFIX.match(message)
    if match is None:
        return None
    gpu, cpu = percent(match.group(1)), percent(match.group(2))
    if gpu is None or cpu is None:
        return ParseError("vllm V0 prefix line: rate out of range")
    if column == "CPU":
        return VllmPrefixV0(source=source, time=time, engine="0", hit=cpu, swap_hit=gpu, device="CPU")
    return VllmPrefixV0(source=source, time=time, engine="0", hit=gpu, swap_hit=cpu)
