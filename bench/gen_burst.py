"""Generate a vLLM 0.26 plain-text log of stats and KV Transfer lines that all share one timestamp.

The worst case for count-bounded windows (issue #20 item 1): a start-up block, then `--lines` lines,
each engine's stats line followed by its KV Transfer line, every header stamped with the same second.
Deterministic for a seed.

    python bench/gen_burst.py --lines 400000 -o burst.log
"""

from __future__ import annotations

import argparse
import json
import sys

from gen_vllm import START, Generator, header, startup

ENGINES = 2


def stats_line(hdr: str, engine: int, running: int) -> str:
    """One V1 stats line of `engine` with `running` requests (throughputs follow from it)."""
    return (
        f"(APIServer pid=1) INFO {hdr} [loggers.py:310] Engine {engine:03d}: Avg prompt throughput: "
        f"{running * 91.3:.1f} tokens/s, Avg generation throughput: {running * 12.7:.1f} tokens/s, "
        f"Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: 31.4%, Prefix cache hit rate: "
        "84.2%, External prefix cache hit rate: 3.1%\n"
    )


def burst(gen: Generator, hdr: str, n: int) -> list[str]:
    """`n` stats and KV lines (pairs, engines in turn), all stamped `hdr`."""
    out: list[str] = []
    engine = 0
    while len(out) < n:
        running = 1 + gen.rng.randrange(0, 40)
        out.append(stats_line(hdr, engine, running))
        payload = gen.kv_payload(running, gen.rng.random() < 0.3)
        out.append(f"(APIServer pid=1) INFO {hdr} [metrics.py:103] KV Transfer metrics: {payload}\n")
        engine = (engine + 1) % ENGINES
    return out[:n]


def main() -> int:
    """Write the log: `python bench/gen_burst.py --lines N -o FILE`."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=400_000)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    gen = Generator(args.seed)
    head = "".join(json.loads(raw)["log"] for raw in startup(START, gen.totals))
    with open(args.output, "w", encoding="utf-8") as out:
        out.write(head)
        lines = burst(gen, header(START + 60), args.lines)
        for at in range(0, len(lines), 10_000):
            out.write("".join(lines[at : at + 10_000]))
    print(f"wrote {args.output}: {args.lines:,} stats/KV lines at one timestamp", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
