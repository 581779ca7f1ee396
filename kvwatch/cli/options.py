"""What the subcommands share: argument types that refuse a bad value with the reason, and how a
subcommand is declared (its line in `kvwatch --help`, its own help's purpose and examples)."""

from __future__ import annotations

import argparse
from typing import Any

from kvwatch.times import parse_rfc3339, zone

#: `--log.level` and `--log.format` (kvwatch.daemon.log's LEVELS and FORMATS; not imported: replay
#: would load the daemon's modules).
LOG_LEVELS = ("debug", "info", "warn", "error")
LOG_FORMATS = ("logfmt", "json")


def command(sub: Any, name: str, summary: str, purpose: str, examples: str) -> argparse.ArgumentParser:
    """A subcommand: its line in `kvwatch --help`, and its own help's purpose and examples."""
    made: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=purpose,
        epilog=examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return made


def year(text: str) -> int:
    if not text.isdigit() or not 1970 <= int(text) <= 9999:
        raise argparse.ArgumentTypeError(f"not a year: {text!r}")
    return int(text)


def time_zone(text: str) -> str:
    try:
        zone(text)
    except (KeyError, ValueError) as err:
        raise argparse.ArgumentTypeError(f"unknown time zone {text!r}") from err
    return text


def jobs(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"not a number of jobs from 1 to 64: {text!r}")
    return int(text)


#: The last second of year 9999: --start beyond it (or not finite) is refused, as --year is.
_LAST_SECOND = 253402300799.0


def start_time(text: str) -> float:
    try:
        stamp: float | None = float(text)
    except ValueError:
        stamp = parse_rfc3339(text)
    if stamp is None:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time or epoch seconds: {text!r}")
    if not 0.0 <= stamp <= _LAST_SECOND:  # (False for nan too)
        raise argparse.ArgumentTypeError(f"not a time from 1970 to 9999: {text!r}")
    return stamp


def listen_address(text: str) -> tuple[str, int]:
    """ADDRESS:PORT, [IPV6]:PORT, or :PORT (address "": every interface, as Go's net.Listen)."""
    host, sep, port = text.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if not sep or not port.isdigit() or int(port) > 65535 or (":" in host and not bracketed):
        raise argparse.ArgumentTypeError(
            f"expected ADDRESS:PORT, [IPV6]:PORT or :PORT (port 0 picks a free one): {text!r}"
        )
    return host[1:-1] if bracketed else host, int(port)


def speed(text: str) -> float:
    try:
        speed = float(text)
    except ValueError:
        speed = 0.0
    if not 0.01 <= speed <= 10000:
        raise argparse.ArgumentTypeError(f"expected a factor between 0.01 and 10000: {text!r}")
    return speed


def prefix_tokens(text: str) -> int:
    if not text.isdigit() or not 1024 <= int(text) <= 131072:
        raise argparse.ArgumentTypeError(f"not a number of tokens from 1024 to 131072: {text!r}")
    return int(text)


def seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0.1 <= seconds <= 3600:
        raise argparse.ArgumentTypeError(f"expected SECONDS from 0.1 to 3600: {text!r}")
    return seconds
