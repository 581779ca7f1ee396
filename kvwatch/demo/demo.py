"""`kvwatch demo`: the real daemon tailing the bundled samples, written at an accelerated pace.

No config and no GPU needed. The demo makes a working directory (a temporary one unless `--keep DIR`)
with a config, `logs/` and `state/`; starts a small webhook receiver on 127.0.0.1 that prints every
alert it gets; starts `kvwatch run` (a subprocess of this Python) on that config, whose webhook
notifier posts to the receiver (and, when set, to `$KVWATCH_DEMO_WEBHOOK_URL` and a Slack webhook at
`$KVWATCH_DEMO_SLACK_URL`; their URLs are secrets: written to files only this user can read, removed on
exit, never printed); then writes the samples into `logs/` at `speed` times their pace with their
times rewritten to now (demo.feed). SIGINT, SIGTERM or SIGHUP stop it all: the daemon gets SIGTERM and
drains, the working directory is removed unless kept, and the exit status is 0.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

from kvwatch.demo.feed import SAMPLES, Sample, Writer, plan, sample_dir

DEFAULT_SPEED = 20.0
DEFAULT_LISTEN = ("127.0.0.1", 7433)
#: Environment variables naming extra notifiers: (variable, notifier name, notifier type).
WEBHOOK_ENV = (
    ("KVWATCH_DEMO_WEBHOOK_URL", "demo-webhook", "webhook"),
    ("KVWATCH_DEMO_SLACK_URL", "demo-slack", "slack"),
)
#: Variables a supervisor may have set for the demo itself; the daemon it starts must not act on them.
NOT_INHERITED = ("JOURNAL_STREAM", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "CREDENTIALS_DIRECTORY")
START_TIMEOUT = 20.0
STOP_TIMEOUT = 20.0
TICK = 10.0  # the daemon's detector tick: an alert shows up to this long after its condition holds
_PROBLEM = re.compile(r" (WARNING|ERROR|CRITICAL) ")
_ALERT_LOG = re.compile(r" WARNING kvwatch[\w.]*: alert (firing|resolved) ")  # printed by the receiver
_LISTENING = re.compile(r"listening on (https?://\S+?)/?$", re.MULTILINE)


@dataclass
class Console:
    """Everything the demo prints goes through here (stdout, flushed, one writer at a time)."""

    start: float = field(default_factory=time.time)
    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: set[tuple[str, str]] = field(default_factory=set)

    def say(self, text: str = "") -> None:
        """Print `text` now."""
        with self.lock:
            print(text, flush=True)

    def alert(self, body: Any) -> None:
        """Print one alert as the webhook notifier posted it (the `replay --format json` object)."""
        if not isinstance(body, dict):
            return
        raw = body.get("labels")
        labels: dict[str, Any] = raw if isinstance(raw, dict) else {}
        source = str(labels.get("source", "?"))
        others = " ".join(f"{k}={v}" for k, v in sorted(labels.items()) if k != "source")
        state, name = str(body.get("state", "?")), str(body.get("alert", "?"))
        width = max(60, min(shutil.get_terminal_size((100, 24)).columns, 120)) - 1
        head = f"[+{time.time() - self.start:3.0f} s] ALERT {state} {name}  source={source}"
        lines = [head + (f"  {others}" if others else "") + f"  ({body.get('severity', '?')})"]
        texts = [str(body.get("summary", ""))]
        if state == "firing" and body.get("fix"):
            texts.append(f"fix: {body['fix']}")
        for text in texts:
            lines.append(textwrap.fill(text, width, initial_indent="    ", subsequent_indent="      "))
        with self.lock:
            self.seen.add((name, source))
            print("\n".join(lines), flush=True)


class AlertReceiver:
    """An HTTP server on 127.0.0.1 that hands every JSON body POSTed to it to `on_alert`."""

    def __init__(self, on_alert: Callable[[Any], None]) -> None:
        """Start serving on a free port."""
        self.on_alert = on_alert
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="demo-receiver", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        """Where the daemon's webhook notifier posts."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/alerts"

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    self.send_response(400)
                    self.end_headers()
                    return
                for alert in body if isinstance(body, list) else [body]:
                    receiver.on_alert(alert)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _toml(value: str | Path) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(str(value))


