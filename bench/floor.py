"""The least a Python process can do for the vLLM bench's counts: how close to ripgrep Python gets.

Not kvwatch: a bare scan of a vLLM docker json-file log with the same libraries kvwatch uses (the
Aho-Corasick search, and bytes.count), that counts the lines, finds the stats and KV Transfer
lines and reads only the numbers the bench compares (stats lines and store bytes per engine). No
time is parsed, nothing is validated or kept, no metric, window or detector runs. Its wall time is a
floor under any CPython replay of this file; `bench/run.py` prints it beside kvwatch, mtail and rg.

The file is read through memory maps of WINDOW bytes, one after another, as rg reads it: no copy into
Python bytes, and the resident set stays bounded (issue #8 rules out mapping the whole file).

    python bench/floor.py FILE      # prints the counts as JSON on stdout
"""

from __future__ import annotations

import json
import mmap
import os
import re
import sys

from ahocorasick_rs import BytesAhoCorasick, MatchKind

WINDOW = 32 << 20
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
    size = os.path.getsize(path)
    with open(path, "rb") as stream:
        pos = 0  # the first byte not scanned yet: a line start
        while pos < size:
            base = pos - pos % mmap.ALLOCATIONGRANULARITY  # (a map's offset is page-aligned)
            length = min(size - base, pos - base + WINDOW)
            with mmap.mmap(stream.fileno(), length, access=mmap.ACCESS_READ, offset=base) as data:
                lo = pos - base
                hi = data.rfind(b"\n", lo) + 1 if base + length < size else length  # (whole lines)
                if hi <= lo:
                    raise SystemExit(f"floor.py: a line longer than {WINDOW} bytes at byte {pos}")
                view = memoryview(data)[lo:hi]
                lines += view.tobytes().count(b"\n")  # (a map has no count: one copy per window)
                rfind, find = data.rfind, data.find
                for which, start, _ in search.find_matches_as_indexes(view):
                    at = start + lo
                    begin, end = rfind(b"\n", lo, at) + 1 or lo, find(b"\n", at, hi)
                    end = hi if end < 0 else end
                    if which == 0:
                        found = _STATS.search(data, begin, end)
                        if found is not None:
                            engine = str(int(found[1]))
                            stats[engine] = stats.get(engine, 0) + 1
                    else:
                        found = _STORE.search(data, begin, end)
                        if found is not None:
                            store[engine] = store.get(engine, 0) + int(found[1])
                if hi == length and base + length == size and data[length - 1 : length] != b"\n":
                    lines += 1  # the last line, without its newline
                view.release()
            pos = base + hi
    return {"lines": lines, "stats_lines": stats, "store_bytes": store}


if __name__ == "__main__":
    print(json.dumps(scan(sys.argv[1])))
