"""Docker's json-file log driver (moby `jsonlog`), written by hand."""

from __future__ import annotations

from datetime import datetime, timezone

from scripts.samples.vllm.lines import NS
from scripts.samples.vllm.server import Chunk


def go_rfc3339nano(t: int) -> str:
    """Go time.RFC3339Nano in UTC: trailing zeros of the fraction trimmed, none if zero."""
    base = datetime.fromtimestamp(t // NS, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    frac = f"{t % NS:09d}".rstrip("0")
    return f"{base}.{frac}Z" if frac else f"{base}Z"


def moby_escape(data: bytes) -> str:
    """moby jsonlog ffjsonWriteJSONBytesAsString: \\" \\\\ \\n \\r, <>& and other C0 as \\u00XX."""
    out: list[str] = []
    i = 0
    while i < len(data):
        b = data[i]
        if b < 0x80:
            if b >= 0x20 and b not in b'\\"<>&':
                out.append(chr(b))
            elif b in b'\\"':
                out.append("\\" + chr(b))
            elif b == 0x0A:
                out.append("\\n")
            elif b == 0x0D:
                out.append("\\r")
            else:
                out.append(f"\\u00{b:02x}")
            i += 1
            continue
        for size in (2, 3, 4):  # decode one rune; an invalid byte becomes \ufffd
            try:
                ch = data[i : i + size].decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(ch) == 1:
                out.append(f"\\u{ord(ch):04x}" if ch in "\u2028\u2029" else ch)
                i += size
                break
        else:
            out.append("\\ufffd")
            i += 1
    return "".join(out)


def docker_json(chunks: list[Chunk]) -> bytes:
    """The json-file driver: one entry per line, lines over 16 KiB split into 16384-byte entries."""
    lines: list[str] = []
    for c in chunks:
        data = c.text.encode("utf-8")
        t = c.t
        pieces = data.split(b"\n")  # json-file splits on \n only; \r stays inside the entry
        physical = [p + b"\n" for p in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
        for k, line in enumerate(physical):
            parts = [line[j : j + 16384] for j in range(0, len(line), 16384)]
            for m, part in enumerate(parts):
                when = t + 7_000 * k + 1_000 * m + (len(lines) * 7919) % 1000
                lines.append(
                    f'{{"log":"{moby_escape(part)}","stream":"{c.stream}","time":"{go_rfc3339nano(when)}"}}\n'
                )
    return "".join(lines).encode("utf-8")
