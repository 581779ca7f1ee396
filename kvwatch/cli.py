"""The command line: replay, run, demo, check-config, test-alert, hash-password, init, probe; `main(argv)`."""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import json
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from types import FrameType
from typing import Any

from kvwatch import DEFAULT_PORT, __version__
from kvwatch.engines import choices, displays, names
from kvwatch.parsers.base import DEFAULT_START, ParserSettings
from kvwatch.parsers.clock import iso, parse_rfc3339, zone

FORMATS = ("text", "prom", "json", "golden")
#: `kvwatch replay`'s exit status when a FILE had no line any engine tried recognised.
UNRECOGNISED = 3
#: `kvwatch replay`'s exit status when a compressed FILE was cut short or corrupt (its lines before the
#: damage replayed); it wins over UNRECOGNISED, which a file damaged before its first line would be too.
DAMAGED = 4
#: `--log.level` and `--log.format` (kvwatch.daemon.log's LEVELS and FORMATS; not imported: replay
#: would load the daemon's modules).
LOG_LEVELS = ("debug", "info", "warn", "error")
LOG_FORMATS = ("logfmt", "json")

#: `kvwatch run`'s exit status when it refuses its config (sysexits' EX_CONFIG): the shipped unit's
#: RestartPreventExitStatus= stops the restart loop on it, since a restart cannot fix the file.
CONFIG_ERROR = 78


def _year(text: str) -> int:
    if not text.isdigit() or not 1970 <= int(text) <= 9999:
        raise argparse.ArgumentTypeError(f"not a year: {text!r}")
    return int(text)


def _tz(text: str) -> str:
    try:
        zone(text)
    except (KeyError, ValueError) as err:
        raise argparse.ArgumentTypeError(f"unknown time zone {text!r}") from err
    return text


def _jobs(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"not a number of jobs from 1 to 64: {text!r}")
    return int(text)


#: The last second of year 9999: --start beyond it (or not finite) is refused, as --year is.
_LAST_SECOND = 253402300799.0


def _start(text: str) -> float:
    try:
        stamp: float | None = float(text)
    except ValueError:
        stamp = parse_rfc3339(text)
    if stamp is None:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time or epoch seconds: {text!r}")
    if not 0.0 <= stamp <= _LAST_SECOND:  # (False for nan too)
        raise argparse.ArgumentTypeError(f"not a time from 1970 to 9999: {text!r}")
    return stamp


#: The help's examples and replay's exit statuses (`kvwatch --help`, `kvwatch replay --help`).
_EXAMPLES = """examples:
  kvwatch demo                                    # the daemon on bundled samples: no config, no GPU
  kvwatch replay --format prom vllm.log           # a log's metrics, once
  kvwatch check-config /etc/kvwatch/kvwatch.toml
  kvwatch run --config /etc/kvwatch/kvwatch.toml
  kvwatch replay --help                           # each command's options
"""
_REPLAY_EXAMPLES = """examples:
  kvwatch replay vllm.log                         # a summary per source, for a human
  kvwatch replay --format prom --year 2025 vllm.log.2.gz vllm.log.1 vllm.log
  kvwatch replay --engine llamacpp --start 2026-03-01T09:00:00Z llama-server.log
  kvwatch replay --format golden --year 2026 samples/vllm-docker.log
  zcat old.log.gz | kvwatch replay --source gpu0 -

exit status:
  0    every FILE had a line that an engine recognised
  1    standard output was closed before the end (`| head`)
  2    a bad argument, or a FILE missing or unreadable (nothing on stdout)
  3    some FILE had no line that any engine tried recognised: each such FILE is
       said on stderr, the others are reported as usual
  4    a compressed FILE was cut short or is corrupt: the complete lines before the
       damage are replayed, and stderr names the file and the byte where it stops
  130  interrupted (Ctrl-C); 143: terminated (SIGTERM)
"""


