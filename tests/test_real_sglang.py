"""A real SGLang 0.5.23 (CPU, tiny model) watched by a real `kvwatch run` and a real Prometheus.

SGLang is installed by scripts/real/install_sglang.sh into `$KVWATCH_REAL_CACHE` (cached; a broken
install fails here with its output, never skips). One server serves the healthy and the nonce
scenarios (each test's daemon starts at the log's end and waits for a marker request before its own
traffic); the `--log-requests` server is killed and restarted with `--disable-radix-cache`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import Kvwatch, file_source, wait_until, write_config
from prometheus_helpers import query, start_prometheus, stop_prometheus, wait_for
from real.agent_talk import Conversation, cached
from real.sglang_server import STARTED, SglangServer, chat, install_sglang, tiny_model

pytestmark = pytest.mark.slow  # installs and runs a real SGLang

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "sglang"
#: Decode lines every 4 decode steps (40 by default: the 8-token replies here would print none).
FLAGS = ("--decode-log-interval", "4")


@pytest.fixture(scope="module")
def sglang_venv() -> tuple[Path, Path]:
    """SGLang's venv and the tiny model (both cached between runs)."""
    venv = install_sglang()
    return venv, tiny_model(venv)


@pytest.fixture(scope="module")
def server(
    sglang_venv: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SglangServer]:
    """One SGLang with the radix cache on, for the scenarios that start reading at its log's end."""
    venv, model = sglang_venv
    log = tmp_path_factory.mktemp("sglang") / "sglang.log"
    started = SglangServer(venv, model, log, FLAGS)
    try:
        started.wait_ready()
        yield started
    finally:
        started.stop()
        STARTED.remove(started)


def config(tmp_path: Path, log: Path, start_at: str, extra: str = "") -> Path:
    """The daemon's config: the SGLang log as a file source, plus `extra` tables."""
    return write_config(
        tmp_path / "kvwatch.toml", file_source(SOURCE, log, start_at, engine="sglang") + extra
    )


def firing(daemon: Kvwatch) -> list[dict[str, str]]:
    """The label sets of the alerts firing now (`kvwatch_alert_firing` == 1)."""
    from prometheus_client.parser import text_string_to_metric_families

    _, _, body = daemon.get("/metrics")
    return [
        dict(sample.labels)
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == "kvwatch_alert_firing" and sample.value == 1.0
    ]


def total(daemon: Kvwatch, name: str) -> float:
    """The sum of a kvwatch metric's samples over all their labels (0 while absent)."""
    from prometheus_client.parser import text_string_to_metric_families

    _, _, body = daemon.get("/metrics")
    return sum(
        sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == name
    )


def prom(url: str, expr: str) -> float | None:
    """A one-number PromQL result (None while Prometheus has no such series)."""
    result = query(url, expr)
    return float(result[0]["value"][1]) if result else None


def sglang_counter(server: SglangServer, name: str) -> float:
    """The sum of one of SGLang's own counters over its label sets."""
    pattern = re.compile(rf"^{re.escape(name)}(?:{{[^}}]*}})? ([\d.e+-]+)$", re.M)
    return sum(float(v) for v in pattern.findall(server.metrics()))


def scraped(prom_url: str, daemon: Kvwatch, server: SglangServer) -> dict[str, float]:
    """Both sides' counters once Prometheus holds what each exporter says now (polled, not slept)."""
    want = {
        "cached": (daemon.value("kvwatch_sglang_prefill_cached_tokens_total") or 0.0,
                   sglang_counter(server, "sglang:cached_tokens_total")),
        "computed": (daemon.value("kvwatch_sglang_prefill_computed_tokens_total") or 0.0,
                     _prefill_compute(server)),
    }  # fmt: skip
    # Prometheus negotiates OpenMetrics, in which SGLang's prometheus_client (0.26) writes `sglang_...`
    # for the `sglang:...` its plain-text /metrics shows: either name is matched.
    exprs = {
        "cached": (
            "sum(kvwatch_sglang_prefill_cached_tokens_total)",
            'sum({__name__=~"sglang[:_]cached_tokens_total"})',
        ),
        "computed": (
            "sum(kvwatch_sglang_prefill_computed_tokens_total)",
            'sum({__name__=~"sglang[:_]realtime_tokens_total", mode="prefill_compute"})',
        ),
    }
    got: dict[str, float] = {}

    def caught_up() -> bool:
        for key, (ours, theirs) in exprs.items():
            # (`or vector(0)`: a counter SGLang has not incremented yet is not exported at all)
            a, b = prom(prom_url, f"{ours} or vector(0)"), prom(prom_url, f"{theirs} or vector(0)")
            if a != want[key][0] or b != want[key][1]:
                return False
            got[f"kvwatch_{key}"], got[f"sglang_{key}"] = a, b
        return True

    wait_for(caught_up, 60, f"Prometheus to scrape {want}")
    return got


