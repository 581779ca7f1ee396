"""LMCache's run loop"""

from typing import Any

def take(
    layer: object, run: bytes, other: object, max_ids: int, stretch: float, utc: bool, /
) -> tuple[list[Any], int, int]: ...