def _command(sub: Any, name: str, summary: str, purpose: str, examples: str) -> argparse.ArgumentParser:
    """A subcommand: its line in `kvwatch --help`, and its own help's purpose and examples."""
    made: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=purpose,
        epilog=examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return made


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="kvwatch",
        description=f"Watch logs ({', '.join(displays())}) for prefix-cache and KV-offload failures: "
        "Prometheus metrics and alerts.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kvwatch {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = _command(
        sub,
        "replay",
        "replay log files and print the metrics (and alerts)",
        "Replay log files on their own time; print their metrics and alerts (the golden-test harness too).",
        _REPLAY_EXAMPLES,
    )
    rep.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="a log file: plain, docker json-file or gzip; `-`: standard input; a log's rotated files are "
        "read in turn, oldest first (required, one or more)",
    )
    rep.add_argument(
        "--engine",
        choices=choices(),
        default="auto",
        help="the engine that wrote the files; auto: told by each file's first 64 KiB (default: auto)",
    )
    rep.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: a summary per source; prom: the Prometheus exposition; json: metrics and alerts; "
        "golden: the sorted samples, then the alert transitions (default: text)",
    )
    rep.add_argument(
        "--year",
        type=_year,
        metavar="YEAR",
        help="YEAR of year-less timestamps (vLLM's) (default: a container log's own timestamps' year, "
        "else this year)",
    )
    rep.add_argument(
        "--tz",
        type=_tz,
        default="UTC",
        metavar="ZONE",
        help="time zone of the logs' timestamps that carry none, e.g. Europe/Berlin (default: UTC)",
    )
    rep.add_argument(
        "--source",
        metavar="NAME",
        help="source label for every FILE (default: each file's name, or its container's)",
    )
    rep.add_argument(
        "--start",
        type=_start,
        default=DEFAULT_START,
        metavar="TIME",
        help="anchor of relative timestamps (llama.cpp's), RFC 3339 or epoch SECONDS "
        f"(default: {iso(DEFAULT_START)})",
    )
    rep.add_argument(
        "--jobs",
        type=_jobs,
        metavar="PROCESSES",
        help="at most PROCESSES children (1 to 64) read big files at once (default: one per core, and "
        "at least 4); a big dense log (llama.cpp -lv 4, Ollama, LM Studio) is parsed in segments by at "
        "most PROCESSES workers (default: one per core, and at most 4); 1: one child, no segments",
    )
    _daemon_commands(sub)
    return parser


def _listen(text: str) -> tuple[str, int]:
    """ADDRESS:PORT, [IPV6]:PORT, or :PORT (address "": every interface, as Go's net.Listen)."""
    host, sep, port = text.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if not sep or not port.isdigit() or int(port) > 65535 or (":" in host and not bracketed):
        raise argparse.ArgumentTypeError(
            f"expected ADDRESS:PORT, [IPV6]:PORT or :PORT (port 0 picks a free one): {text!r}"
        )
    return host[1:-1] if bracketed else host, int(port)


def _speed(text: str) -> float:
    try:
        speed = float(text)
    except ValueError:
        speed = 0.0
    if not 0.01 <= speed <= 10000:
        raise argparse.ArgumentTypeError(f"expected a factor between 0.01 and 10000: {text!r}")
    return speed


