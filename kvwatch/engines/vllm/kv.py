"""The payload of vLLM's `KV Transfer metrics: ...` line, in its three key generations.

- 0.16-0.23: `GPU_to_CPU_total_bytes=N, GPU_to_CPU_total_time=F, CPU_to_GPU_total_bytes=N, ...`
- 0.24+: flat `vllm:kv_offload_store_bytes=N, ...`; histograms as `name_count`/`name_sum`; labelled keys
  `name:('fs',)=V`, whose key itself contains `", "`.
- MultiConnector: `OffloadingConnector={'vllm:kv_offload_store_bytes': 1, ...}, NixlConnector={...}`.
Values are per-interval deltas. A direction with nothing to report is left out, so a missing byte key
on an offload line means 0; a line with no offload keys at all (another connector) means unknown.
"""

from __future__ import annotations

import ast
import math
import re
from itertools import repeat

_STORE_KEYS = ("vllm:kv_offload_store_bytes", "GPU_to_CPU_total_bytes")
_LOAD_KEYS = ("vllm:kv_offload_load_bytes", "CPU_to_GPU_total_bytes")
_LOOKUP_KEYS = (
    "vllm:kv_offload_lookup_sync_delay_seconds_count",
    "vllm:kv_offload_lookup_async_delay_seconds_count",
)
_OFFLOAD = "vllm:kv_offload_"
_SEP_OFFLOAD = ", " + _OFFLOAD
_OPEN, _CLOSE = "([{", ")]}"
# numpy 2 reprs its scalars as `np.float64(18.639)`; Nixl's stats dicts are full of them.
_NUMPY_SCALAR = re.compile(r"\b(?:np|numpy)\.(?:float|int|uint)\d*\(([^()]*)\)")


class KvPayloadError(ValueError):
    """The payload is not a well-formed `k=v` list, or a value is negative or not finite."""


_STRUCTURE = re.compile(r"[\[\](){}'\"]|, ")


def split_top(text: str) -> list[str]:
    """Split on `", "` outside brackets and quotes."""
    if "(" not in text and "{" not in text and "[" not in text and "'" not in text and '"' not in text:
        return [part for part in text.split(", ") if part]  # the common flat payload
    parts: list[str] = []
    depth, quote, start = 0, "", 0
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if quote:
            quote = "" if token == quote else quote
        elif token in "'\"":
            quote = token
        elif token in _OPEN:
            depth += 1
        elif token in _CLOSE:
            depth -= 1
        elif token == ", " and depth == 0:
            parts.append(text[start : match.start()])
            start = match.end()
    parts.append(text[start:])
    return [part for part in parts if part]


def _number(value: object, key: str) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond float's range
        raise KvPayloadError(f"{key}: too large a number") from None
    if not math.isfinite(number) or number < 0:
        raise KvPayloadError(f"{key}: {value!r} is not a finite non-negative number")
    return number


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(_NUMPY_SCALAR.sub(r"\1", text) if "(" in text else text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _plain_number(raw: str) -> object:
    # Nearly every value is a plain int or float: skip the Python parser for those.
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return _literal(raw)


def _flatten(text: str, keys: list[tuple[str, str]] | None = None) -> dict[str, float]:
    values: dict[str, float] = {}
    for item in split_top(text):
        key, eq, raw = item.partition("=")
        if not eq or not key:
            raise KvPayloadError(f"not a key=value pair: {item[:80]!r}")
        raw = raw.strip()
        if raw.startswith("{"):
            nested = _literal(raw)
            if not isinstance(nested, dict):
                raise KvPayloadError(f"{key}: unreadable nested stats")
            if keys is not None:
                keys += ((key, str(inner)) for inner in nested)
            for inner, value in nested.items():
                number = _number(value, f"{key}/{inner}")
                if number is not None:
                    values[f"{key}/{inner}"] = number
            continue
        if keys is not None:
            keys.append(("", key))
        if raw.lower() in ("nan", "inf", "-inf", "+inf"):
            raise KvPayloadError(f"{key}: {raw} is not a finite number")
        number = _number(_plain_number(raw), key)
        if number is not None:
            values[key] = number
    return values


_NEGATIVE = re.compile(r"=\s*-")


def _flat(text: str) -> dict[str, float] | None:
    """_flatten() of the common payload (`key=number, ...`, nothing nested, no `/` in a key) with a
    float() per value; None for anything else, which _flatten then reads (or rejects)."""
    if "/" in text or "(" in text or "{" in text or "[" in text or "'" in text or '"' in text:
        return None
    # No negative value (float("-0") is -0.0 where _plain_number gives int 0).
    if "-" in text and _NEGATIVE.search(text):
        return None
    # One `=` per item: an item without one, or with a second, leaves float() a text it refuses.
    items = text.split(", ")
    try:
        values = {key: float(raw) for key, _, raw in map(str.partition, items, repeat("="))}
    except ValueError:
        return None
    # float() reads every int or float text as _plain_number then _number do; nan, inf (and an
    # overflowing sum) are left to _flatten, which reports them, and so are an empty key and a key
    # given twice (whose first value the dict dropped unread).
    if len(values) != len(items) or "" in values:
        return None
    return values if math.isfinite(sum(values.values())) else None


def _pick(values: dict[str, float], names: tuple[str, ...], tails: list[str]) -> float | None:
    found = [v for tail, v in zip(tails, values.values(), strict=True) if tail in names]
    return sum(found) if found else None


def _lookup(values: dict[str, float], names: tuple[str, str]) -> float | None:
    # _pick for distinct keys without `/`: the same sum (two floats add the same in either order).
    first, second = values.get(names[0]), values.get(names[1])
    if first is None:
        return second
    return first if second is None else first + second


def read_kv_payload(
    text: str, *, fast: bool = True, keys: list[tuple[str, str]] | None = None
) -> tuple[dict[str, float], int | None, int | None, int | None]:
    """The text after `KV Transfer metrics: ` read: its numeric keys, flattened (`Connector/key` for
    MultiConnector), and the verdicts (store_bytes, load_bytes, lookups), as a plain tuple. `fast`: the
    common flat payload read a quicker way (the same result); False: every payload the general way.
    `keys`, when given, receives each item's (connector, key) read the general way, whatever its value
    (the connector "" for a flat item); read the fast way, it stays empty: `values` holds every key."""
    values = _flat(text) if fast else None
    if values is None:
        values = _flatten(text, keys)
        tails = [k.rpartition("/")[2] for k in values]
        store, load = _pick(values, _STORE_KEYS, tails), _pick(values, _LOAD_KEYS, tails)
        lookups = _pick(values, _LOOKUP_KEYS, tails)
        offload = any(tail.startswith(_OFFLOAD) or "_to_" in tail for tail in tails)
    else:  # a flat key has no `/` and appears once: look the (two) names up
        store, load = _lookup(values, _STORE_KEYS), _lookup(values, _LOAD_KEYS)
        lookups = _lookup(values, _LOOKUP_KEYS)
        # The same test on the text: keys follow its start or `, `; no float() text holds `_to_`.
        # (`_to_` last: its `_` is everywhere, so it is the slowest to search for.)
        offload = text.startswith(_OFFLOAD) or _SEP_OFFLOAD in text or "_to_" in text
    return (
        values,
        int(store or 0) if offload else None,
        int(load or 0) if offload else None,
        None if lookups is None else int(lookups),
    )
