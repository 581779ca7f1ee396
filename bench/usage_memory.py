"""The daemon's memory on a gateway usage log of many groups: `kvwatch run` reads a log of RECORDS usage
records spread over GROUPS (entry, model) groups within the last hour of event time, every record
Anthropic-shaped and reading the cache (what both usage detectors keep), and its RSS is sampled.

    python bench/usage_memory.py [--records 1000000] [--groups 10000] [--entries 5]

Prints the peak RSS and the RSS once every record is read (goal: at most 100 MB whatever the groups and
records: the usage windows are bounded by bytes, kvwatch/windows/usages.py).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from daemon import peak_rss_mb, start_kvwatch  # noqa: E402  (bench/ is not a package)

ENTRIES = ("/v1/messages", "/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings")
SPAN = 3000.0  # seconds of event time the records cover (inside the windows' one-hour horizon)
GOAL_MB = 100.0
_LINES = re.compile(rb'kvwatch_lines_total\{source="bench"\} ([0-9.e+]+)')


def write_log(path: Path, records: int, groups: int, entries: int, seed: int = 3) -> None:
    """RECORDS Anthropic usage rows (one JSON object a line), round-robin over the groups, time ordered."""
    rng = random.Random(seed)
    models = groups // entries
    start = 1_787_000_000.0
    with path.open("w") as out:
        for i in range(records):
            group = i % (models * entries)
            entry, model = ENTRIES[group % entries], f"model-{group // entries:05d}"
            cached = rng.randrange(1000, 150_000)
            usage = {
                "input_tokens": rng.randrange(1, 3000),
                "cache_creation_input_tokens": rng.randrange(0, 2000),
                "cache_read_input_tokens": cached,
                "output_tokens": 100,
            }
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + SPAN * i / records))
            response = {"model": model, "usage": usage}
            row = {"time": f"{stamp}Z", "route": entry, "status": 200, "response": response}
            out.write(json.dumps(row, separators=(",", ":")) + "\n")


def lines_read(url: str) -> int | None:
    """kvwatch_lines_total of the bench source, None while the daemon is too busy to answer."""
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=60) as resp:
            found = _LINES.search(resp.read())
    except (OSError, urllib.error.URLError):
        return None
    return int(float(found.group(1))) if found else 0


def rss_mb(pid: int) -> float:
    """The process's resident set now, MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(argv: list[str] | None = None) -> int:
    """Write the log, run the daemon on it until every record is read, print its RSS."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--entries", type=int, default=5, choices=range(1, len(ENTRIES) + 1))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kvwatch-usage-bench-") as tmp:
        work = Path(tmp)
        log = work / "usage.log"
        began = time.monotonic()
        write_log(log, args.records, args.groups, args.entries)
        print(f"wrote {args.records:,} records over {args.groups:,} (entry, model) groups "
              f"({log.stat().st_size / 1e6:.0f} MB) in {time.monotonic() - began:.1f} s")  # fmt: skip
        proc, url = start_kvwatch(work, f'type = "file"\npath = "{log}"\n', engine="usage")
        try:
            began, read, peak = time.monotonic(), 0, 0.0
            while read < args.records:
                if proc.poll() is not None:
                    raise SystemExit("bench: kvwatch run ended:\n" + (work / "kvwatch.err").read_text())
                time.sleep(2)
                peak = max(peak, rss_mb(proc.pid))
                read = lines_read(url) or read
            took = time.monotonic() - began
            time.sleep(12)  # (a detector tick or more over every group)
            now, peak = rss_mb(proc.pid), max(peak, peak_rss_mb(proc.pid))
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"daemon: read {args.records:,} records in {took:.1f} s; RSS {now:.1f} MB, peak {peak:.1f} MB "
          f"(goal <= {GOAL_MB:.0f} MB: {'met' if peak <= GOAL_MB else 'MISSED'})")  # fmt: skip
    return 0 if peak <= GOAL_MB else 1


if __name__ == "__main__":
    sys.exit(main())