def _daemon_commands(sub: Any) -> None:
    """The subcommands of the live daemon and its config."""
    run = _command(
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
        type=_listen,
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
    demo = _command(
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
        type=_speed,
        default=20.0,
        metavar="FACTOR",
        help="times the logs' own pace, a FACTOR from 0.01 to 10000 (default: 20)",
    )
    demo.add_argument(
        "--listen",
        type=_listen,
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
    check = _command(
        sub,
        "check-config",
        "validate a config file and print a summary",
        "Validate a config file and print a summary of what it enables; or each problem, and exit 1.",
        """examples:
  kvwatch check-config /etc/kvwatch/kvwatch.toml
  kvwatch check-config kvwatch.example.toml
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
    test = _command(
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
    _command(
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
    init = _command(
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
    _probe_command(sub)
    init.add_argument("directory", metavar="DIR", help="where to write them, created if missing (required)")
    init.add_argument(
        "--force",
        action="store_true",
        help="overwrite files that exist already; without it, refuse to (default: off)",
    )


def _prefix_tokens(text: str) -> int:
    if not text.isdigit() or not 1024 <= int(text) <= 131072:
        raise argparse.ArgumentTypeError(f"not a number of tokens from 1024 to 131072: {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0.1 <= seconds <= 3600:
        raise argparse.ArgumentTypeError(f"expected SECONDS from 0.1 to 3600: {text!r}")
    return seconds


def _probe_command(sub: Any) -> None:
    """`kvwatch probe`: its options."""
    probe = _command(
        sub,
        "probe",
        "send a repeated long prefix to an endpoint and tell whether it comes back cached",
        "Send a synthetic conversation twice to an OpenAI- or Anthropic-compatible endpoint and tell whether "
        "its long prefix was served from cache.",
        """examples:
  kvwatch probe http://127.0.0.1:8080/v1
  kvwatch probe https://gateway.example/v1/messages --model claude-sonnet --api-key-env GATEWAY_KEY
  kvwatch probe http://vllm:8000/v1 --model Qwen/Qwen3-8B --no-attribution-header --format json
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
        type=_prefix_tokens,
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
        "--format", choices=("text", "json"), default="text", help="text, or json for scripts (default: text)"
    )
    probe.add_argument(
        "--timeout",
        type=_seconds,
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
        help="with --probe: run a configured [[probe]] once, as the daemon does (default: none)",
    )
    probe.add_argument(
        "--probe",
        metavar="NAME",
        help="the [[probe]] entry of --config to run (default: the only one)",
    )


def _load(args: argparse.Namespace, unit: Any = None) -> Any:
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


def cmd_run(args: argparse.Namespace) -> int:
    """Run the daemon until SIGTERM (or the end of stdin)."""
    if args.stdin == bool(args.config):
        print("kvwatch run: give --config PATH or --stdin (not both)", file=sys.stderr)
        return 2
    from pathlib import Path

    from kvwatch.config import ConfigError
    from kvwatch.daemon import Daemon, Options, setup_logging

    setup_logging(args.log_level or "info", args.log_format)  # (until the config says otherwise)
    loaded = _load(args)
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


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the demo until Ctrl-C."""
    from kvwatch.demo import run_demo

    return run_demo(args.speed, args.listen, args.keep)


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
    loaded = _load(args, unit)
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
    sys.stdout.write(summarize(config))
    print(f"service: {unit.where} runs kvwatch as {unit.who()}")
    for warning in silence_warnings(config, time.time()):  # (in force at the time of the check)
        print(f"kvwatch: warning: {warning}", file=sys.stderr)
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

    loaded = _load(args)
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
    if args.config:
        spec = _configured_probe(args)
        if spec is None:
            return 2
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
    loaded = _load(args)
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


def _unreadable(paths: Sequence[str]) -> str | None:
    for path in paths:
        try:
            with open(path, "rb") as handle:
                handle.read(1)
        except OSError as err:
            return f"kvwatch: cannot read {path}: {err.strerror or err}"
    return None


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay files and print the chosen format on stdout; humans' notes go to stderr."""
    from kvwatch.sources.wholefile import spooled

    with tempfile.TemporaryDirectory(prefix="kvwatch-replay-") as spool:
        try:
            paths = spooled(args.files, spool)
        except OSError as err:
            print(f"kvwatch: cannot read {err.filename}: {err.strerror or err}", file=sys.stderr)
            return 2
        return _replay_files(args, paths, dict(zip(paths, args.files, strict=True)))


def _open_files_for(files: int) -> None:
    """Raise the soft limit on open files towards the hard one when `files` may need more: a replay
    merges its files by time, so each file bigger than a read stays open until its last event is
    taken (a smaller one is closed after its read); the soft limit is often 1024."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = files + 64  # (and the pipes, sockets and modules of the rest)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))


def _replay_files(args: argparse.Namespace, paths: list[str], named: dict[str, str]) -> int:
    """cmd_replay of the files at `paths` (streams copied to files already), named as given."""
    from kvwatch.replay import plan, replay

    problem = _unreadable(paths)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    _open_files_for(len(paths))
    now_year = datetime.now(timezone.utc).year
    settings = ParserSettings(year=args.year, now_year=now_year, tz=args.tz, start=args.start)
    try:
        report = args.format == "text"
        # A replay is the process's last work: what is loaded by now (the modules) lives to its exit,
        # whose collections then need not walk it (~20M instructions, ~10 ms, less per replay).
        gc.freeze()
        result = replay(plan(paths, args.engine, args.source), settings, jobs=args.jobs, report=report)
    except OSError as err:
        hint = ""
        if err.errno == errno.EMFILE:
            hint = f" (the {len(paths)} files are read at once, merged by time: raise `ulimit -n`)"
        print(f"kvwatch: cannot read {err.filename}: {err.strerror or err}{hint}", file=sys.stderr)
        return 2
    # (imported after the replay, which has a big file read while the pipeline's modules load)
    from kvwatch.notify.payload import alert_to_json
    from kvwatch.report.exposition import golden_lines, prom_text, samples
    from kvwatch.report.text import render

    damaged = dict(note.partition(": ")[::2] for note in result.damaged)  # ("path: what was wrong")
    for path in result.unrecognised:
        if result.lines[path] or path not in damaged:  # (damaged before its first line: said below)
            print(_unrecognised(named[path], result.lines[path], args.engine), file=sys.stderr)
    for path, damage in damaged.items():
        print(f"kvwatch: {named.get(path, path)}: {damage}", file=sys.stderr)
    if args.format == "prom":
        sys.stdout.write(prom_text(result.registry))
    elif args.format == "json":
        body = {
            "metrics": samples(result.registry),
            "alerts": [alert_to_json(a) for a in result.alerts],
        }
        sys.stdout.write(json.dumps(body, indent=1, sort_keys=True) + "\n")
    elif args.format == "golden":
        sys.stdout.write("\n".join(golden_lines(result.registry, result.alerts)) + "\n")
    else:
        sys.stdout.write(render(result.summary, result.alerts))
    return DAMAGED if damaged else UNRECOGNISED if result.unrecognised else 0


def _unrecognised(name: str, lines: int, engine: str) -> str:
    """What replay says of a file of which no line was recognised (`engine`: as --engine gave it)."""
    count = "1 line" if lines == 1 else f"{lines} lines"
    if engine == "auto":
        return f"kvwatch: no known engine recognised the {count} of {name} (tried: {', '.join(names())})"
    return f"kvwatch: no line of {name} was recognised as {engine} output ({count})"


class TerminatedError(BaseException):
    """SIGTERM during a replay (a BaseException, as KeyboardInterrupt: no `except Exception` keeps it)."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise TerminatedError


@contextlib.contextmanager
def _sigterm_ends_it() -> Iterator[None]:
    """SIGTERM raises TerminatedError meanwhile, as Ctrl-C raises KeyboardInterrupt: the replay's children
    are stopped on the way out (by default the process would end at once and leave them running)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "replay":
            try:
                with _sigterm_ends_it():
                    return cmd_replay(args)
            except KeyboardInterrupt:  # Ctrl-C on a long replay: no traceback, the shell's status
                print("kvwatch: interrupted", file=sys.stderr)
                return 130
            except TerminatedError:
                print("kvwatch: terminated", file=sys.stderr)
                return 128 + signal.SIGTERM
        commands = {
            "run": cmd_run,
            "demo": cmd_demo,
            "check-config": cmd_check_config,
            "test-alert": cmd_test_alert,
            "hash-password": cmd_hash_password,
            "init": cmd_init,
            "probe": cmd_probe,
        }
        return commands[args.command](args)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
