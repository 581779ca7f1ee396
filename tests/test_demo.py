"""`kvwatch demo`: the real daemon on the bundled samples, its console, its webhook, Ctrl-C, packaging."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

import pytest
from daemon_helpers import ROOT, wait_until
from notify_helpers import Receiver

from kvwatch.demo.feed import SAMPLES, Sample, lines_of, plan, sample_dir, schedule
from kvwatch.engines import ENGINES, layers_of

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

SPEED = "100"  # every expected alert by the daemon's second detector tick (~20 s)
EXPECTED = {
    ("write_only_offload", "vllm-write-only-offload"),
    ("write_only_offload", "lmcache-0.3.12-write-only"),
    ("pinned_cache_length", "llamacpp-varying-header-chat"),
    ("prefix_reuse_broken", "llamacpp-varying-header-chat"),
    ("pinned_cache_length", "usage-newapi"),
    ("hit_rate_gap", "usage-newapi"),
    ("hicache_storage_unused", "sglang-v0-5-23-hicache-unused"),
    ("pinned_cache_length", "ollama-mlx-stuck"),
}


class Demo:
    """A running `python -m kvwatch demo`; its stdout collected line by line."""

    def __init__(self, tmp: Path, env: Mapping[str, str] | None = None) -> None:
        """Start it on a free port; stderr goes to a file."""
        clean = {k: v for k, v in os.environ.items() if not k.startswith("KVWATCH_DEMO_")}
        self.err_path = tmp / "demo.err"
        self.err = self.err_path.open("wb")
        argv = [sys.executable, "-m", "kvwatch", "demo", "--listen", "127.0.0.1:0", "--speed", SPEED]
        env = {**clean, **(env or {})}
        self.proc = subprocess.Popen(argv, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=self.err)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self.collect, daemon=True)
        self.reader.start()

    def collect(self) -> None:
        """Collect its stdout line by line until it closes."""
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(raw.decode("utf-8", "replace"))

    @property
    def text(self) -> str:
        """Everything it printed so far."""
        return "".join(self.lines)

    def found(self, pattern: str) -> str | None:
        """The first group of `pattern` in the output, None while absent."""
        match = re.search(pattern, self.text)
        return match.group(1) if match else None

    def alerts(self) -> set[tuple[str, str]]:
        """(alert, source) of every firing alert printed."""
        return set(re.findall(r"ALERT firing (\S+)  source=(\S+)", self.text))

    def interrupt(self) -> int:
        """Ctrl-C: SIGINT to the demo alone; its exit status."""
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(30)
        finally:
            self.reader.join(5)
            self.err.close()

    def close(self) -> None:
        """Make sure it is gone even when a test failed (SIGINT first: it stops its daemon)."""
        if self.proc.poll() is None:
            self.interrupt()


def answers(url: str) -> bool:
    """Whether anything answers HTTP at `url`."""
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except (urllib.error.URLError, OSError):
        return False


def get(url: str) -> str:
    """The body of a GET."""
    with urllib.request.urlopen(url, timeout=10) as resp:
        return str(resp.read().decode())


@pytest.mark.slow
def test_demo_prints_the_alerts_serves_metrics_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    """The console shows every expected alert, /metrics counts lines, Ctrl-C exits 0 and cleans up."""
    demo = Demo(tmp_path)
    try:
        wait_until(lambda: demo.found(r"metrics +(http://\S+/metrics)"), 30.0, "the banner")
        metrics = str(demo.found(r"metrics +(http://\S+/metrics)"))
        workdir = Path(str(demo.found(r"logs, config, state +(\S+)")))
        assert workdir.is_dir()
        try:
            wait_until(lambda: EXPECTED <= demo.alerts(), 50.0, "the expected alerts")
        except AssertionError as err:  # (the console as it stands now, and what it lacks)
            raise AssertionError(f"{err}: missing {EXPECTED - demo.alerts()} in:\n{demo.text}") from None
        assert "fix: " in demo.text
        golden = (ROOT / "samples" / "vllm-write-only-offload.golden").read_text()
        lines = re.compile(r'^kvwatch_lines_total\{source="vllm-write-only-offload"\} ([\d.]+)$', re.M)
        whole = f"{float(lines.findall(golden)[0])}"  # the whole sample, tailed line for line
        wait_until(lambda: whole in lines.findall(get(metrics)), 20.0, f"{whole} lines on /metrics")
        assert re.search(r'^kvwatch_alert_firing\{alert="write_only_offload".*\} 1\.0$', get(metrics), re.M)
    finally:
        demo.close()
    assert 0 == demo.proc.returncode, demo.err_path.read_text()
    assert (False, False) == (workdir.exists(), answers(metrics))
    assert EXPECTED == demo.alerts()  # the healthy samples fired nothing


@pytest.mark.slow
def test_demo_sends_the_alert_json_to_the_webhook_in_its_environment(tmp_path: Path) -> None:
    """The webhook in $KVWATCH_DEMO_WEBHOOK_URL gets the alert JSON, the Slack URL a message; unprinted."""
    with Receiver() as hook:
        env = {
            "KVWATCH_DEMO_WEBHOOK_URL": hook.base + "/hook/SECRET-TOKEN-42",
            "KVWATCH_DEMO_SLACK_URL": hook.base + "/services/SECRET-SLACK-43",
        }
        demo = Demo(tmp_path, env)

        def delivered() -> set[str]:
            with hook.lock:
                return {seen.path for seen in hook.seen if "write_only_offload" in json.dumps(seen.body)}

        try:
            wait_until(lambda: 2 == len(delivered()), 45.0, "the webhook and Slack deliveries")
            wait_until(lambda: ("write_only_offload", "vllm-write-only-offload") in demo.alerts(), 10.0)
        finally:
            demo.close()
        body = next(
            b
            for b in hook.accepted()
            if isinstance(b, dict)
            and b.get("alert") == "write_only_offload"
            and b.get("labels", {}).get("source") == "vllm-write-only-offload"
        )
        assert ("firing", {"source": "vllm-write-only-offload", "engine": "0"}) == (
            body["state"],
            body["labels"],
        )
        assert {"summary", "cause", "fix", "evidence", "severity", "at"} <= set(body)
        assert {"/hook/SECRET-TOKEN-42", "/services/SECRET-SLACK-43"} == delivered()
    assert 0 == demo.proc.returncode
    assert "$KVWATCH_DEMO_WEBHOOK_URL and $KVWATCH_DEMO_SLACK_URL" in demo.text
    assert [] == re.findall("SECRET-[A-Z]+-4[23]", demo.text + demo.err_path.read_text())


def test_demo_refuses_a_keep_directory_that_is_not_empty(tmp_path: Path) -> None:
    """`--keep DIR` never writes into (or later removes) a directory holding something else."""
    (tmp_path / "precious.txt").write_text("mine")
    argv = [sys.executable, "-m", "kvwatch", "demo", "--listen", "127.0.0.1:0", "--keep", str(tmp_path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert (2, ["precious.txt"]) == (done.returncode, os.listdir(tmp_path))
    assert "not a new or empty directory" in done.stderr


def test_schedule_moves_each_engines_times_onto_the_demo_clock() -> None:
    """vLLM headers, llama.cpp relative times and new-api created_at are rewritten; order is kept."""
    start = datetime(2027, 3, 1, 12, 0, 0, tzinfo=timezone.utc).timestamp()
    vllm = [
        "(APIServer pid=1) INFO 08-18 01:19:40 [api_utils.py:345] start\n",
        "(APIServer pid=1) INFO:     172.17.0.9:46210 - GET /metrics\n",
        "(APIServer pid=1) INFO 08-18 01:19:50 [loggers.py:310] Engine 000: stats\n",
    ]
    got = list(schedule(Sample("v", "vllm"), vllm, start, 20.0))
    assert [0.0, 0.0, 0.5] == [t.delay for t in got]
    assert ["03-01 12:00:00 [api", "03-01 12:00:00 [log"] == re.findall(
        r"\d\d-\d\d [\d:]+ \[\w{3}", got[0].text + got[2].text
    )
    assert vllm[1] == got[1].text
    joined = "(EngineCore) INFO 08-18 01:19:40 [a.py:1] one\r(EngineCore) INFO 08-18 01:19:45 [a.py:1] two\n"
    got = list(schedule(Sample("v", "vllm"), lines_of(joined + joined), start, 10.0))
    assert 2 * ["03-01 12:00:00", "03-01 12:00:00"] == re.findall(
        r"\d\d-\d\d [\d:]+", got[0].text + got[1].text
    )
    llama = ["0.00.001.000 I srv  init\n", "0.00.002.000 I slot release\n"]
    got = list(schedule(Sample("l", "llamacpp", pace=400.0), llama, start, 20.0))
    assert ["0.00.000.000 I srv  init\n", "0.00.020.000 I slot release\n"] == [t.text for t in got]
    rows = ['{"id":1,"created_at":1787043600,"type":2}\n', '{"id":2,"created_at":1787043612,"type":2}\n']
    got = list(schedule(Sample("u", "usage"), rows, start, 20.0))
    stamps = [f'"created_at":{start:.3f}', f'"created_at":{start + 0.6:.3f}']
    assert stamps == re.findall(r'"created_at":[\d.]+', "".join(t.text for t in got))


def test_every_bundled_sample_is_found_and_planned_in_time_order() -> None:
    """The demo's samples exist where importlib.resources finds them; the plan never goes backwards."""
    timed = plan(SAMPLES, 0.0, 20.0, sample_dir())
    assert {s.name for s in SAMPLES} == {t.sample for t in timed}
    assert sorted(t.delay for t in timed) == [t.delay for t in timed]


