"""`kvwatch probe`: send a repeated long prefix to an endpoint and tell whether it comes back cached."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Any

from kvwatch.cli.config import load
from kvwatch.cli.options import command, prefix_tokens, seconds
from kvwatch.probe.conversation import NONCE_FORMS


def add(sub: Any) -> None:
    """`kvwatch probe`: its options."""
    probe = command(
        sub,
        "probe",
        "send a repeated long prefix to an endpoint and tell whether it comes back cached",
        "Send a synthetic conversation twice to an OpenAI- or Anthropic-compatible endpoint and tell whether "
        "its long prefix was served from cache.",
        """examples:
  kvwatch probe http://127.0.0.1:8080/v1
  kvwatch probe https://gateway.example/v1/messages --model claude-sonnet --api-key-env GATEWAY_KEY
  kvwatch probe http://vllm:8000/v1 --model Qwen/Qwen3-8B --no-attribution-header --format json
  kvwatch probe http://vllm:8000/v1/messages --nonce-form request-id
  kvwatch probe --config /etc/kvwatch/kvwatch.toml --probe gateway

exit status:
  0    every conversation's prefix was reused
  1    some conversation's prefix was partly or not reused
  2    cannot tell (the responses carry no cached count), a bad argument, or the run failed
""",
    )
    probe.add_argument(
        "url",
        nargs="?",
        metavar="URL",
        help="the API base (http://host:8000/v1) or a full endpoint path (.../v1/chat/completions, "
        ".../v1/messages) (required unless --config)",
    )
    probe.add_argument(
        "--api",
        choices=("openai", "anthropic"),
        help="the API the endpoint speaks (default: told by the path, else openai)",
    )
    probe.add_argument(
        "--model", help="the model to ask for (default: the first one the endpoint's /models lists)"
    )
    probe.add_argument(
        "--prefix-tokens",
        type=prefix_tokens,
        default=4096,
        metavar="TOKENS",
        help="about how many TOKENS of shared prefix (tools and system prompt), 1024 to 131072 "
        "(default: 4096)",
    )
    stream = probe.add_mutually_exclusive_group()
    stream.add_argument(
        "--stream",
        dest="stream",
        action="store_true",
        default=False,
        help="stream the responses (server-sent events), for engines or gateways that need it (default: off)",
    )
    stream.add_argument(
        "--no-stream", dest="stream", action="store_false", help="whole JSON responses (default: on)"
    )
    header = probe.add_mutually_exclusive_group()
    header.add_argument(
        "--attribution-header",
        dest="attribution_header",
        action="store_true",
        default=True,
        help="also run the conversation with Claude Code's per-request x-anthropic-billing-header line "
        "first in the system prompt (default: on)",
    )
    header.add_argument(
        "--no-attribution-header",
        dest="attribution_header",
        action="store_false",
        help="only the plain conversation (default: off)",
    )
    probe.add_argument(
        "--nonce-form",
        choices=NONCE_FORMS,
        default=None,
        help="the per-request line heading the header conversation's system prompt: billing-header "
        "(Claude Code's x-anthropic-billing-header line as it sends it, which vLLM 0.32 and llama.cpp's "
        "/v1/messages strip) or request-id (a `Request id: <nonce>` line no engine strips: tests the "
        "engine's prefix cache itself) (default: billing-header)",
    )
    probe.add_argument(
        "--format", choices=("text", "json"), default="text", help="text, or json for scripts (default: text)"
    )
    probe.add_argument(
        "--timeout",
        type=seconds,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait to connect and for each read, in SECONDS (default: 60)",
    )
    probe.add_argument(
        "--ca-file", metavar="PATH", help="CA certificates to verify TLS with (default: the system's)"
    )
    probe.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="the environment variable that holds the API key; it is never printed (default: no key)",
    )
    probe.add_argument(
        "--config",
        metavar="PATH",
        help="with --probe: run a configured [[probe]] once, as the daemon does; --nonce-form still applies "
        "(default: none)",
    )
    probe.add_argument(
        "--probe",
        metavar="NAME",
        help="the [[probe]] entry of --config to run (default: the only one)",
    )
    probe.set_defaults(handler=cmd_probe)


def cmd_probe(args: argparse.Namespace) -> int:
    """Run a probe once; print its report; exit status by its verdict."""
    import time

    import requests

    from kvwatch.notify.secrets import Secret
    from kvwatch.probe.conversation import EndpointError
    from kvwatch.probe.report import dumps, render
    from kvwatch.probe.run import ProbeSpec, run_probe

    if bool(args.url) == bool(args.config):
        print("kvwatch probe: give URL or --config PATH (not both)", file=sys.stderr)
        return 2
    if args.nonce_form is not None and not args.attribution_header:
        print("kvwatch probe: --nonce-form has no effect with --no-attribution-header", file=sys.stderr)
        return 2
    if args.config:
        spec = _configured_probe(args)
        if spec is None:
            return 2
        if args.nonce_form is not None:  # (this run only: try the other form on a configured probe)
            spec = dataclasses.replace(spec, nonce_form=args.nonce_form)
    else:
        key = None
        if args.api_key_env:
            value = os.environ.get(args.api_key_env, "").strip()
            if not value:
                print(f"kvwatch probe: --api-key-env: ${args.api_key_env} is not set", file=sys.stderr)
                return 2
            key = Secret(value)
        spec = ProbeSpec(
            url=args.url,
            api=args.api,
            model=args.model,
            prefix_tokens=args.prefix_tokens,
            stream=args.stream,
            attribution_header=args.attribution_header,
            nonce_form=args.nonce_form or "billing-header",
            timeout=args.timeout,
            verify=args.ca_file or True,
            key=key,
        )
    try:
        with requests.Session() as session:
            report = run_probe(spec, session, time.monotonic)
    except EndpointError as err:
        print(f"kvwatch probe: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(dumps(report) if args.format == "json" else render(report))
    return report.exit_status()


def _configured_probe(args: argparse.Namespace) -> Any:
    """The ProbeSpec of --config's [[probe]] named --probe (or its only one); None after saying why."""
    loaded = load(args)
    if loaded is None:
        return None
    probes = loaded[1].probes
    names = [p.name for p, _ in probes]
    chosen = [spec for p, spec in probes if p.name == args.probe or (args.probe is None and len(probes) == 1)]
    if not chosen:
        which = f"no [[probe]] named {args.probe!r}" if args.probe else "give --probe NAME"
        print(f"kvwatch probe: {which} (configured: {', '.join(names) or 'none'})", file=sys.stderr)
        return None
    return chosen[0]
