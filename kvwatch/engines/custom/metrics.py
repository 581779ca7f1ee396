"""A configured engine's metric families, `kvwatch_<name>_*`, labelled by source and its own labels
(every label its patterns set; "" where a pattern sets none), as a built-in engine's are named after it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kvwatch.engines.custom.spec import EngineSpec
from kvwatch.engines.families import Family


def handlers(
    spec: EngineSpec, kinds: Mapping[str, type], registry: CollectorRegistry
) -> dict[type, Callable[[Any], None]]:
    """The families of the events its patterns yield, and of its notices; event type -> its handler."""
    p, own = f"kvwatch_{spec.name}", spec.label_names
    out: dict[type, Callable[[Any], None]] = {}

    def family(suffix: str, doc: str, kind: str, extra: tuple[str, ...] = ()) -> Family:
        return Family(f"{p}_{suffix}", f"{spec.display}: {doc}", kind, ("source", *extra, *own), registry)  # type: ignore[arg-type]

    if "request" in spec.events:
        requests = family("requests", "requests read.", "counter")
        prompt = family("prompt_tokens", "prompt tokens of the requests read.", "counter")
        cached = family("cached_tokens", "prompt tokens served from the prefix cache.", "counter")

        def request(e: Any) -> None:
            key = (e.source, *e.labels)
            requests.inc(key, 1)
            prompt.inc(key, e.prompt_tokens)
            cached.inc(key, e.cached_tokens)

        out[kinds["request"]] = request
    if "cache_rate" in spec.events:
        gauges = {
            name: family(f"{name}_ratio", f"the last line's {doc}.", "gauge", ("engine",))
            for name, doc in (
                ("prefix_hit", "prefix cache hit rate"),
                ("external_hit", "external (offload) tier hit rate"),
                ("kv_cache_usage", "KV cache usage"),
            )
        }
        samples = family("cache_rate_samples", "cache-rate lines read.", "counter", ("engine",))

        def rate(e: Any) -> None:
            key = (e.source, e.engine, *e.labels)
            samples.inc(key, 1)
            for name, gauge in gauges.items():
                value = getattr(e, name)
                if value is not None:
                    gauge.set(key, value)

        out[kinds["cache_rate"]] = rate
    if "offload" in spec.events:
        store = family("offload_store_bytes", "bytes stored to the offload tier.", "counter", ("engine",))
        load = family(
            "offload_load_bytes", "bytes loaded back from the offload tier.", "counter", ("engine",)
        )
        lookups = family("offload_lookups", "lookups of the offload tier.", "counter", ("engine",))

        def offload(e: Any) -> None:
            key = (e.source, e.engine, *e.labels)
            for counter, value in ((store, e.store_bytes), (load, e.load_bytes), (lookups, e.lookups)):
                if value is not None:
                    counter.inc(key, max(value, 0))

        out[kinds["offload"]] = offload
    cut = Family(
        f"{p}_patterns_cut_off",
        f"{spec.display}: lines a pattern's match was cut off on (its timeout).",
        "counter",
        ("source", "pattern"),
        registry,
    )
    overflow = Family(
        f"{p}_label_overflow",
        f'{spec.display}: label values beyond the label\'s cap (read as "other").',
        "counter",
        ("source", "label"),
        registry,
    )

    def notice(e: Any) -> None:
        if e.kind == "timeout":
            cut.inc((e.source, e.pattern), 1)
        else:
            overflow.inc((e.source, e.label), 1)

    out[kinds["notice"]] = notice
    return out
