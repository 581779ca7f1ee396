"""SGLang's line shapes: the `[time ranks] ` prefix, and batch lines read by key into fields.

Sources (sglang on PyPI): `configure_logger` in srt/utils.py (0.2.14+; `srt/utils/common.py` in 0.5.23)
formats `[%(asctime)s{maybe_ms}{prefix}] %(message)s`, datefmt `%H:%M:%S` up to 0.3.2 and
`%Y-%m-%d %H:%M:%S` from 0.3.4; 0.1.x-0.2.9 log `%(message)s` alone. The prefix lists the ranks
(` DP1`, ` TP0`, ` EP3`, ` PP0`, ` ATTN_CP4`, ` MOE_DP1`). Batch messages are `, `-joined `key: value`
parts whose set and order changed with nearly every release: they are read by key, never by position.
"""

from __future__ import annotations

import math
import re

#: `[2026-04-05 20:02:48.123 DP1 TP2] `, `[16:43:29 TP0] `: anywhere in the line (a tqdm bar, a Ray
#: `(SGLangEngine pid=N)` or a `docker logs -t` stamp may sit in front).
PREFIX = re.compile(
    r"\[(?:(\d{4})-(\d\d)-(\d\d) )?(\d\d):(\d\d):(\d\d)(?:\.(\d{3}))?((?: (?:[A-Z]+_)?[A-Z]+\d+)*)\] "
)
_DP = re.compile(r"(?:^| )DP(\d+)")
_GPU = re.compile(r"^\[gpu(?:_id)?=(\d+)\] ")

#: `Prefill batch[(mixed #running-req: N)][ [iter]][.|,] ` (0.1.20+), `Decode batch...`.
_BATCH = re.compile(r"(Prefill|Decode) batch(?:\(mixed #running-req: (\d+)\))?(?: \[(\d+)\])?[.,] ")
#: 0.1.14 (srt/managers/router/model_rpc.py): its own fixed shapes.
OLD_FILL = re.compile(
    r"^new fill batch\. #seq: (\d+)\. #cached_token: (\d+)\. #new_token: (\d+)\. "
    r"#remaining_req: (-?\d+)\. #running_req: (\d+)\. tree_cache_hit_rate: ([\d.]+)%\.?$"
)
OLD_DECODE = re.compile(r"^#running-req: (\d+), #token: (\d+), token usage: ([\d.]+), #queue-req: (\d+)$")

#: Every key a prefill line of a released version prints (0.1.20 to 0.5.23).
PREFILL_KEYS = frozenset(
    {
        "#new-seq", "#new-token", "#cached-token", "cache hit rate", "token usage", "#token",
        "full token usage", "swa token usage", "mamba usage", "#running-req", "#queue-req",
        "#pending-token", "#replay-token", "#unbootstrapped-req", "#transferring-req", "time",
        "input throughput (token/s)", "#prealloc-req", "#bootstrap-req", "#inflight-req",
        "#optimistic-req", "waiting-image-req", "cuda graph", "cpu graph", "npu graph", "musa graph",
        "est. prefill TFLOPS/s (per GPU)", "fwd occupancy", "fwd+idle occupancy",
        "#token.full", "#token.swa", "token usage.full", "token usage.swa",
        # sglang PR #26976 (open in 2026-06, "Break down prefill #cached-token into device / host /
        # storage tiers"): on every prefill line, no flag. Known so they are not counted as unknown;
        # not summed: its review found continuation chunks repeating the device figure.
        "#cached-token-device", "#cached-token-host", "#cached-token-storage",
    }
)  # fmt: skip
#: ... and every key a decode line prints.
DECODE_KEYS = frozenset(
    {
        "#running-req", "#token", "token usage", "#full token", "full token usage", "#swa token",
        "swa token usage", "mamba num", "mamba usage", "#gpu token", "gpu token usage", "#cpu token",
        "cpu token usage", "accept len", "accept rate", "cap len", "block accept len",
        "pre-allocated usage", "#prealloc-req", "#transfer-req", "#host-receive-req",
        "#retracted-req", "waiting-image-req", "cuda graph", "cpu graph", "npu graph", "musa graph",
        "gen throughput (token/s)", "#queue-req", "est. decode TFLOPS/s (per GPU)",
        "est. read BW (GB/s per GPU)", "est. write BW (GB/s per GPU)", "fwd occupancy",
        "fwd+idle occupancy", "#token.full", "#token.swa", "token usage.full", "token usage.swa",
        # sglang main after v0.5.23 (`scheduler_components/metrics_reporter.py`, report_decode_stats):
        # `Decode batch, #running-req: N, #cached-token: N, ...`, the running requests' cached_tokens
        "#cached-token",
    }
)  # fmt: skip
#: Usage keys -> the pool they measure (`pool` label).
POOLS = {
    "token usage": "full",
    "token usage.full": "full",
    "full token usage": "full",
    "token usage.swa": "swa",
    "swa token usage": "swa",
    "mamba usage": "mamba",
    "gpu token usage": "gpu",
    "cpu token usage": "cpu",
}


