"""Slack incoming webhook: one Block Kit message per batch, with a plain-text `text` fallback.

A message shows, per alert: a header (firing/resolved, alert name, source), the summary, the
evidence as fields, the cause and the fix (firing only), and a context line with the time, severity
and labels. Slack's limits are kept by construction: at most 50 blocks, 150 characters of header,
3000 per section text, 10 fields per section and 2000 per field; anything longer ends in an
ellipsis.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import requests

from kvwatch.model import Alert
from kvwatch.notify.base import Outcome, post_json
from kvwatch.notify.payload import iso_utc
from kvwatch.notify.secrets import Secret
from kvwatch.notify.transport import Transport

MAX_BLOCKS = 50
HEADER_MAX = 150
SECTION_MAX = 3000
FIELD_MAX = 2000
FIELDS_PER_SECTION = 10
CONTEXT_MAX = 2000
ELLIPSIS = "…"

Block = dict[str, Any]


def fit(text: str, limit: int) -> str:
    """`text` cut to `limit` characters ending in an ellipsis, never inside an `&...;` entity."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    amp = cut.rfind("&", max(0, len(cut) - 5))
    if amp != -1 and ";" not in cut[amp:]:
        cut = cut[:amp]
    return cut + ELLIPSIS


def escape(text: str) -> str:
    """Escape the three characters Slack's mrkdwn reserves."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _mrkdwn(text: str, limit: int) -> Block:
    """A mrkdwn text object, escaped and fitted."""
    return {"type": "mrkdwn", "text": fit(escape(text), limit)}


def _section(text: str) -> Block:
    """A section block holding one text."""
    return {"type": "section", "text": _mrkdwn(text, SECTION_MAX)}


def _value(value: Any) -> str:
    """An evidence value as a short string: strings as they are, others as compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


def _evidence_blocks(evidence: dict[str, Any], budget: int) -> list[Block]:
    """Evidence as at most `budget` sections of 10 fields; a last field counts the rest."""
    items = [f"*{key}*\n{_value(value)}" for key, value in evidence.items()]
    if budget <= 0 or not items:
        return []
    room = budget * FIELDS_PER_SECTION
    if len(items) > room:
        items = [*items[: room - 1], f"{ELLIPSIS} and {len(items) - room + 1} more evidence items"]
    fields = [_mrkdwn(item, FIELD_MAX) for item in items]
    chunks = range(0, len(fields), FIELDS_PER_SECTION)
    return [{"type": "section", "fields": fields[i : i + FIELDS_PER_SECTION]} for i in chunks]


def _title(alert: Alert) -> str:
    """`FIRING: name — source` (or RESOLVED; `source · server` where the source carries several servers),
    the header's and the fallback's first words."""
    where = " · ".join(alert.labels[k] for k in ("source", "server") if alert.labels.get(k))
    return f"{alert.state.upper()}: {alert.alert}" + (f" — {where}" if where else "")


def alert_blocks(alert: Alert, max_blocks: int = MAX_BLOCKS) -> list[Block]:
    """The blocks of one alert, at most `max_blocks` (at least 5) of them."""
    icon = ":rotating_light:" if alert.state == "firing" else ":white_check_mark:"
    header = {
        "type": "header",
        "text": {"type": "plain_text", "text": fit(f"{icon} {_title(alert)}", HEADER_MAX)},
    }
    tail = []
    if alert.state == "firing" and alert.cause:
        tail.append(_section(f"*Cause*\n{alert.cause}"))
    if alert.state == "firing" and alert.fix:
        tail.append(_section(f"*Fix*\n{alert.fix}"))
    labels = ", ".join(f"{k}={v}" for k, v in sorted(alert.labels.items()))
    context = f"{alert.state} at {iso_utc(alert.at)} · severity {alert.severity} · {labels}"
    tail.append({"type": "context", "elements": [_mrkdwn(context, CONTEXT_MAX)]})
    head = [header, _section(alert.summary)]
    evidence = _evidence_blocks(alert.evidence, max_blocks - len(head) - len(tail))
    return [*head, *evidence, *tail]


def build_message(alerts: Sequence[Alert]) -> dict[str, Any]:
    """The webhook payload for `alerts`: blocks within Slack's limits plus the `text` fallback."""
    blocks: list[Block] = []
    for alert in alerts:
        if blocks:
            blocks.append({"type": "divider"})
        blocks.extend(alert_blocks(alert))
    if len(blocks) > MAX_BLOCKS:
        note = f"{ELLIPSIS} {len(blocks) - MAX_BLOCKS + 1} more blocks not shown"
        blocks = [*blocks[: MAX_BLOCKS - 1], {"type": "context", "elements": [_mrkdwn(note, 200)]}]
    text = "\n".join(f"[{_title(a)}] {a.summary}" for a in alerts)
    return {"text": fit(escape(text), SECTION_MAX), "blocks": blocks}


@dataclass(frozen=True)
class SlackNotifier:
    """Posts to one Slack incoming webhook; paced to one message per second by Delivery."""

    name: str
    url: Secret = field(repr=False)
    timeout: float = 10.0
    min_interval: float = 1.0
    max_batch: int = 1
    clock: Callable[[], float] = field(default=time.time, repr=False)
    transport: Transport = field(default_factory=Transport, repr=False)

    def send(self, alerts: Sequence[Alert], session: requests.Session) -> Outcome:
        """Post one message for `alerts`."""
        return post_json(
            session, self.url, build_message(alerts), self.timeout, self.clock, transport=self.transport
        )
