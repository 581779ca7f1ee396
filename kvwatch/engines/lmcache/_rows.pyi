from typing import Any

from kvwatch.engines.lmcache.entries import Row

def rows(run: bytes, /) -> list[Row | bytes]: ...
def take(
    layer: object, run: bytes, other: object, max_ids: int, stretch: float, utc: bool, /
) -> tuple[list[Any], int, int]: ...