def _prefill_compute(server: SglangServer) -> float:
    pattern = re.compile(
        r'^sglang:realtime_tokens_total{[^}]*mode="prefill_compute"[^}]*} ([\d.e+-]+)$', re.M
    )
    return sum(float(v) for v in pattern.findall(server.metrics()))


def marker_request(server: SglangServer, daemon: Kvwatch) -> None:
    """A one-line request whose prefill batch the daemon must count: it is tailing the log now."""
    before = daemon.value("kvwatch_sglang_prefill_batches_total") or 0.0
    chat(server.url, [{"role": "user", "content": "marker"}], max_tokens=1)
    wait_until(
        lambda: (daemon.value("kvwatch_sglang_prefill_batches_total") or 0.0) > before,
        60,
        "the marker's batch read",
    )


def send(server: SglangServer) -> Any:
    """A `Conversation.turn` sender against `server`."""
    return lambda messages, tools: chat(server.url, messages, tools)


def test_healthy_agent_conversation_agrees_with_sglang(server: SglangServer, tmp_path: Path) -> None:
    """Two agent sessions: no alert; kvwatch's cached tokens equal SGLang's counters and the responses'."""
    daemon = Kvwatch(["--config", str(config(tmp_path, server.log, "end"))], tmp_path / "kvwatch.err")
    prom_url, prometheus = start_prometheus(tmp_path, [daemon.url.split("//")[1], f"127.0.0.1:{server.port}"])
    try:
        marker_request(server, daemon)
        before = scraped(prom_url, daemon, server)
        records_before = total(daemon, "kvwatch_sglang_cached_tokens_total")
        prompts_before = total(daemon, "kvwatch_sglang_prompt_tokens_total")
        sessions = [Conversation(seed=11), Conversation(seed=12)]
        usages = [session.turn(send(server)) for _ in range(5) for session in sessions]
        wait_until(
            lambda: (
                (daemon.value("kvwatch_sglang_prefill_cached_tokens_total") or 0.0) - before["kvwatch_cached"]
                >= sum(cached(u) for u in usages)
            ),
            60,
            "kvwatch to read the conversation's batches",
        )
        after = scraped(prom_url, daemon, server)
        # Exact, 0 tokens apart: SGLang's counters and its `Prefill batch` line are fed from the same
        # batch (scheduler_components/metrics_reporter.py), and nothing else ran on this server meanwhile.
        for key in ("cached", "computed"):
            ours = after[f"kvwatch_{key}"] - before[f"kvwatch_{key}"]
            theirs = after[f"sglang_{key}"] - before[f"sglang_{key}"]
            assert ours == theirs, (key, ours, theirs)
        response_cached = sum(cached(u) for u in usages)
        response_prompt = sum(int(u["prompt_tokens"]) for u in usages)
        assert after["kvwatch_cached"] - before["kvwatch_cached"] == response_cached
        # kvwatch's request records (one per single-sequence prefill batch) equal the responses one for one.
        records_cached = total(daemon, "kvwatch_sglang_cached_tokens_total") - records_before
        records_prompt = total(daemon, "kvwatch_sglang_prompt_tokens_total") - prompts_before
        assert (records_cached, records_prompt) == (response_cached, response_prompt)
        # A healthy agent session reuses its previous turn: every follow-up has most of its prompt cached.
        assert all(cached(u) / int(u["prompt_tokens"]) > 0.85 for u in usages[2:]), usages
        assert [] == firing(daemon)
    finally:
        stop_prometheus(prometheus)
        daemon.stop()


