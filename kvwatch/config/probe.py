"""`[[probe]]`: an endpoint the daemon probes for prefix caching (kvwatch.probe); its key is never inline."""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Literal, cast

from kvwatch.config.fields import Fields
from kvwatch.config.types import ProbeConfig
from kvwatch.probe.conversation import APIS, NONCE_FORMS, EndpointError, NonceForm, endpoint

#: An HTTP header name (RFC 9110 token) and an environment variable's name.
_HEADER = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Headers the probe sets itself (the key goes in api_key_env or api_key_file).
_OWN = ("authorization", "x-api-key", "content-type", "content-length", "connection", "host")


def read_probe(f: Fields, name: str) -> ProbeConfig:
    """One `[[probe]]` table; every problem names its field."""
    url = f.string("url", required="") or ""
    api = cast("Literal['openai', 'anthropic'] | None", f.choice("api", APIS, "") or None)
    if url:
        try:
            endpoint(url, api)
        except EndpointError as err:
            f.problem("url", str(err).replace("--api", "api"))
    if f.get("api_key") is not None:  # (never quoted back: it is a secret)
        f.problem("api_key", "not read from the config text: give api_key_env or api_key_file")
    key_env = f.string("api_key_env")
    if key_env is not None and not _ENV.fullmatch(key_env):
        f.problem("api_key_env", "must be an environment variable's name")
    key_file = f.path("api_key_file")
    if key_env is not None and key_file is not None:
        f.problem("api_key_env", "give api_key_env or api_key_file, not both")
    default = ProbeConfig(name, url)
    header = f.boolean("attribution_header", default.attribution_header)
    form = cast("NonceForm", f.choice("nonce_form", NONCE_FORMS, default.nonce_form) or default.nonce_form)
    if f.has("nonce_form") and not header:
        f.problem("nonce_form", "has no effect with attribution_header = false (no header conversation)")
    return ProbeConfig(
        name=name,
        url=url,
        api=api,
        model=f.string("model"),
        interval=f.integer("interval", 1, 86400, default.interval) or default.interval,
        jitter=f.integer("jitter", 0, 3600, default.jitter) or 0,
        prefix_tokens=f.integer("prefix_tokens", 1024, 131072, default.prefix_tokens)
        or default.prefix_tokens,
        stream=f.boolean("stream", default.stream),
        attribution_header=header,
        nonce_form=form,
        timeout=f.integer("timeout", 1, 3600, default.timeout) or default.timeout,
        ca_file=f.path("ca_file"),
        api_key_env=key_env,
        api_key_file=key_file,
        headers=MappingProxyType(_headers(f)),
    )


def _headers(f: Fields) -> dict[str, str]:
    """`headers`: a table of extra HTTP header names and string values (never quoted in a message)."""
    value = f.get("headers")
    if value is None:
        return {}
    if not isinstance(value, dict):
        f.problem("headers", 'must be a table of "Header-Name" = "value" strings')
        return {}
    out = {}
    for key, text in value.items():
        if not _HEADER.fullmatch(key):
            f.problem(f"headers.{key}", "not an HTTP header name")
        elif key.lower() in _OWN:
            f.problem(f"headers.{key}", "set by the probe itself (the key: api_key_env or api_key_file)")
        elif not isinstance(text, str) or not text or "\n" in text or "\r" in text:
            f.problem(f"headers.{key}", "must be a one-line non-empty string")
        else:
            out[key] = text
    return out