def write_config(workdir: Path, receiver_url: str, year: int, env: dict[str, str]) -> tuple[Path, list[str]]:
    """The daemon's config in `workdir`; also the names of the notifiers taken from `env`."""
    parts = [f"state_dir = {_toml(workdir / 'state')}\n"]
    for sample in SAMPLES:
        parts.append(
            f'\n[[source]]\nname = {_toml(sample.name)}\nengine = {_toml(sample.engine)}\ntype = "file"\n'
            f'path = {_toml(workdir / "logs" / f"{sample.name}.log")}\nstart_at = "beginning"\n'
            f'year = {year}\ntz = "UTC"\n'
        )
    parts.append(f'\n[[notifier]]\nname = "demo-console"\ntype = "webhook"\nurl = {_toml(receiver_url)}\n')
    extra: list[str] = []
    for variable, name, kind in WEBHOOK_ENV:
        url = env.get(variable, "").strip()
        if not url:
            continue
        if not url.startswith(("http://", "https://")):
            print(f"kvwatch demo: ${variable} is not an http:// or https:// URL; not used", file=sys.stderr)
            continue
        secrets = workdir / "secrets"
        secrets.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(secrets / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(url + "\n")
        table = f"name = {_toml(name)}\ntype = {_toml(kind)}\nurl_file = {_toml(secrets / name)}\n"
        parts.append(f"\n[[notifier]]\n{table}")
        extra.append(variable)
    config = workdir / "kvwatch.toml"
    config.write_text("".join(parts), encoding="utf-8")
    return config, extra


def _expected(speed: float) -> list[tuple[float, str, Sample, str]]:
    """(demo seconds, alert, sample, what) of every alert the samples fire, soonest first."""
    rows = [(s.delay(e.at, speed), e.alert, s, e.what) for s in SAMPLES for e in s.expected]
    return sorted(rows, key=lambda row: row[0])


class Demo:
    """One run of the demo; `run()` returns the exit status."""

    def __init__(self, speed: float, listen: tuple[str, int], keep: Path | None) -> None:
        """Settings from the command line."""
        self.speed, self.listen, self.keep = speed, listen, keep
        self.stop = threading.Event()  # the feed's: set by the teardown
        self.signalled = False  # set by a signal: a flag only, no lock (see kvwatch.daemon.wakeup)
        self.console = Console()
        self.daemon: subprocess.Popen[bytes] | None = None

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """SIGINT/SIGTERM's handler: a flag only (the teardown polls it)."""
        self.signalled = True

    def _pause(self, seconds: float) -> bool:
        """Sleep `seconds` (less if the teardown began); whether to stop."""
        return self.stop.wait(seconds) or self.signalled

    def _workdir(self) -> Path | None:
        if self.keep is None:
            return Path(tempfile.mkdtemp(prefix="kvwatch-demo-"))
        if self.keep.exists() and (not self.keep.is_dir() or any(self.keep.iterdir())):
            print(f"kvwatch demo: --keep {self.keep}: not a new or empty directory", file=sys.stderr)
            return None
        self.keep.mkdir(parents=True, exist_ok=True)
        return self.keep.resolve()

    def run(self) -> int:
        """Set up, run until a signal, tear down."""
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self.on_signal)
        workdir = self._workdir()
        if workdir is None:
            return 2
        receiver = AlertReceiver(self.console.alert)
        status = 1
        try:
            status = self._run(workdir, receiver)
        finally:
            if not self._teardown(workdir, receiver):
                status = 1
        return status

    def _run(self, workdir: Path, receiver: AlertReceiver) -> int:
        """Start the daemon and the feed; wait for a signal; the exit status."""
        (workdir / "logs").mkdir()
        for sample in SAMPLES:
            (workdir / "logs" / f"{sample.name}.log").touch()
        year = datetime.now(timezone.utc).year
        config, extra = write_config(workdir, receiver.url, year, dict(os.environ))
        url = self._start_daemon(workdir, config)
        if url is None or self.daemon is None:
            return 0 if self.signalled else 1
        start = time.time()
        self.console.start = start
        writer = Writer(plan(SAMPLES, start, self.speed, sample_dir()), workdir / "logs", start, self.stop)
        self._banner(url, workdir, extra)
        writer.thread.start()
        return self._watch(self.daemon, writer, workdir / "kvwatch.log")

    def _banner(self, url: str, workdir: Path, extra: list[str]) -> None:
        """Tell the user where to look and what to expect."""
        metrics = url.rstrip("/") + "/metrics"
        where = "kept" if self.keep is not None else "removed on exit; --keep DIR keeps them"
        say, speed = self.console.say, self.speed
        say(
            f"kvwatch demo: the real daemon tails {len(SAMPLES)} sample logs written at {speed:g}x their pace"
        )
        say(f"  logs, config, state  {workdir}  ({where})")
        say(f"  metrics              {metrics}")
        say(f"  landing page         {url.rstrip('/')}/  (each source's state)")
        say(f"  try                  curl -s {metrics} | grep -E '^kvwatch_(alert_firing|lines_total)'")
        say("")
        say(
            f"Alerts to expect (each up to ~{TICK:.0f} s after its time, at the daemon's next detector tick):"
        )
        for delay, alert, sample, what in _expected(speed):
            say(f"  ~{delay:4.0f} s  {alert:<20} {sample.name:<30} {what}")
        healthy = [s.name for s in SAMPLES if not s.expected]
        say(f"Healthy sources, no alert expected: {', '.join(healthy)}")
        sent = " and ".join(f"${v}" for v in extra)
        say(
            "Alerts print below as the daemon's webhook notifier posts them"
            + (f" (also to {sent})." if sent else ".")
        )
        say("Ctrl-C stops everything.")
        say("")

    def _start_daemon(self, workdir: Path, config: Path) -> str | None:
        """Start `kvwatch run` on the config (stderr to `kvwatch.log`); its URL once it listens."""
        host, port = self.listen
        listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
        argv = [sys.executable, "-m", "kvwatch", "run", "--config", str(config), "--listen", listen]
        log = workdir / "kvwatch.log"
        with log.open("ab") as err:
            daemon = subprocess.Popen(argv, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stderr=err)
        self.daemon = daemon
        deadline = time.monotonic() + START_TIMEOUT
        while not self._pause(0.05):
            found = _LISTENING.search(log.read_text(encoding="utf-8", errors="replace"))
            if found:
                return found.group(1) + "/"
            if daemon.poll() is not None or time.monotonic() > deadline:
                text = log.read_text(encoding="utf-8", errors="replace").strip()
                print(f"kvwatch demo: the daemon did not start:\n{text}", file=sys.stderr)
                if "in use" in text:
                    print("kvwatch demo: pick another port, e.g. --listen 127.0.0.1:0", file=sys.stderr)
                break
        return None

    def _watch(self, daemon: subprocess.Popen[bytes], writer: Writer, log: Path) -> int:
        """Until a signal: echo the daemon's problems, say when the feed is done. The exit status."""
        offset, announced, all_seen = 0, False, False
        expected = {(alert, sample.name) for _, alert, sample, _ in _expected(self.speed)}
        while not self._pause(0.25):
            offset = self._echo_problems(log, offset)
            if daemon.poll() is not None:
                self._echo_problems(log, offset)
                print(f"kvwatch demo: the daemon exited with status {daemon.returncode}", file=sys.stderr)
                return 1
            with self.console.lock:
                complete = expected <= self.console.seen
            if complete and not all_seen:
                all_seen = True
                self.console.say(
                    f"All {len(expected)} expected alerts fired. The feed goes on; Ctrl-C stops."
                )
            if writer.done.is_set() and not announced:
                announced = True
                if writer.error is not None:
                    print(f"kvwatch demo: cannot write the logs: {writer.error}", file=sys.stderr)
                    return 1
                self.console.say("Every sample is written; /metrics stays up until Ctrl-C.")
        return 0

    def _echo_problems(self, log: Path, offset: int) -> int:
        """Print the daemon's new WARNING/ERROR lines (alerts excepted: they print nicely); new offset."""
        try:
            with log.open("rb") as handle:
                handle.seek(offset)
                data = handle.read()
        except OSError:
            return offset
        complete = data[: data.rfind(b"\n") + 1]
        for line in complete.decode("utf-8", "replace").splitlines():
            if _PROBLEM.search(line) and not _ALERT_LOG.search(line):
                print(f"kvwatch demo: daemon says: {line}", file=sys.stderr, flush=True)
        return offset + len(complete)

    def _teardown(self, workdir: Path, receiver: AlertReceiver) -> bool:
        """Stop the feed and the daemon (SIGTERM), close the receiver, remove the directory; clean?"""
        self.stop.set()
        clean = True
        daemon = self.daemon
        if daemon is not None:
            running = daemon.poll() is None  # else it already exited, and that was reported
            if running:
                daemon.send_signal(signal.SIGTERM)
            try:
                code = daemon.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                daemon.kill()
                code = daemon.wait()
            clean = code == 0
            if running and not clean:
                print(f"kvwatch demo: the daemon stopped with status {code}", file=sys.stderr)
        receiver.close()
        shutil.rmtree(workdir / "secrets", ignore_errors=True)
        if self.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
            self.console.say("kvwatch demo: stopped; temporary files removed.")
        else:
            self.console.say(f"kvwatch demo: stopped; logs, config and state kept in {workdir}")
        return clean


def run_demo(
    speed: float = DEFAULT_SPEED, listen: tuple[str, int] = DEFAULT_LISTEN, keep: str | None = None
) -> int:
    """`kvwatch demo`: returns the exit status."""
    return Demo(speed, listen, Path(keep) if keep else None).run()
