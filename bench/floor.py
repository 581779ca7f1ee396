"""The least a Python process can do for the vLLM bench's counts: how close to ripgrep Python gets.

Not kvwatch: a bare scan of a vLLM docker json-file log with the same libraries kvwatch uses (the
Aho-Corasick search and StringZilla's count), that counts the lines, finds the stats and KV Transfer
lines and reads only the numbers the bench compares (stats lines and store bytes per engine). No
time is parsed, nothing is validated or kept, no metric, window or detector runs. Its wall time is a
floor under any CPython replay of this file; `bench/run.py` prints it beside kvwatch, mtail and rg.

    python bench/floor.py FILE      # prints the counts as JSON on stdout
"""

from __future__ import annotations

import json
import re
import sys

import stringzilla
from ahocorasick_rs import BytesAhoCorasick, MatchKind

READ = 4 << 20
_STATS = re.compile(rb"Engine (\d+): Avg prompt throughput")
_STORE = re.compile(rb"vllm:kv_offload_store_bytes=(\d+)")


def scan(path: str) -> dict[str, object]:
    """Lines, stats lines per engine and store bytes per engine (a KV line follows its engine's stats)."""
    search = BytesAhoCorasick(
        [b"Avg prompt throughput", b"KV Transfer metrics:"], matchkind=MatchKind.LeftmostFirst
    )
    lines, engine = 0, "0"
    stats: dict[str, int] = {}
    store: dict[str, int] = {}
    with open(path, "rb") as stream:
        tail = b""
        while block := stream.read(READ):
            data = tail + block
            cut = data.rfind(b"\n") + 1
            data, tail = data[:cut], data[cut:]
            lines += stringzilla.count(data, b"\n")
            rfind, index = data.rfind, data.index
            for which, start, _ in search.find_matches_as_indexes(data):
                begin, end = rfind(b"\n", 0, start) + 1, index(b"\n", start)
                if which == 0:
                    found = _STATS.search(data, begin, end)
                    if found is not None:
                        engine = str(int(found[1]))
                        stats[engine] = stats.get(engine, 0) + 1
                else:
                    found = _STORE.search(data, begin, end)
                    if found is not None:
                        store[engine] = store.get(engine, 0) + int(found[1])
        lines += bool(tail)
    return {"lines": lines, "stats_lines": stats, "store_bytes": store}


if __name__ == "__main__":
    print(json.dumps(scan(sys.argv[1])))
