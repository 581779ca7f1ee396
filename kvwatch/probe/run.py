"""One probe run: the plain conversation, then (with the header test) the same with a per-request nonce
line (`nonce_form`: Claude Code's attribution line, or a plain request id) heading the system prompt.

Each conversation is two requests (the first, then the follow-up that repeats it), max_tokens 1 each:
a run costs at most three prefills of the prefix (the plain follow-up is served from cache when caching
works) and four generated tokens. A failed request ends the run; nothing is retried.
"""

from __future__ import annotations

import secrets as random_source
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import requests

from kvwatch.notify.secrets import Secret
from kvwatch.probe.client import ProbeError, auth_headers, first_model, post
from kvwatch.probe.conversation import Api, Conversation, NonceForm, body, endpoint
from kvwatch.probe.usage import Usage
from kvwatch.probe.verdict import EXIT, Kind, Verdict, judge, worst


@dataclass(frozen=True)
class ProbeSpec:
    """What to probe and how; `key` is the API key (never printed), `headers` extra HTTP headers."""

    url: str
    api: Api | None = None
    model: str | None = None
    prefix_tokens: int = 4096
    stream: bool = False
    attribution_header: bool = True
    nonce_form: NonceForm = "billing-header"  # the header conversation's per-request line
    timeout: float = 60.0
    verify: bool | str = True  # a CA file's path, or whether to verify TLS at all
    key: Secret | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Sent:
    """One request's counts and time to first byte (seconds)."""

    usage: Usage
    ttfb: float


@dataclass(frozen=True)
class Exchange:
    """One conversation: its requests and its verdict."""

    name: str  # "plain" or "header"
    requests: tuple[Sent, ...]
    verdict: Verdict


@dataclass(frozen=True)
class Report:
    """A run: where, which model, its outcome (`ok` or a failure), the conversations done."""

    url: str
    api: Api
    model: str
    outcome: str
    error: str = ""
    conversations: tuple[Exchange, ...] = ()
    nonce_form: NonceForm = "billing-header"

    def verdict(self) -> Kind:
        """The worst conversation's verdict; `cannot tell` for a failed run."""
        if self.outcome not in ("ok", "no_usage"):
            return "cannot tell"
        return worst([c.verdict.kind for c in self.conversations])

    def exit_status(self) -> int:
        """0 all reused, 1 any partly or not reused, 2 cannot tell or failed."""
        return EXIT[self.verdict()]

    def deciding(self) -> Exchange | None:
        """The conversation with the lowest cached share (the one the metrics and the alert report)."""
        told = [c for c in self.conversations if c.verdict.share is not None]
        return min(told, key=lambda c: c.verdict.share or 0.0) if told else None


def nonce() -> str:
    """A fresh 5-hex-digit nonce, as Claude Code's `cch=`."""
    return f"{random_source.randbelow(16**5):05x}"


def run_probe(
    spec: ProbeSpec,
    session: requests.Session,
    clock: Callable[[], float],
    make_nonce: Callable[[], str] = nonce,
) -> Report:
    """Run the plain conversation and, if asked, the header one; failures are in the report."""
    point = endpoint(spec.url, spec.api)
    headers = {**auth_headers(point.api, spec.key), **spec.headers}
    hidden: tuple[Secret, ...] = (spec.key,) if spec.key is not None else ()
    hidden += tuple(Secret(v) for v in spec.headers.values() if len(v) > 1)
    model = spec.model or ""
    done: list[Exchange] = []
    try:
        if not model:
            model = first_model(
                session, point.models, headers, timeout=spec.timeout, verify=spec.verify, secrets=hidden
            )
        conv = Conversation(point.api, model, spec.prefix_tokens, spec.stream, spec.nonce_form)

        def send(nonce_value: str | None, follow_up: bool) -> Sent:
            made = body(conv, nonce_value, follow_up)
            reply = post(
                session, point.url, point.api, made, headers,
                timeout=spec.timeout, verify=spec.verify, clock=clock, secrets=hidden,
            )  # fmt: skip
            return Sent(reply.usage, reply.ttfb)

        plan: list[tuple[str, bool]] = [("plain", False)]
        if spec.attribution_header:
            plan.append(("header", True))
        for name, with_header in plan:
            first_sent = send(make_nonce() if with_header else None, False)
            follow_sent = send(make_nonce() if with_header else None, True)
            plain = done[0].verdict if done else None
            form = spec.nonce_form if with_header else None
            verdict = judge(first_sent.usage, follow_sent.usage, form, plain)
            done.append(Exchange(name, (first_sent, follow_sent), verdict))
    except ProbeError as failure:
        return Report(
            point.url, point.api, model, failure.outcome, str(failure), tuple(done), spec.nonce_form
        )
    told = all(c.verdict.kind != "cannot tell" for c in done)
    outcome = "ok" if told else "no_usage"
    return Report(point.url, point.api, model, outcome, "", tuple(done), spec.nonce_form)
