"""Test helpers: lines framed as Kubernetes' container runtimes write them (CRI), and the sample corpora
as (message, stream, time) lines.

containerd (`internal/cri/io/logger.go`): UTC time with `Z`, the fraction's trailing zeros trimmed, the
line's `\\n` (and a `\\r` before it) dropped, a line longer than 16384 bytes split into `P` pieces ended
by an `F`. CRI-O: the same, the time with a numeric offset and nine digits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Literal

from kvwatch.replay.files import open_log

Runtime = Literal["containerd", "cri-o"]
#: containerd's and CRI-O's split: longer lines are written in pieces of this many bytes.
SPLIT = 16384


def stamp(when: datetime, runtime: Runtime) -> str:
    """A CRI log line's time as `runtime` writes it."""
    utc = when.astimezone(timezone.utc)
    if runtime == "cri-o":
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond * 1000:09d}+00:00"
    fraction = f"{utc.microsecond * 1000:09d}".rstrip("0")
    return utc.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def cri_line(message: bytes, stream: str, when: datetime, runtime: Runtime, split: int = SPLIT) -> bytes:
    """One line (without its `\\n`) as the runtime writes it: one `F` line, or `P` pieces and an `F`."""
    body = message.removesuffix(b"\n").removesuffix(b"\r")
    pieces = [body[at : at + split] for at in range(0, len(body), split)] or [b""]
    prefix = f"{stamp(when, runtime)} {stream} ".encode()
    return b"".join(
        prefix + (b"F " if index == len(pieces) - 1 else b"P ") + piece + b"\n"
        for index, piece in enumerate(pieces)
    )


def docker_line(message: bytes, stream: str, when: datetime) -> bytes:
    """The same line as docker's json-file driver writes it (one entry; moby's own split aside)."""
    text = message.removesuffix(b"\n").decode("utf-8", "replace") + "\n"
    time = when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"
    return json.dumps({"log": text, "stream": stream, "time": time}).encode() + b"\n"


Line = tuple[bytes, str, "datetime | None"]


def sample_lines(path: Path) -> list[Line]:
    """A sample log's lines as (message, stream, time): a json-file log's entries joined back into
    lines (with their stream and time), a plain log's lines on stdout with no time."""
    with open_log(str(path)) as stream:
        data = stream.read()
    if not data.lstrip().startswith(b'{"log":'):
        lines = data.split(b"\n")
        if not lines[-1]:  # (a last line without its newline is a line all the same: replay reads it)
            lines.pop()
        return [(line, "stdout", None) for line in lines]
    out: list[Line] = []
    held = b""
    for raw in data.splitlines():
        entry = json.loads(raw)
        if not held:
            when = datetime.fromisoformat(entry["time"][:26] + "+00:00")
        held += entry["log"].encode()
        if held.endswith(b"\n"):
            out.append((held[:-1], entry["stream"], when))
            held = b""
    return out


def framed(
    lines: Iterable[Line], framing: Runtime | Literal["docker-json"], start: datetime, split: int = SPLIT
) -> bytes:
    """The lines framed as `framing` writes them; a line without a time is stamped `start` plus a
    millisecond per line before it."""
    out = []
    for index, (message, stream, when) in enumerate(lines):
        at = when or start + timedelta(milliseconds=index)
        if framing == "docker-json":
            out.append(docker_line(message, stream, at))
        else:
            out.append(cri_line(message, stream, at, framing, split))
    return b"".join(out)
