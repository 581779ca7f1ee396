"""`kvwatch check-config` and `kvwatch test-alert`: a config read as `kvwatch run` reads it, and
`load`, which every command that takes a config uses."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from kvwatch.cli.options import command


def add(sub: Any) -> None:
    """`kvwatch check-config`: its options."""
    check = command(
        sub,
        "check-config",
        "validate a config file and print a summary",
        "Validate a config file and print a summary of what it enables; or each problem, and exit 1.",
        """examples:
  kvwatch check-config /etc/kvwatch/kvwatch.toml
  kvwatch check-config kvwatch.example.toml
  kvwatch check-config kvbm.toml --try 'KVBM [w0] Cache Hit Rates - Host: 0.0% (0/74), Disk: 10.8% (8/74)'
""",
    )
    check.add_argument("path", metavar="PATH", help="the config file, TOML (required)")
    check.add_argument(
        "--unit",
        metavar="PATH",
        help="the systemd unit that will run this config: its user must write state_dir and read the "
        "sources; a user unit (WantedBy=default.target) runs as you (default: for a user other than root, "
        "~/.config/systemd/user/kvwatch.service first; then /etc/systemd/system/kvwatch.service, else "
        "/lib/systemd/system/kvwatch.service, else the shipped kvwatch.service for root and the shipped "
        "user unit for anyone else)",
    )
    check.add_argument(
        "--try",
        dest="try_lines",
        action="append",
        default=[],
        metavar="LINE",
        help="a log line: print what each engine the config defines ([[engine]]) makes of it, instead of "
        "the summary; repeatable (default: none)",
    )
    check.set_defaults(handler=cmd_check_config)


def add_test_alert(sub: Any) -> None:
    """`kvwatch test-alert`: its options."""
    test = command(
        sub,
        "test-alert",
        "send a sample alert through every configured notifier",
        "Send a sample alert through every configured notifier and print each result; exit 1 if any failed.",
        """example:
  kvwatch test-alert --config /etc/kvwatch/kvwatch.toml
""",
    )
    test.add_argument(
        "--config",
        metavar="PATH",
        required=True,
        help="the config file whose [[notifier]] entries are tried (required)",
    )
    test.set_defaults(handler=cmd_test_alert)


def load(args: argparse.Namespace, unit: Any = None) -> Any:
    """The config (or the stdin one) and what prepare() builds from it; None after printing why.
    With `unit` (check-config), URLs that only the unit's LoadCredential= will hand over are not checked."""
    from kvwatch.config import ConfigError, config_for_stdin, load_config
    from kvwatch.daemon import prepare

    try:
        if getattr(args, "stdin", False):
            config = config_for_stdin(args.engine)
        else:
            config = load_config(args.config if hasattr(args, "config") else args.path)
        if unit is not None:
            from kvwatch.config.unit import deferred_credentials

            return config, prepare(config, deferred=deferred_credentials(unit, config, os.environ))
        return config, prepare(config)
    except ConfigError as err:
        print(f"kvwatch: {err}", file=sys.stderr)
        return None


def cmd_check_config(args: argparse.Namespace) -> int:
    """Print the summary of a valid config and what its unit's user will see; each problem, exit 1."""
    import time
    from pathlib import Path

    from kvwatch.atomic import unwritable
    from kvwatch.config import silence_warnings, summarize
    from kvwatch.config.unit import load_unit, state_dir_problem, what_the_service_sees

    try:
        unit = load_unit(Path(args.unit) if args.unit else None)
    except (OSError, UnicodeDecodeError) as err:
        print(
            f"kvwatch: cannot read the unit {args.unit}: {getattr(err, 'strerror', None) or err}",
            file=sys.stderr,
        )
        return 1
    loaded = load(args, unit)
    if loaded is None:
        return 1
    config = loaded[0]
    if config.server.web_config is not None:  # (read as `kvwatch run` reads it: keys, hashes, certificates)
        from kvwatch.config import ConfigError
        from kvwatch.web.config import load_web_config

        try:
            load_web_config(config.server.web_config)
        except ConfigError as err:
            print(f"kvwatch: server.web_config: {err}", file=sys.stderr)
            return 1
    if args.try_lines:
        from kvwatch.engines import try_lines

        sys.stdout.write(try_lines(config.engines, args.try_lines))
        return 0
    sys.stdout.write(summarize(config))
    print(f"service: {unit.where} runs kvwatch as {unit.who()}")
    for warning in silence_warnings(config, time.time()):  # (in force at the time of the check)
        print(f"kvwatch: warning: {warning}", file=sys.stderr)
    for source in config.sources:  # (a database is asked what it holds: the rest is read as it comes)
        if source.type == "sql":
            from kvwatch.sources.sql import describe

            print(f"  {source.name}: " + "\n  ".join(describe(source.settings)))
    problem = state_dir_problem(unit, config.state_dir)
    if problem is not None:
        print(f"kvwatch: warning: {problem}", file=sys.stderr)
    if os.geteuid() == 0:
        print(f"  state_dir {config.state_dir}: {'not writable' if problem else 'writable'}")
        print("\n".join(what_the_service_sees(unit, config)))
    problem = unwritable(config.state_dir, create=False)
    if problem is not None:
        print(f"kvwatch: warning: {problem}, as this user; `kvwatch run` refuses to start", file=sys.stderr)
    return 0


def cmd_test_alert(args: argparse.Namespace) -> int:
    """Send the sample alert through each notifier; print each result; 1 if any failed."""
    from kvwatch.notify.testalert import send_test_alert

    loaded = load(args)
    if loaded is None:
        return 1
    notifiers = [notifier for _, notifier in loaded[1].notifiers]
    if not notifiers:
        print("kvwatch: no [[notifier]] configured", file=sys.stderr)
        return 1
    results = send_test_alert(notifiers)
    for name, outcome in results:
        print(f"{name}: {outcome.describe()}")
    return 0 if all(outcome.kind == "ok" for _, outcome in results) else 1
