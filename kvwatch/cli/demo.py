"""`kvwatch demo`: the daemon on the bundled samples, written at an accelerated pace."""

from __future__ import annotations

import argparse
from typing import Any

from kvwatch import DEFAULT_PORT
from kvwatch.cli.options import command, listen_address, speed


def add(sub: Any) -> None:
    """`kvwatch demo`: its options."""
    demo = command(
        sub,
        "demo",
        "the daemon on the bundled samples, written at an accelerated pace: no config, no GPU",
        "Run the daemon on the bundled sample logs, written at an accelerated pace (no config, no GPU), "
        "until Ctrl-C.",
        """examples:
  kvwatch demo
  kvwatch demo --speed 100 --listen 127.0.0.1:0
  kvwatch demo --keep kvwatch-demo
""",
    )
    demo.add_argument(
        "--speed",
        type=speed,
        default=20.0,
        metavar="FACTOR",
        help="times the logs' own pace, a FACTOR from 0.01 to 10000 (default: 20)",
    )
    demo.add_argument(
        "--listen",
        type=listen_address,
        default=("127.0.0.1", DEFAULT_PORT),
        metavar="ADDRESS:PORT",
        help="where /metrics is served; :PORT is every interface; port 0 picks a free one "
        f"(default: 127.0.0.1:{DEFAULT_PORT})",
    )
    demo.add_argument(
        "--keep",
        metavar="DIR",
        help="write the logs, config and state into DIR (new or empty) and keep it "
        "(default: a temporary directory, removed on exit)",
    )
    demo.set_defaults(handler=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the demo until Ctrl-C."""
    from kvwatch.demo import run_demo

    return run_demo(args.speed, args.listen, args.keep)
