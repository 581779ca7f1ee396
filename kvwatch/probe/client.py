"""One probe request over HTTP (requests): posted once, never retried, its time to first byte measured.

The clock is passed in (tests use a fake one). `timeout` bounds the connect and every read. Errors
become a ProbeError with the run outcome it counts as; its message never holds the API key (`scrub`).
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from kvwatch.notify.secrets import Secret, scrub
from kvwatch.probe.conversation import Api
from kvwatch.probe.usage import ResponseError, Usage, parse_body, parse_stream

#: The most of a response body that is read (a probe's reply is one token).
MAX_BODY = 1 << 20
#: Outcomes of a run besides `ok`, as kvwatch_probe_runs_total counts them.
FAILURES = ("http_error", "timeout", "connection_error", "tls_error", "bad_response", "no_usage")


class ProbeError(Exception):
    """A request that gave no usable answer; `outcome` is one of FAILURES."""

    def __init__(self, outcome: str, message: str) -> None:
        """Keep the outcome and the human message."""
        super().__init__(message)
        self.outcome = outcome


@dataclass(frozen=True)
class Reply:
    """A response's counts and its time to first byte (seconds from sending)."""

    usage: Usage
    ttfb: float


def auth_headers(api: Api, key: Secret | None) -> dict[str, str]:
    """The API's authentication and version headers."""
    if api == "anthropic":
        made = {"anthropic-version": "2023-06-01"}
        return made | ({"x-api-key": key.reveal()} if key is not None else {})
    return {"Authorization": f"Bearer {key.reveal()}"} if key is not None else {}


def _chunks(response: requests.Response) -> Iterator[bytes]:
    """The body's chunks, up to MAX_BODY bytes."""
    size = 0
    for chunk in response.iter_content(chunk_size=None):
        size += len(chunk)
        if size > MAX_BODY:
            raise ProbeError("bad_response", f"the response is longer than {MAX_BODY} bytes")
        yield chunk


def post(
    session: requests.Session,
    url: str,
    api: Api,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    *,
    timeout: float,
    verify: bool | str,
    clock: Callable[[], float],
    secrets: tuple[Secret, ...] = (),
) -> Reply:
    """POST `body`; the response's counts and time to first byte, or ProbeError."""
    # A fresh connection per request: some servers close one after a stream without saying so, and a
    # reused dead connection would fail the next request (requests retries nothing).
    sent = {**headers, "Connection": "close"}
    started = clock()
    try:
        response = session.post(url, json=body, headers=sent, timeout=timeout, verify=verify, stream=True)
        with response:
            chunks = _chunks(response)
            first = next(chunks, b"")
            ttfb = clock() - started
            raw = first + b"".join(chunks)
    except requests.exceptions.SSLError as err:
        raise ProbeError("tls_error", scrub(f"TLS: {err}", *secrets)) from None
    except requests.Timeout:
        raise ProbeError("timeout", f"no answer within {timeout:g} s") from None
    except requests.RequestException as err:
        raise ProbeError("connection_error", scrub(f"cannot connect: {err}", *secrets)) from None
    text = codecs.decode(raw, "utf-8", "replace")
    if response.status_code >= 400:
        excerpt = " ".join(text.split())[:300]
        raise ProbeError("http_error", scrub(f"HTTP {response.status_code}: {excerpt}", *secrets))
    try:
        usage = parse_stream(api, text.splitlines()) if body.get("stream") else parse_body(api, text)
    except ResponseError as err:
        raise ProbeError("bad_response", str(err)) from None
    return Reply(usage, ttfb)


def first_model(
    session: requests.Session,
    url: str,
    headers: Mapping[str, str],
    *,
    timeout: float,
    verify: bool | str,
    secrets: tuple[Secret, ...] = (),
) -> str:
    """The first model id the endpoint's `/models` lists (OpenAI and Anthropic shapes), or ProbeError."""
    try:
        response = session.get(url, headers=dict(headers), timeout=timeout, verify=verify)
    except requests.Timeout:
        raise ProbeError("timeout", f"{url}: no answer within {timeout:g} s") from None
    except requests.RequestException as err:
        raise ProbeError("connection_error", scrub(f"cannot list the models: {err}", *secrets)) from None
    if response.status_code >= 400:
        raise ProbeError("http_error", f"listing the models: HTTP {response.status_code}; give --model")
    try:
        data = response.json().get("data") or response.json().get("models")
        model = data[0].get("id") or data[0].get("name") or data[0].get("model")
    except (ValueError, AttributeError, IndexError, TypeError, KeyError):
        model = None
    if not isinstance(model, str) or not model:
        raise ProbeError("bad_response", "the endpoint lists no model; give --model")
    return model
