"""`kvwatch init` and `kvwatch hash-password`: what a new installation writes (the dashboard, rules,
unit and example config) and the web config's password hashes."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kvwatch.cli.options import command


def add(sub: Any) -> None:
    """`kvwatch init`: its options."""
    init = command(
        sub,
        "init",
        "write the dashboard, rules, systemd unit and example config into a directory",
        "Write the shipped Grafana dashboard, Prometheus rules (and their promtool test), systemd unit and "
        "example config into DIR.",
        """examples:
  kvwatch init /etc/kvwatch
  kvwatch init --force /etc/kvwatch
""",
    )
    init.add_argument("directory", metavar="DIR", help="where to write them, created if missing (required)")
    init.add_argument(
        "--force",
        action="store_true",
        help="overwrite files that exist already; without it, refuse to (default: off)",
    )
    init.set_defaults(handler=cmd_init)


def add_hash_password(sub: Any) -> None:
    """`kvwatch hash-password`: its options."""
    made = command(
        sub,
        "hash-password",
        "read a password on stdin, print its hash for the web config",
        "Read a password (prompted on a terminal, else standard input's first line) and print its bcrypt "
        "hash (cost 10, as `htpasswd -nBC 10`), for the web-config.yml's basic_auth_users.",
        """examples:
  kvwatch hash-password
  printf '%s\\n' "$PASSWORD" | kvwatch hash-password
""",
    )
    made.set_defaults(handler=cmd_hash_password)


def cmd_init(args: argparse.Namespace) -> int:
    """Write the assets into DIR, or name each file that exists already and write nothing (exit 1)."""
    from pathlib import Path

    from kvwatch.assets import conflicts, next_steps, write_assets

    directory = Path(args.directory)
    existing = [] if args.force else conflicts(directory)
    for path in existing:
        print(f"kvwatch init: {path} exists already (--force overwrites it)", file=sys.stderr)
    if existing:
        print("kvwatch init: nothing written", file=sys.stderr)
        return 1
    try:
        written = write_assets(directory)
    except OSError as err:
        print(f"kvwatch init: cannot write {err.filename}: {err.strerror or err}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    print("\n".join(next_steps(directory)))
    return 0


def cmd_hash_password(args: argparse.Namespace) -> int:
    """Read a password (prompted on a terminal, else the first line of stdin); print its hash."""
    import getpass

    from kvwatch.web.auth import hash_password

    password = getpass.getpass("password: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\n")
    if not password:
        print("kvwatch: empty password", file=sys.stderr)
        return 1
    if len(password.encode("utf-8")) > 72:
        print("kvwatch: bcrypt reads 72 bytes at most; use a shorter password", file=sys.stderr)
        return 1
    print(hash_password(password))
    return 0
