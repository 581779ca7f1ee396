"""`kvwatch run`: the daemon, until SIGTERM (or the end of --stdin)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kvwatch import DEFAULT_PORT
from kvwatch.cli.config import load
from kvwatch.cli.options import LOG_FORMATS, LOG_LEVELS, command, listen_address
from kvwatch.engines import choices

#: `kvwatch run`'s exit status when it refuses its config (sysexits' EX_CONFIG): the shipped unit's
#: RestartPreventExitStatus= stops the restart loop on it, since a restart cannot fix the file.
CONFIG_ERROR = 78


def add(sub: Any) -> None:
    """`kvwatch run`: its options."""
    run = command(
        sub,
        "run",
        "follow the configured sources; serve /metrics; send alerts",
        "Follow the configured sources, serve /metrics, send alerts: until SIGTERM (or the end of --stdin).",
        """examples:
  kvwatch run --config /etc/kvwatch/kvwatch.toml
  kvwatch run --config kvwatch.toml --web.listen-address :7433 --web.config.file web-config.yml
  kvwatch run --config kvwatch.toml --web.listen-address 127.0.0.1:7433 --web.listen-address [::1]:7433
  kvwatch run --config kvwatch.toml --listen 127.0.0.1:0 --sync-interval 1 --log.level debug
  docker logs -f vllm 2>&1 | kvwatch run --stdin --engine vllm --listen 127.0.0.1:7433

exit status:
  0    stopped by SIGTERM, or the end of --stdin
  1    could not start (state_dir not writable, port in use, ...)
  2    a bad argument
  78   the config was refused (EX_CONFIG; the unit does not restart on it)
""",
    )
    run.add_argument(
        "--config",
        metavar="PATH",
        help="the config file, TOML (see kvwatch.example.toml) (required unless --stdin)",
    )
    run.add_argument(
        "--stdin",
        action="store_true",
        help="read one source from standard input, without a config; no read position is saved "
        "(default: off)",
    )
    run.add_argument(
        "--engine",
        default="auto",
        help=f"with --stdin: the input's engine, one of {', '.join(choices())} (default: auto)",
    )
    run.add_argument(
        "--web.listen-address",
        "--listen",
        dest="listen",
        action="append",
        type=listen_address,
        metavar="ADDRESS:PORT",
        help="where /metrics is served, instead of [server]; repeat it for several; :PORT is every "
        "interface (IPv6 and IPv4), [::1]:PORT an IPv6 address; port 0 picks a free one "
        f"(default: the config's [server], else 127.0.0.1:{DEFAULT_PORT})",
    )
    run.add_argument(
        "--web.config.file",
        dest="web_config",
        metavar="PATH",
        help="the web config file (TLS, basic auth), instead of server.web_config "
        "(default: the config's server.web_config, else none)",
    )
    run.add_argument(
        "--log.level",
        dest="log_level",
        choices=LOG_LEVELS,
        help="the least severe level logged (default: the config's [log] level, else info)",
    )
    run.add_argument(
        "--log.format",
        dest="log_format",
        choices=LOG_FORMATS,
        help="the log lines' format (default: the config's [log] format, else the journal's priority "
        "prefix under systemd, else time, level, logger and message)",
    )
    run.add_argument(
        "--sync-interval",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how often read positions are saved, in SECONDS (default: 5)",
    )
    run.set_defaults(handler=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    """Run the daemon until SIGTERM (or the end of stdin)."""
    if args.stdin == bool(args.config):
        print("kvwatch run: give --config PATH or --stdin (not both)", file=sys.stderr)
        return 2
    from pathlib import Path

    from kvwatch.config import ConfigError
    from kvwatch.daemon import Daemon, Options, setup_logging

    setup_logging(args.log_level or "info", args.log_format)  # (until the config says otherwise)
    loaded = load(args)
    if loaded is None:
        return CONFIG_ERROR
    # `[log]`, unless `--log.level` / `--log.format` were given (their defaults are None).
    logs = loaded[0].log
    setup_logging(args.log_level or logs.level, args.log_format or logs.format)
    options = Options(
        listen=tuple(args.listen or ()),
        web_config=Path(args.web_config) if args.web_config else None,
        sync_interval=args.sync_interval,
        persist=not args.stdin,
    )
    try:
        daemon = Daemon(loaded[0], loaded[1], options)
    except (OSError, ConfigError) as err:
        print(f"kvwatch: cannot start: {err}", file=sys.stderr)
        return CONFIG_ERROR if isinstance(err, ConfigError) else 1
    return daemon.run()
