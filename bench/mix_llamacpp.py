"""The line kinds of a llama-server `-lv 4` log and their shares: the bench generator's reference mix.

A line's kind is its tag and the first words of its message with every number and pointer written N
(`slot get_availabl: -1 | - checking sim = N`), so kinds are counted the same on any log. Only the
serving part counts: from the line after `listening on` to the shutdown's `cleaning up` (start-up is
a fixed hundred lines, nothing in a 50 MB log).

    python bench/mix_llamacpp.py bench/llamacpp-agent-mix.log              # table of kinds
    python bench/mix_llamacpp.py bench/llamacpp-agent-mix.log --json OUT   # bench/llamacpp-mix.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

_STAMP = re.compile(r"[0-9]+\.[0-9]{2}\.[0-9]{3}\.[0-9]{3} [IWED] ")
_SLOT = re.compile(r"slot +(\S+): id +\d+ \| task (-1|\d+) \| *(.*)")
_SRV = re.compile(r"srv +(\S+): *(.*)")
_NUMBER = re.compile(r"0x[0-9a-f]+|-?[0-9]+(?:\.[0-9]+)?")
WORDS = 4


def _words(message: str) -> str:
    """The first words of a message, numbers written N."""
    return " ".join(_NUMBER.sub("N", message).split()[:WORDS])


def kind(line: str) -> str:
    """The kind of one line (without its newline)."""
    if line.startswith("\t"):
        return "\t" + _words(line)
    stamp = _STAMP.match(line)
    body = line[stamp.end() :] if stamp else line
    slot = _SLOT.match(body)
    if slot:
        task = " -1" if slot[2] == "-1" else ""
        return f"slot {slot[1]}:{task} | {_words(slot[3])}"
    srv = _SRV.match(body)
    if srv:
        return f"srv {srv[1]}: {_words(srv[2])}"
    return _words(body)


def serving(lines: Iterable[str]) -> list[str]:
    """The lines between `listening on` and `cleaning up` (all of them when neither is there)."""
    kept: list[str] = []
    started = False
    for line in lines:
        if "cleaning up before exit" in line:
            break
        if started:
            kept.append(line)
        elif "listening on " in line:
            started = True
    return kept


def measure(lines: Iterable[str]) -> Counter[str]:
    """How many lines of each kind."""
    return Counter(kind(line.rstrip("\n")) for line in lines)


def shares(counts: Counter[str]) -> dict[str, float]:
    """Each kind's share of all lines."""
    total = sum(counts.values())
    return {name: n / total for name, n in counts.items()}


def main(argv: list[str] | None = None) -> int:
    """Print the kinds of a log's serving part; `--json` writes counts and shares."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--all", action="store_true", help="every line, not only the serving part")
    ap.add_argument("--json", type=Path, help="write the counts and shares to this file")
    args = ap.parse_args(argv)
    lines = args.log.read_text(encoding="utf-8", errors="replace").splitlines()
    counts = measure(lines if args.all else serving(lines))
    total = sum(counts.values())
    for name, n in counts.most_common():
        print(f"{n:8d} {n / total:7.2%}  {name!r}")
    print(f"{total:8d} lines, {len(counts)} kinds")
    if args.json:
        data = {
            "log": args.log.name,
            "lines": total,
            "requests": counts["slot release: | stop processing: n_tokens ="],
            "counts": dict(counts.most_common()),
        }
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
