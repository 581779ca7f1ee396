"""samples/README.vllm.md: what a correct parser must find in each sample, and the family's header."""

from __future__ import annotations

from dataclasses import dataclass, field

from scripts.samples.vllm.messages import Stat


@dataclass
class Tally:
    """What a correct parser must find: per engine counts, sums and last values."""

    lines: dict[str, int] = field(default_factory=dict)
    store: dict[str, int] = field(default_factory=dict)
    load: dict[str, int] = field(default_factory=dict)
    last: dict[str, dict[str, str]] = field(default_factory=dict)
    kv_lines: dict[str, int] = field(default_factory=dict)
    spec_lines: dict[str, int] = field(default_factory=dict)
    facts: list[str] = field(default_factory=list)

    def stat(self, engine: str, values: dict[str, str]) -> None:
        """Count one stats line and remember its ratios."""
        self.lines[engine] = self.lines.get(engine, 0) + 1
        self.last[engine] = values

    def kv(self, engine: str, store: int, load: int) -> None:
        """Count one KV Transfer line."""
        self.kv_lines[engine] = self.kv_lines.get(engine, 0) + 1
        self.store[engine] = self.store.get(engine, 0) + store
        self.load[engine] = self.load.get(engine, 0) + load


def remember(tally: Tally, engine: str, s: Stat) -> None:
    """Record the printed values of a stats line."""
    vals = {"kv_usage": f"{s.kv:.1f}%"}
    if s.prefix is not None:
        vals["prefix"] = f"{s.prefix:.1f}%"
    if s.external is not None:
        vals["external"] = f"{s.external:.1f}%"
    tally.stat(engine, vals)


def readme_section(title: str, body: list[str], tally: Tally, total_note: str = "", *, maker: str) -> str:
    """One sample's README section with the expected totals; `maker` is the making module's __name__."""
    out = [f"## `{title}`", "", *body, "", "Expected (what a correct parser extracts):", ""]
    for eng in sorted(tally.lines):
        last = ", ".join(f"{k} {v}" for k, v in tally.last[eng].items())
        line = f"- engine {eng}: {tally.lines[eng]} stats lines; last: {last}"
        if eng in tally.kv_lines:
            line += (
                f"; {tally.kv_lines[eng]} KV Transfer lines, store bytes sum "
                f"{tally.store.get(eng, 0)}, load bytes sum {tally.load.get(eng, 0)}"
            )
        if eng in tally.spec_lines:
            line += f"; {tally.spec_lines[eng]} SpecDecoding lines"
        out.append(line)
    for fact in tally.facts:
        out.append(f"- startup/other: {fact}")
    if total_note:
        out.append(f"- {total_note}")
    script = maker.replace(".", "/") + ".py"
    out += ["", f"Synthetic, made by `{script}` (`python -m scripts.samples`).", ""]
    return "\n".join(out)


HEADER = """# vLLM sample logs (synthetic, version-exact)

Written by `python -m scripts.samples` (one maker per sample in `scripts/samples/vllm/`; stdlib only,
seeded, no wall clock: two runs give byte-identical files). Each sample imitates one vLLM release
exactly: the header form (`INFO 12-20 14:00:52 metrics.py:467] ` up to 0.7, `[file:line]` from 0.8,
the `(Name pid=N) ` prefix from `decorate_logs()` on every physical line in 0.10.1-0.30, always
ANSI-coloured `\\x1b[1;36m...\\x1b[0;0m` in 0.10.1-0.11.x, and inside the formatter, vLLM records
only, from 0.31), the `file:line` of every logging call, `NewLineFormatter`'s `\\r\\n` + header
continuation lines, tqdm bars (`_BAR_FORMAT` ends in `\\n`, each update starts with `\\r`),
`%.1f` formatting, optional fields, idle suppression (one `0.0 tokens/s` line, then silence).

**Verified against wheels** (`pip download vllm==X --no-deps`, `.py` files read, wheels deleted):
0.6.6, 0.9.0, 0.11.0, 0.11.2, 0.16.0, 0.20.2, 0.26.0, 0.33.0, 0.34.0 (and, for the CPU backend's columns,
`engine/llm_engine.py` of 0.8.5.post1, 0.9.1, 0.9.2, 0.10.0, 0.10.1.1, 0.10.2). Every `file:line` used
is listed in `LINES` in `scripts/samples/vllm/lines.py`, with the `logger.*(`/`log_fn(` call line found in:
`v1/metrics/loggers.py` (stats), `v1/spec_decode/metrics.py` (SpecDecoding),
`distributed/kv_transfer/kv_connector/v1/metrics.py` (`KV Transfer metrics: %s`),
`kv_connector/v1/offloading/metrics.py` / `offloading/scheduler.py` (0.26 keys and the EAGLE/MTP
line), `kv_connector/v1/offloading/metrics.py` in 0.20.2 (`GPU_to_CPU_total_bytes`),
`v1/kv_offload/tiering/metrics.py` in 0.33 (labelled keys), `engine/metrics.py` in 0.6.6 (V0),
`entrypoints/.../api_utils.py|utils.py|startup.py` (logo/banner, non-default args),
`v1/core/kv_cache_utils.py` (KV cache size), `logging_utils/formatter.py` and
`utils/system_utils.py` (continuation lines, prefix/colour).

Line counts below count INFO stats lines only; "last" values are the printed strings of the last
stats line of that engine. Totals are sums of the printed per-interval KV Transfer values.

Details the wheels settled while checking: (1) 0.11.0 has no `Preemptions` (0.11.1+ does:
`v1/metrics/loggers.py`) - so the DP sample uses 0.11.2; (2) the labelled
tiering key in 0.33 is `vllm:kv_offload_tiering_read_bytes:('1:fs',)` (label
`f"{tier_idx + 1}:{tier_type}"`), not `('fs',)`, and 0.26 has no `tiering_read_bytes` at all;
(3) in 0.11.2 the per-engine `Engine 000: vllm cache_config_info ...` line is DEBUG (only the
aggregated `N Engines: ...` form is INFO); (4) NixlConnector's reduce() returns numpy scalars, so
a MultiConnector line prints `np.float64(...)` values under numpy 2.

"""


def readme(sections: list[str]) -> bytes:
    """samples/README.vllm.md: the header, then one section per sample in the makers' order."""
    return (HEADER + "\n".join(sections)).encode("utf-8")
