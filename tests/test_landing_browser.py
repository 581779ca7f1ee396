"""End to end in Debian's headless chromium: a real daemon's `/` with the write_only_offload alert firing."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urljoin

import pytest
from daemon_helpers import Kvwatch, file_source, shifted_sample, wait_until, write_config
from notify_helpers import SECRET_PATH, Receiver

#: Headless, no sandbox (tests run as root), and nothing that would reach beyond 127.0.0.1.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_dom(url: str, profile: Path) -> str:
    """The DOM chromium rendered for `url` (`--dump-dom`)."""
    chromium = shutil.which("chromium")
    assert chromium is not None, "Debian's chromium is a test dependency"
    argv = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert 0 == done.returncode and "</html>" in done.stdout, done.stderr[-2000:]
    return done.stdout


def visible_text(dom: str) -> str:
    """What a person reads: the body without tags, entities decoded, white space collapsed."""
    body = dom.split("<body>", 1)[1]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def stamp(at: datetime) -> str:
    """A time as the page prints it."""
    return at.strftime("%Y-%m-%d %H:%M:%SZ")


@pytest.mark.slow
def test_the_landing_page_shows_the_source_and_the_firing_alert_as_a_person_reads_it(tmp_path: Path) -> None:
    """Source row with its last line's time and counts; the alert's name, cause, evidence, fix; links; the
    notifier delivering, named by its receiver's scheme and host only."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    last_line = now - timedelta(seconds=60)
    log = tmp_path / "vllm.log"
    shifted_sample(log, last_line)
    with Receiver() as hook:
        notifier = f'[[notifier]]\nname = "hook"\ntype = "webhook"\nurl = "{hook.url}"\n'
        cfg = write_config(tmp_path / "kv.toml", file_source("vllm", log) + f"year = {now.year}\n" + notifier)
        daemon = Kvwatch(["--config", str(cfg)], tmp_path / "run.err")
        wait_until(hook.accepted, 30.0, "the alert delivered")
        wait_until(lambda: daemon.value("kvwatch_lines_recognized_total", {"source": "vllm"}) == 136,
                   30.0, "the whole sample processed")  # fmt: skip
        sent = hook.accepted()[0]
        dom = chromium_dom(daemon.url + "/", tmp_path / "chromium")
        seen = time.time()
        lines = daemon.lines("vllm")
        metrics = daemon.get("/metrics")[2]
    page = visible_text(dom)

    row = re.search(rf"vllm file vllm up {re.escape(stamp(last_line))} \((\d+) s ago\) ([\d,]+) 136 0", page)
    assert row is not None, page
    assert 60 <= int(row[1]) <= seen - last_line.timestamp() + 1
    assert f"{lines:,.0f}" == row[2]
    assert "1 alert firing · 1/1 sources up" in page

    # The page shows the alert as the AlertBook holds it now (each tick refreshes its summary and
    # evidence; cause and fix are what the webhook got): the book is saved to the state dir at stop.
    assert 0 == daemon.stop()
    book = json.loads((tmp_path / "state" / "alerts.json").read_text())["book"]
    alert = book["write_only_offload{engine=0,source=vllm}"]["alert"]
    since = stamp(datetime.fromtimestamp(alert["at"], timezone.utc))
    assert f"warning write_only_offload engine=0, source=vllm · firing since {since} (" in page
    assert since == stamp(datetime.fromisoformat(sent["at"].replace("Z", "+00:00")))
    evidence = alert["evidence"]
    for words in (
        alert["summary"],
        f"Cause {sent['cause']}",
        f"stored_bytes_total {evidence['stored_bytes_total']:,} B (",
        f"lookups_window {evidence['lookups_window']:,}",
        f"busy_intervals {evidence['busy_intervals']}",
        "loaded_bytes_total 0 B",
        f"connector {evidence['connector']}",
        f"Fix {sent['fix']}",
    ):
        assert words in page, words
    assert "no alert firing" not in page

    assert "/metrics" in page and "/healthz" in page
    href = re.search(r'<a href="([^"]+)">/metrics</a>', dom)
    assert href is not None, dom
    assert daemon.url + "/metrics" == urljoin(daemon.url + "/", href[1])
    assert 'kvwatch_alert_firing{alert="write_only_offload"' in metrics
    # The webhook's URL is a credential: the page names its receiver by scheme and host only, in the
    # notifiers table, as the logs do.
    assert SECRET_PATH not in dom and 1 == dom.count(hook.base)
    assert re.search(rf"hook {re.escape(hook.base)} delivering 0 1 0", page), page
