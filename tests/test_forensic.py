"""`kvwatch report`: the HTML file's content (alerts' words, block arithmetic, charts' data), narrowing,
downsampling that keeps spikes, no prompt text, the vendored library as recorded, and the daemon's
`/report` behind its web auth."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import tomllib
from daemon_helpers import ROOT, Kvwatch, file_source, wait_until, write_config

from kvwatch.cli import main
from kvwatch.engines import FACTS
from kvwatch.forensic.charts import HEALTHY_BAND, minmax
from kvwatch.forensic.page import UPLOT_VERSION
from kvwatch.web.auth import hash_password

SAMPLES = ROOT / "samples"
VENDOR = ROOT / "kvwatch" / "forensic" / "vendor"


def report(tmp_path: Path, *args: str) -> tuple[int, str]:
    """(exit status, the HTML written) of `kvwatch report --year 2026 ARGS -o <tmp>`."""
    out = tmp_path / "report.html"
    status = main(["report", "--year", "2026", *args, "-o", str(out)])
    return status, out.read_text("utf-8") if out.exists() else ""


def charts(html: str) -> list[dict[str, Any]]:
    """The chart specifications inlined in a report."""
    found = re.search(r"<script type='application/json' id='kvwatch-charts'>(.*?)</script>", html, re.S)
    assert found is not None
    specs: list[dict[str, Any]] = json.loads(found.group(1))["charts"]
    return specs


def visible(html: str) -> str:
    """The page's text without tags and scripts, white space collapsed."""
    body = re.sub(r"<script.*?</script>|<style.*?</style>", " ", html, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", body).replace("&#x27;", "'").replace("&amp;", "&").split())


def test_minmax_keeps_every_spike_and_leaves_a_short_series_alone() -> None:
    """A long series becomes at most two points per bucket, its spikes and dips among them, in time
    order; one no longer than two per bucket is unchanged."""
    times = [float(t) for t in range(100_000)]
    values = [100.0] * 100_000
    values[31_337], values[77_777] = 5_000.0, -3.0
    xs, (ys,) = minmax(times, (values,), 500)
    assert len(xs) <= 1000 and len(xs) == len(ys)
    assert 5_000.0 in ys and -3.0 in ys
    assert xs == sorted(xs)
    assert (times[:10], [values[:10]]) == minmax(times[:10], (values[:10],), 500)


def test_the_pinned_gateway_report_shows_the_pin_its_blocks_and_both_entries_rates(tmp_path: Path) -> None:
    """The new-api day: both alerts with cause and fix, 17920 = 280 x 64 beside the distribution, one
    hit-rate line per entry with the healthy band, the pinned entry's timeline first, alerts marked."""
    status, html = report(tmp_path, str(SAMPLES / "usage-newapi.log"))
    assert 0 == status
    text = visible(html)
    assert "What kvwatch concluded: 2 alerts" in text
    # (an alert still firing at the end is told in its latest words)
    assert "still firing at the end of the log: summary and evidence as of then" in text
    assert "98% of the last 50 requests reused exactly 17920 tokens" in text
    for words in ("pinned_cache_length", "hit_rate_gap", "Strip the per-request header at the gateway"):
        assert words in text, words
    assert "17920 = 280 \u00d7 64 tokens: 291 of 300 requests (97%)" in text
    assert "cached length 17,920 on 97% of requests" in text
    specs = charts(html)
    assert ["rate", "timeline", "histogram", "timeline", "histogram"] == [c["kind"] for c in specs]
    rate, pinned, bars = specs[0], specs[1], specs[2]
    assert ["/v1/messages · DeepSeek-V4-Flash", "/v1/chat/completions · DeepSeek-V4-Flash"] == sorted(
        s["label"] for s in rate["series"]
    )[::-1]
    assert list(HEALTHY_BAND) == rate["band"]
    assert "/v1/messages" in pinned["title"]
    assert {"pinned_cache_length firing", "hit_rate_gap firing"} == {m["text"] for m in pinned["markers"]}
    _, prompt, cached = pinned["tables"][0]
    assert 300 == len(prompt) and 291 == cached.count(17920)
    assert [[0, 17920], [9, 291]] == bars["tables"][0]


def test_the_write_only_offload_report_draws_stores_over_a_flat_zero(tmp_path: Path) -> None:
    """vLLM's write-only tier: the stored total rises, the loaded total stays 0; the engine logs no
    per-request counts, and the report says so."""
    status, html = report(tmp_path, str(SAMPLES / "vllm-write-only-offload.log"))
    assert 0 == status
    offload = next(c for c in charts(html) if c["kind"] == "offload")
    _, stored, loaded = offload["tables"][0]
    assert stored[-1] > 80e9 and set(loaded) == {0}
    # (the log opens with vLLM's logo: its start)
    assert ["engine (re)start", "write_only_offload firing"] == [m["text"] for m in offload["markers"]]
    text = visible(html)
    assert "84.7 GB stored, 0 bytes loaded back" in text
    assert "the engine logs no per-request token counts here" in text
    assert "vllm 0.26.0" in text


def test_no_prompt_text_reaches_the_report(tmp_path: Path) -> None:
    """A vLLM request log line carrying a prompt: its text is nowhere in the file."""
    log = tmp_path / "vllm.log"
    secret = "kvwatch-canary-prompt-text-7f3a"
    lines = (SAMPLES / "vllm-write-only-offload.log").read_text().splitlines(keepends=True)
    request = (
        f"INFO 08-18 01:20:01 [logger.py:41] Received request cmpl-1: prompt: '{secret}', "
        "params: SamplingParams(n=1), prompt_token_ids: [1, 2, 3], lora_request: None.\n"
    )
    lines.insert(40, request)
    log.write_text("".join(lines))
    status, html = report(tmp_path, str(log))
    assert 0 == status and charts(html)
    assert secret not in html


def test_since_until_and_source_narrow_the_report(tmp_path: Path) -> None:
    """--source keeps one of two files' sources; --since/--until keep the charts' points within them and
    say so; an unknown source or an empty span is refused with exit 2."""
    usage, vllm = str(SAMPLES / "usage-newapi.log"), str(SAMPLES / "vllm-write-only-offload.log")
    status, html = report(tmp_path, usage, vllm, "--source", "usage-newapi")
    assert 0 == status
    assert "<h2 class='source'>usage-newapi</h2>" in html and ">vllm-write-only-offload</h2>" not in html
    since, until = "2026-08-18T10:00:00Z", "2026-08-18T12:00:00Z"
    status, html = report(tmp_path, usage, "--since", since, "--until", until)
    assert 0 == status
    assert "narrowed to since 2026-08-18 10:00:00Z, until 2026-08-18 12:00:00Z" in visible(html)
    for spec in charts(html):
        if spec["kind"] == "timeline":
            xs = spec["tables"][0][0]
            assert 1787047200 <= min(xs) and max(xs) <= 1787054400
    assert 2 == main(["report", usage, "--source", "nope", "-o", str(tmp_path / "x.html")])
    assert 2 == main(["report", usage, "--since", until, "--until", since, "-o", str(tmp_path / "x.html")])


def test_the_vendored_chart_library_is_the_one_recorded() -> None:
    """uPlot's files match the sha256 in vendor/README.md, its version is the page's, its licence is
    shipped, and the wheel's package data includes them (vendor/ as a data package of its own: no
    setuptools warning)."""
    readme = (VENDOR / "README.md").read_text()
    for name in ("uPlot.iife.min.js", "uPlot.min.css"):
        digest = hashlib.sha256((VENDOR / name).read_bytes()).hexdigest()
        assert f"`{name}` | `npm pack uplot@{UPLOT_VERSION}`" in readme and digest in readme, name
    assert f"(v{UPLOT_VERSION})" in (VENDOR / "uPlot.iife.min.js").read_text()[:100]
    assert "MIT License" in (VENDOR / "uPlot.LICENSE").read_text()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert (["charts.js"], ["*"]) == (data["kvwatch.forensic"], data["kvwatch.forensic.vendor"])


def test_the_healthy_band_is_the_one_the_alerts_page_states() -> None:
    """docs/alerts.md states the band the hit-rate charts draw."""
    low, high = HEALTHY_BAND
    assert f"**{low * 100:.0f}\u2013{high:.0%}**" in (ROOT / "docs" / "alerts.md").read_text()


@pytest.mark.slow
def test_the_daemon_serves_its_report_behind_its_web_auth(tmp_path: Path) -> None:
    """`/report` needs the password as /metrics does; with it, a report file of the window's requests and
    the firing alert; `/` carries the same charts."""
    log = tmp_path / "usage.log"
    log.write_bytes((SAMPLES / "usage-newapi.log").read_bytes())
    (tmp_path / "web.yml").write_text(f"basic_auth_users:\n  prom: '{hash_password('pw')}'\n")
    config = write_config(tmp_path / "c.toml", file_source("gw", log, engine="usage"))
    args = ["--config", str(config), "--web.config.file", str(tmp_path / "web.yml")]
    daemon = Kvwatch(args, tmp_path / "k.log")
    good = {"Authorization": "Basic " + base64.b64encode(b"prom:pw").decode()}
    assert 401 == daemon.get("/report")[0] == daemon.get("/metrics")[0]
    wait_until(lambda: "pinned_cache_length" in daemon.get("/", good)[2], 30.0, "the pin found")
    status, kind, html = daemon.get("/report", good)
    assert (200, "text/html; charset=utf-8") == (status, kind)
    assert "17920 = 280 \u00d7 64 tokens" in visible(html)
    assert {"rate", "timeline", "histogram"} == {c["kind"] for c in charts(html)}
    landing = daemon.get("/", good)[2]
    assert "<a href='report'>/report</a>" in landing and "Prompt vs cached length per request" in landing
    assert 0 == daemon.stop()


@pytest.mark.parametrize(
    "sample", ["vllm-write-only-offload.log", "llamacpp-healthy-two-slots.log", "usage-anthropic-correct.log",
               "lmcache-0.3.12-write-only.log"],
)  # fmt: skip
def test_the_daemons_windows_chart_what_the_report_of_the_same_log_does(sample: str) -> None:
    """Where the windows keep a whole (short) log, the charts drawn from them hold the report's
    requests, offload totals and rate lines."""
    from kvwatch.forensic.collect import EventCollector, from_windows
    from kvwatch.parsers.base import ParserSettings
    from kvwatch.replay import plan, replay
    from kvwatch.windows.window import Windows

    collector, windows = EventCollector(), Windows(FACTS)
    path = str(SAMPLES / sample)
    replay(
        plan([path], "auto", None), ParserSettings(year=2026), observers=[collector.observe, windows.observe]
    )
    events, kept = collector.data, from_windows(windows)
    assert {k: len(g.time) for k, g in events.groups.items()} == {
        k: len(g.time) for k, g in kept.groups.items()
    }
    for key, group in events.groups.items():
        assert sorted(group.cached) == sorted(kept.groups[key].cached), key
    assert set(events.rates) == set(kept.rates)
    for source in {s for s, _ in events.offloads}:
        logged = [t for (s, _), t in events.offloads.items() if s == source]
        (held,) = [t for (s, _), t in kept.offloads.items() if s == source] or [None]
        assert held is not None, source
        if held.unit == "bytes":  # (vLLM: one engine's KV Transfer lines, summed per second)
            assert (sum(logged[0].stored), sum(logged[0].loaded)) == (sum(held.stored), sum(held.loaded))
        else:  # (an offload layer: each worker's stores, the busiest one's per second; all loads)
            stored = [sum(t.stored) for t in logged]
            assert max(stored) <= sum(held.stored) <= sum(stored), source
            assert sum(sum(t.loaded) for t in logged) == sum(held.loaded), source


def test_a_missing_log_or_output_folder_is_refused_with_exit_2(tmp_path: Path, capsys: Any) -> None:
    """A missing FILE, and an output in a folder that does not exist (none is made), exit 2 with the
    path and the reason."""
    assert 2 == main(["report", str(tmp_path / "nope.log"), "-o", str(tmp_path / "r.html")])
    assert (
        f"kvwatch: cannot read {tmp_path / 'nope.log'}: No such file or directory" in capsys.readouterr().err
    )
    out = tmp_path / "missing" / "r.html"
    assert 2 == main(["report", str(SAMPLES / "usage-newapi.log"), "-o", str(out)])
    assert f"cannot write {out}: no such directory" in capsys.readouterr().err
    assert not out.parent.exists()


def test_text_from_a_log_cannot_break_out_of_the_page() -> None:
    """An entry and model named like markup reach the page escaped: in the HTML, and inside the inline
    JSON (no `</script>` can end it); the chart library shows labels as text."""
    from kvwatch.forensic.assemble import SourceFacts, page
    from kvwatch.forensic.collect import EventCollector
    from kvwatch.forensic.page import render
    from kvwatch.model import SourceCounts, UsageRecord

    collector = EventCollector()
    evil = "</script><img src=x onerror=alert(1)>"
    for turn in range(3):
        collector.observe(UsageRecord("gw<b>", 1787212800.0 + turn, evil, evil, 1000 * (turn + 1), 512))
    facts = [SourceFacts("gw<b>", "usage", SourceCounts(3, 3), 1787212800.0, 1787212802.0)]
    html = render(page(collector.data, [], facts, title="t", made="m"))
    assert "<img" not in html and "<b>" not in html
    assert "&lt;/script&gt;&lt;img" in html  # (the titles, escaped)
    assert [evil + " · " + evil] == [s["label"] for s in charts(html)[0]["series"]]
