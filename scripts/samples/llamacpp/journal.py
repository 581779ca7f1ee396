"""Makes samples/llamacpp-journal-two-servers.log, samples/llamacpp-journal-swa-two-servers.log."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

from scripts.samples.made import Made

SAMPLES = Path(__file__).resolve().parents[3] / "samples"
#: Each journal sample: its name and its two real b11434 captures (samples/README.llamacpp.md), each one
#: server: its unit's name and pid, and when it started.
JOURNALS = (
    # The second starts 1 s after the first: its ten requests run while the first one's first two do.
    (
        "llamacpp-journal-two-servers.log",
        (
            ("llamacpp-healthy-two-slots.log", "llama-server[4101]", 0.0),
            ("llamacpp-varying-header-chat.log", "llama-server[4377]", 1.0),
        ),
    ),
    # The broken one (SWA, full re-processing) starts first; the healthy one 0.5 s later.
    (
        "llamacpp-journal-swa-two-servers.log",
        (
            ("llamacpp-swa-varying-header.log", "llama-server[5188]", 0.0),
            ("llamacpp-healthy-two-slots.log", "llama-server[5203]", 0.5),
        ),
    ),
)
START = datetime(2026, 12, 5, 9, 14, 2, tzinfo=timezone.utc)
HOST = "gpu-host"
STAMP = re.compile(r"(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) ")


def entries(lines: list[str], tag: str, offset: float) -> list[tuple[float, int, str]]:
    """(seconds since START, line number, the line under `journalctl -o short`'s prefix) of one server's
    output: a line without its own stamp (a chat-template example, a table's row) is the stamped line's
    before it, as journald stamps each line when it arrives."""
    out = []
    rel = 0.0
    for number, line in enumerate(lines):
        found = STAMP.match(line)
        if found:
            minutes, seconds, millis, micros = (int(g) for g in found.groups())
            rel = minutes * 60 + seconds + millis / 1e3 + micros / 1e6
        at = offset + rel
        wall = (START + timedelta(seconds=at)).strftime("%b %d %H:%M:%S")
        out.append((at, number, f"{wall} {HOST} {tag}: {line}"))
    return out


def journal(name: str, servers: tuple[tuple[str, str, float], ...]) -> Made:
    """The servers' lines in time order (a server's own lines keep their order), journald-framed."""
    merged: list[tuple[float, int, int, str]] = []
    for index, (sample, tag, offset) in enumerate(servers):
        lines = (SAMPLES / sample).read_text(encoding="utf-8").splitlines()
        merged += [(at, index, number, text) for at, number, text in entries(lines, tag, offset)]
    merged.sort(key=lambda entry: (entry[0], entry[1], entry[2]))
    text = "".join(line + "\n" for *_, line in merged)
    note = f"{name}: {len(merged)} lines, " + ", ".join(f"{tag} from {s}" for s, tag, _ in servers)
    return Made(name, text.encode("utf-8"), note)


def make() -> list[Made]:
    """Every journal sample."""
    return [journal(name, servers) for name, servers in JOURNALS]
