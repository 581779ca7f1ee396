"""An alert's `description` and `runbook_url`, as Alertmanager receivers and Prometheus rules carry them.

The runbook of an alert is its section of docs/alerts.md: `<runbook_base_url>#<alert>` (the page's
heading anchors are the alert names; the test alert's is `the-test-alert`). kvwatch has no public
address of its own, so by default the URL is the page's path in kvwatch's sources, `docs/alerts.md#<alert>`:
`[alerting] runbook_base_url` makes it a link to wherever the operator hosts the page.
"""

from __future__ import annotations

from kvwatch.model import Alert

#: The alerts page's path in kvwatch's sources (a relative reference: no host is assumed).
RUNBOOK_BASE_URL = "docs/alerts.md"
#: Headings of docs/alerts.md that are not the alert's name.
_ANCHORS = {"kvwatch_test_alert": "the-test-alert"}


def runbook_url(alert: str, base: str = RUNBOOK_BASE_URL) -> str:
    """The address of `alert`'s section of docs/alerts.md under `base`."""
    return f"{base}#{_ANCHORS.get(alert, alert)}"


def description(alert: Alert) -> str:
    """The longer text beside the one-line summary: the probable cause, then the fix."""
    cause, fix = alert.cause.strip(), alert.fix.strip()
    if cause and fix and not cause.endswith((".", "!", "?")):
        cause += "."
    return " ".join(p for p in (cause, f"Fix: {fix}" if fix else "") if p) or alert.summary