def test_the_demo_writes_each_sample_byte_for_byte_but_its_times() -> None:
    """Only the time fields change: `\\r`-ended lines, bytes and line counts are as in the sample."""
    for sample in SAMPLES:
        original = (ROOT / "samples" / f"{sample.name}.log").read_bytes().decode("utf-8", "surrogateescape")
        written = [t.text for t in schedule(sample, lines_of(original), 1.8e9, 20.0)]
        clock = ENGINES[sample.engine].clock
        assert clock is not None
        layers = [ENGINES[n].clock for n in layers_of(sample.engine)]
        masks = [c.pattern for c in layers if c is not None] + [clock.pattern]

        def masked(line: str, masks: list[re.Pattern[str]] = masks) -> str:
            for mask in masks:
                line = mask.sub("T", line)
            return line

        expected = [masked(line) for line in lines_of(original)]
        assert (sample.name, expected) == (sample.name, [masked(line) for line in written])
        assert original.count("\n") == "".join(written).count("\n")
    assert 120.0 > max(s.delay(e.at, 20.0) for s in SAMPLES for e in s.expected)


def test_the_wheel_lists_every_subpackage_and_maps_the_samples() -> None:
    """pyproject's explicit package list covers kvwatch/ (every folder holding a file: a subpackage, or
    data such as the linked systemd/, grafana/ and prometheus/) and maps kvwatch.samples onto samples/."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {
        ".".join(Path(folder).relative_to(ROOT).parts)
        for folder, _, files in os.walk(ROOT / "kvwatch", followlinks=True)
        if "__pycache__" not in Path(folder).parts and files
    }
    assert sorted(found | {"kvwatch.samples"}) == sorted(tool["packages"])
    assert ({"kvwatch.samples": "samples"}, ["*.log"]) == (
        tool["package-dir"],
        tool["package-data"]["kvwatch.samples"],
    )
