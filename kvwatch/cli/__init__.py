"""The command line, one module per subcommand: replay, run, demo, check-config and test-alert (config),
probe, init and hash-password (install), report; `main(argv)`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from kvwatch import __version__
from kvwatch.cli import config, demo, install, probe, replay, report, run
from kvwatch.cli.replay import DAMAGED, FORMATS, UNRECOGNISED
from kvwatch.cli.run import CONFIG_ERROR
from kvwatch.engines import displays

__all__ = ["CONFIG_ERROR", "DAMAGED", "FORMATS", "UNRECOGNISED", "build_parser", "main"]

#: The help's examples and replay's exit statuses (`kvwatch --help`, `kvwatch replay --help`).
_EXAMPLES = """examples:
  kvwatch demo                                    # the daemon on bundled samples: no config, no GPU
  kvwatch replay --format prom vllm.log           # a log's metrics, once
  kvwatch check-config /etc/kvwatch/kvwatch.toml
  kvwatch run --config /etc/kvwatch/kvwatch.toml
  kvwatch replay --help                           # each command's options
"""


class _Version(argparse._VersionAction):
    """`kvwatch --version`: the version, then the replay accelerators in use and the switch that turns
    them off (kvwatch.replay.speedups, asked only now: every other command's start-up stays lean)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from kvwatch.replay.speedups import describe

        print(f"kvwatch {__version__}\n{describe()}")
        parser.exit()


def build_parser(
    parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser,
) -> argparse.ArgumentParser:
    """The argument parser with every subcommand; `parser_class`: the class of it and of each
    subcommand's parser (argparse's own by default; the help's tests pass one that lists what it holds)."""
    parser = parser_class(
        prog="kvwatch",
        description=f"Watch logs ({', '.join(displays())}) for prefix-cache and KV-offload failures: "
        "Prometheus metrics and alerts.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, help="print the version and replay's accelerators")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=parser_class)
    for add in (
        replay.add,
        run.add,
        demo.add,
        config.add,
        config.add_test_alert,
        install.add_hash_password,
        install.add,
        probe.add,
        report.add,
    ):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    replay.preload_engines(argv)  # (a config's engines join --engine's choices)
    args = build_parser().parse_args(argv)
    try:
        status: int = args.handler(args)
        return status
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
