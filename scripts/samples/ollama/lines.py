"""Ollama's line shapes, from its source (ollama/ollama): slog text records, gin's access line, journald.

- slog: logutil/logutil.go, `slog.NewTextHandler(w, AddSource: true)`, source = the file's basename;
  time as `2006-01-02T15:04:05.000Z07:00`; a value is Go-quoted when it holds a space, `=` or `"`.
- gin: server/routes.go `gin.Default()`, gin's defaultLogFormatter
  `[GIN] %v |%s %3d %s| %13v | %15s |%s %-7s %s %#v` (no colour when not a terminal).
- journald: `Mon DD HH:MM:SS host ollama[PID]: ` (the unit of docs/linux.mdx runs `ollama serve`).
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone

UTC = timezone.utc


def quote(value: object) -> str:
    """slog's TextHandler rendering of one value."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if text == "" or any(c in text for c in ' ="\\') or not text.isprintable():
        return json.dumps(text, ensure_ascii=False)
    return text


def stamp(when: datetime) -> str:
    """`2006-01-02T15:04:05.000Z07:00`."""
    text = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}"
    offset = when.utcoffset() or timedelta(0)
    if offset == timedelta(0):
        return text + "Z"
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def slog(when: datetime, level: str, source: str, msg: str, *pairs: tuple[str, object]) -> str:
    """One slog text record (attributes in the order the call passes them)."""
    attrs = "".join(f" {key}={quote(value)}" for key, value in pairs)
    return f"time={stamp(when)} level={level} source={source} msg={quote(msg)}{attrs}"


def go_duration(seconds: float) -> str:
    """time.Duration.String() of a latency (gin truncates those over a minute to the second)."""
    if seconds >= 60:
        whole = int(seconds)
        return f"{whole // 60}m{whole % 60}s"
    if seconds >= 1:
        return f"{seconds:.9f}".rstrip("0").rstrip(".") + "s"
    return f"{seconds * 1000:.6f}".rstrip("0").rstrip(".") + "ms"


def gin(when: datetime, status: int, seconds: float, method: str, path: str) -> str:
    """One gin access line (server local time, as gin's time.Now())."""
    return (
        f"[GIN] {when.strftime('%Y/%m/%d - %H:%M:%S')} | {status:3d} | {go_duration(seconds):>13} |"
        f" {'127.0.0.1':>15} | {method:<7} {json.dumps(path)}"
    )


def journald(when: datetime, pid: int, text: str, host: str = "workstation") -> str:
    """journalctl's short format: `Mon DD HH:MM:SS host ollama[PID]: ` (local time)."""
    return f"{when.strftime('%b %d %H:%M:%S')} {host} ollama[{pid}]: {text}"


def conversation(
    first: int, turns: int, seed: int, stuck: int | None = None, grow: tuple[int, int] = (80, 900)
) -> list[tuple[int, int, int]]:
    """(prompt, cached, generated) per turn of one chat: each turn reuses all of the previous one (or at
    most `stuck` tokens, a pinned cache), then adds the reply and a new message."""
    rng = random.Random(seed)
    out, prompt, held = [], first, 0
    for _ in range(turns):
        cached = min(held, prompt - 1) if stuck is None else min(stuck, held)
        generated = rng.randint(60, 400)
        out.append((prompt, cached, generated))
        held = prompt + generated
        prompt = held + rng.randint(*grow)  # the reply, then the next message or tool output
    return out