class Batch:
    """A batch line's kind, header extras and fields (key -> printed value)."""

    __slots__ = ("fields", "gpu", "iteration", "kind", "mixed", "trailing")

    def __init__(self, kind: str, fields: dict[str, str], gpu: str | None, mixed: bool) -> None:
        self.kind, self.fields, self.gpu, self.mixed = kind, fields, gpu, mixed
        self.iteration = False
        self.trailing = False


def batch(message: str) -> Batch | None:
    """The batch line in a message (None: not one); fields split on `, `, `name=v` parts nested."""
    gpu = _GPU.match(message)
    body = message[gpu.end() :] if gpu else message
    head = _BATCH.match(body)
    if head is None:
        return None
    fields: dict[str, str] = {}
    last = ""
    rest = body[head.end() :].rstrip()
    trailing = rest.endswith(",")  # 0.4.4-0.4.5 and 0.4.10-0.5.8 end with `, `
    parts = rest.rstrip(",").split(", ")
    for raw in parts:
        part = raw.strip()
        if not part:
            continue
        key, sep, value = part.partition(": ")
        if not sep:
            name, eq, sub = part.partition("=")
            if not eq or not last:
                return None
            fields[f"{last}.{name}"] = sub
            continue
        if value.startswith(("full=", "swa=")):  # 0.4.9 SWA: `#token: full=N, swa=M`
            name, _, sub = value.partition("=")
            fields[f"{key}.{name}"] = sub
        else:
            fields[key] = value
        last = key
    found = Batch(head.group(1), fields, gpu.group(1) if gpu else None, head.group(2) is not None)
    if head.group(2) is not None:
        fields["(mixed)"] = head.group(2)
    found.iteration = head.group(3) is not None
    found.trailing = trailing
    return found


def number(text: str | None) -> float | None:
    """A printed number (`12.34`, `56`, `7.00%`), None when absent or not one."""
    if text is None:
        return None
    try:
        value = float(text.rstrip("% "))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def integer(text: str | None) -> int | None:
    """A printed non-negative integer, None when absent or not one."""
    if text is None:
        return None
    text = text.strip()
    return int(text) if text.isdigit() else None


def prefill_family(b: Batch) -> str:
    """The version family of a prefill line, from its own shape; `a|b` where shapes are shared."""
    f = b.fields
    if b.gpu is not None:
        return "0.1.20-0.2.9"
    if "cache hit rate" in f:
        return "0.3.2-0.4.3" if "token usage" in f else "0.2.14-0.3.0"
    if "#pending-token" in f:
        return "0.5.11+"
    if any(graph in f for graph in _GRAPHS):
        return "0.5.9-0.5.10"
    if b.iteration:
        return "0.5.4-0.5.8"
    if "#token" in f or "#token.full" in f:
        return "0.4.9"
    if "#unbootstrapped-req" in f:
        return "0.4.6-0.4.9"
    return "0.4.4-0.4.5|0.4.10-0.5.8" if b.trailing else "0.4.6-0.4.8"


def decode_family(b: Batch) -> str:
    """The version family of a decode line, from its own shape; `a|b` where shapes are shared."""
    if b.gpu is not None:
        return "0.1.20-0.2.9"
    if not any(graph in b.fields for graph in _GRAPHS):
        return "0.2.14-0.4.6"
    if b.trailing:
        return "0.4.10-0.5.8"
    if "#cached-token" in b.fields:
        return "main>0.5.23"
    return "0.5.4-0.5.23" if b.iteration else "0.4.7-0.4.9|0.5.9-0.5.23"


_GRAPHS = ("cuda graph", "cpu graph", "npu graph", "musa graph")


def dp_rank(ranks: str) -> str:
    """The DP rank of a prefix's rank tags ("0" without one)."""
    match = _DP.search(ranks)
    return match.group(1) if match else "0"


_DIGITS = re.compile(r"\d+")


def unknown_shape(kind: str, keys: set[str] | frozenset[str]) -> str:
    """The sanitised shape of a batch line's unknown keys: names only, numbers masked, bounded."""
    names = sorted({_DIGITS.sub("N", key)[:40] for key in keys})
    return f"{kind.lower()} batch +" + ",".join(names)[:160]


def identity(b: Batch) -> tuple[str | None, ...]:
    """What makes a batch line the same batch on another context-parallel rank: its counts, not its
    throughputs (each rank times its own work)."""
    return (b.kind, *(b.fields.get(k) for k in ("#new-seq", "#new-token", "#cached-token", "#running-req",
                                                 "#queue-req", "#token")))  # fmt: skip
