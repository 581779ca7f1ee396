"""A probe run for a human (text) or a script (JSON)."""

from __future__ import annotations

import json
from typing import Any

from kvwatch.probe.run import Exchange, Report, Sent

#: The header conversation's title in the text report, per nonce form.
TITLES = {
    "billing-header": "with the attribution header",
    "request-id": "with a request id heading the system prompt",
}


def to_json(report: Report) -> dict[str, Any]:
    """The run as a JSON-able dict (`kvwatch probe --format json`)."""
    return {
        "url": report.url,
        "api": report.api,
        "model": report.model,
        "outcome": report.outcome,
        "error": report.error,
        "verdict": report.verdict(),
        "nonce_form": report.nonce_form,
        "exit_status": report.exit_status(),
        "conversations": [_conversation(c) for c in report.conversations],
    }


def _conversation(conv: Exchange) -> dict[str, Any]:
    """One conversation's requests and verdict."""
    v = conv.verdict
    return {
        "name": conv.name,
        "requests": [
            {
                "prompt_tokens": s.usage.prompt,
                "cached_tokens": s.usage.cached,
                "cached_field": s.usage.field,
                "ttfb_seconds": round(s.ttfb, 6),
            }
            for s in conv.requests
        ],
        "verdict": v.kind,
        "prefix_tokens": v.prefix,
        "cached_tokens": v.cached,
        "cached_share": v.share,
        "summary": v.summary,
        "cause": v.cause,
        "fix": v.fix,
    }


def _sent(index: int, sent: Sent, prefix: int | None) -> str:
    """One request on one line."""
    usage = sent.usage
    cached = "no cached count" if usage.cached is None else f"cached {usage.cached}"
    if index == 2 and usage.cached is not None and prefix:
        cached += f" ({min(usage.cached / prefix, 1.0):.1%} of the {prefix}-token prefix)"
    prompt = "?" if usage.prompt is None else str(usage.prompt)
    return f"  request {index}: prompt {prompt} tokens, {cached}, first byte {sent.ttfb:.3f} s"


def render(report: Report) -> str:
    """The run as text: each conversation's requests and verdict, then the run's verdict."""
    lines = [f"kvwatch probe {report.url} ({report.api}, model {report.model or '?'})"]
    for conv in report.conversations:
        title = "plain conversation" if conv.name == "plain" else TITLES[report.nonce_form]
        lines.append(f"{title}:")
        lines += [_sent(i, s, conv.verdict.prefix) for i, s in enumerate(conv.requests, 1)]
        lines.append(f"  verdict: {conv.verdict.summary}")
        if conv.verdict.cause:
            lines.append(f"  cause: {conv.verdict.cause}")
        if conv.verdict.fix and conv.verdict.fix != conv.verdict.cause:
            lines.append(f"  fix: {conv.verdict.fix}")
    if report.error:
        lines.append(f"failed ({report.outcome}): {report.error}")
    lines.append(f"result: {report.verdict()} (exit status {report.exit_status()})")
    return "\n".join(lines) + "\n"


def dumps(report: Report) -> str:
    """The JSON text of a run."""
    return json.dumps(to_json(report), indent=1, sort_keys=True) + "\n"
