"""What telling a file's framing from its head asks of each framing: whether most of its first lines
have the framing's shape."""

from __future__ import annotations

import re


def most_lines_match(head: bytes, shape: re.Pattern[bytes]) -> bool:
    """Whether most of the first 20 non-empty lines of a file's head start with `shape` (a last line the
    head cuts short is left out)."""
    lines = [line for line in head.split(b"\n")[:20] if line]
    if head and not head.endswith(b"\n") and len(lines) > 1:
        lines.pop()  # (the head may cut its last line)
    return bool(lines) and sum(1 for line in lines if shape.match(line)) * 2 > len(lines)
