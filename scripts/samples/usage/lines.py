"""What every usage sample shares: compact JSON, Go's map encoding, UTC times, KV blocks."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

UTC = timezone.utc
FLASH = "DeepSeek-V4-Flash"


def dumps(obj: Any) -> str:
    """Compact JSON, keys in the order given."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def go_json(obj: dict[str, Any]) -> str:
    """What Go's encoding/json makes of a map: keys sorted, compact (new-api's `other`)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def epoch(text: str) -> int:
    """Epoch seconds of a UTC `YYYY-MM-DDTHH:MM:SS`."""
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def rfc3339(ts: float, offset_hours: int = 0) -> str:
    """`2026-08-18T09:00:00.123Z`, or with an offset."""
    tz = timezone(timedelta(hours=offset_hours))
    moment = datetime.fromtimestamp(ts, tz)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
    return text + ("Z" if offset_hours == 0 else moment.strftime("%z")[:3] + ":" + moment.strftime("%z")[3:])


def block(tokens: int, size: int = 64) -> int:
    """Round down to whole KV blocks, as vLLM reports cached tokens."""
    return tokens // size * size