def test_nonce_in_system_prompt_breaks_reuse_and_the_probe_says_so(
    server: SglangServer, tmp_path: Path
) -> None:
    """A per-request nonce at the front of the system prompt: prefix_reuse_broken; the probe's header
    conversation: probe_prefix_miss in the daemon, `partly reused` from `kvwatch probe`."""
    daemon = Kvwatch(["--config", str(config(tmp_path, server.log, "end"))], tmp_path / "kvwatch.err")
    prom_url, prometheus = start_prometheus(tmp_path, [daemon.url.split("//")[1], f"127.0.0.1:{server.port}"])
    try:
        marker_request(server, daemon)
        session = Conversation(seed=21, nonce=True)
        usages = [session.turn(send(server)) for _ in range(8)]
        # The prefix breaks at the nonce: every follow-up reuses only the ~50 tokens before `cch=` (52 or 53:
        # BPE may join the nonce's first digit to what precedes it) while its prompt grows past 1300.
        assert all(cached(u) < 100 and int(u["prompt_tokens"]) > 1300 for u in usages), usages
        wait_until(
            lambda: {"alert": "prefix_reuse_broken", "source": SOURCE} in firing(daemon),
            120,
            "prefix_reuse_broken",
        )
        wait_for(
            lambda: prom(prom_url, 'max(kvwatch_alert_firing{alert="prefix_reuse_broken"})') == 1.0,
            60,
            "prefix_reuse_broken in Prometheus",
        )
    finally:
        stop_prometheus(prometheus)
        daemon.stop()
    # The daemon's [[probe]] (its own daemon: the probe's healthy plain conversation would otherwise mix
    # with the traffic above in the source's last requests).
    probe = (
        f'[[probe]]\nname = "sglang"\nurl = "{server.url}/v1"\ninterval = 2\njitter = 0\n'
        "prefix_tokens = 1024\ntimeout = 120\n"
    )
    prober = Kvwatch(
        ["--config", str(write_config(tmp_path / "probe.toml", probe, tmp_path / "probe-state"))],
        tmp_path / "probe.err",
    )
    try:
        wait_until(
            lambda: {"alert": "probe_prefix_miss", "probe": "sglang"} in firing(prober),
            400,
            "probe_prefix_miss",
        )
    finally:
        prober.stop()
    once = subprocess.run(
        [sys.executable, "-m", "kvwatch", "probe", f"{server.url}/v1", "--prefix-tokens", "1024",
         "--timeout", "120"],
        capture_output=True, text=True, timeout=600, check=False, cwd=ROOT,
    )  # fmt: skip
    assert 1 == once.returncode, once.stdout + once.stderr
    plain, header = once.stdout.split("with the attribution header:")
    assert "verdict: reused" in plain, once.stdout
    assert "verdict: partly reused" in header and "attribution header" in header, once.stdout


def test_log_requests_kill_restart_and_radix_cache_disabled(
    sglang_venv: tuple[Path, Path], tmp_path: Path
) -> None:
    """--log-requests records equal the responses; SIGKILL, then a restart with --disable-radix-cache:
    the daemon keeps its place and fires prefix_cache_disabled."""
    venv, model = sglang_venv
    log = tmp_path / "sglang.log"
    flags = (*FLAGS, "--log-requests", "--log-requests-level", "0")
    server = SglangServer(venv, model, log, flags)
    daemon: Kvwatch | None = None
    try:
        server.wait_ready()
        daemon = Kvwatch(["--config", str(config(tmp_path, log, "beginning"))], tmp_path / "kvwatch.err")
        wait_until(lambda: total(daemon, "kvwatch_sglang_requests_total") >= 1, 60, "startup requests read")
        requests_before = total(daemon, "kvwatch_sglang_requests_total")
        cached_before = total(daemon, "kvwatch_sglang_cached_tokens_total")
        session = Conversation(seed=31)
        usages = [session.turn(send(server)) for _ in range(4)]
        wait_until(
            lambda: total(daemon, "kvwatch_sglang_requests_total") == requests_before + len(usages),
            60,
            "one record per --log-requests line",
        )
        assert total(daemon, "kvwatch_sglang_cached_tokens_total") - cached_before == sum(
            cached(u) for u in usages
        )
        assert "Finish: " in log.read_text(errors="replace")
        assert [] == firing(daemon)

        # SIGKILL: no goodbye line. kvwatch keeps tailing and its position.
        server.kill()
        read = daemon.lines(SOURCE) or 0.0
        # (Where the restart failed instead, the engine_start_failed alert of the "engine that dies" work
        # would fire here, from the log's last error line.)
        server.flags = (*flags, "--disable-radix-cache")
        server.start()
        server.wait_ready()
        wait_until(
            lambda: {"alert": "prefix_cache_disabled", "source": SOURCE} in firing(daemon), 120,
            "prefix_cache_disabled from the restart's server_args",
        )  # fmt: skip
        lines_now = daemon.lines(SOURCE) or 0.0
        physical = log.read_bytes().count(b"\n")
        assert read < lines_now <= physical, (read, lines_now, physical)
        after = [Conversation(seed=32).turn(send(server)) for _ in range(1)]
        assert [0] == [cached(u) for u in after]
        assert daemon.proc.poll() is None
    finally:
        if daemon is not None:
            daemon.stop()
        server.stop()
        STARTED.remove(server)
