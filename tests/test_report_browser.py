"""The forensic reports of the incident samples as a person sees them: rendered by Debian's headless
chromium from the file alone, read back (charts drawn with their series and points, the words that tell
the incident), with no console error and no request beyond the file; screenshots taken."""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import Any

import pytest
from cdp import Browser, Page
from daemon_helpers import Kvwatch, file_source, wait_until, write_config
from test_forensic import SAMPLES, charts, report

#: sample -> what a person must read on the page
INCIDENTS = {
    "usage-newapi.log": (
        "17920 = 280 \u00d7 64 tokens: 291 of 300 requests (97%)",
        "pinned_cache_length",
        "hit_rate_gap",
        "cached length 17,920 on 97% of requests",
    ),
    "vllm-write-only-offload.log": ("write_only_offload", "84.7 GB stored, 0 bytes loaded back"),
    "llamacpp-synthetic-incident4.log": (
        "prefix_reuse_broken",
        "Nothing cached: 10 of 10 requests (100%).",
        "token hit rate 0.0%",
    ),
    "usage-newapi-fixed.log": ("no alert: kvwatch found no prefix-cache or offload problem",),
}


def drawn(page: Page) -> list[dict[str, Any]]:
    """What the page drew: each chart element's id, series and points per series."""
    value: list[dict[str, Any]] = page.evaluate(
        "[...document.querySelectorAll('.plot')].map(e => ({id: e.id, series: Number(e.dataset.series), "
        "points: JSON.parse(e.dataset.points || 'null'), canvas: e.querySelectorAll('canvas').length}))"
    )
    return value


def expected(spec: dict[str, Any]) -> list[int]:
    """The points each series of a chart specification holds (its values that are not null)."""
    counts = []
    for table in spec["tables"]:
        counts.extend(sum(value is not None for value in column) for column in table[1:])
    return counts


def png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height, from its header."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


@pytest.mark.slow
def test_each_incident_report_reads_as_its_incident_in_chromium(tmp_path: Path) -> None:
    """Every chart drawn with the series and points of its data; the incident's words on the page; no
    console error; the only request the page's own file; a full-page screenshot of each."""
    with Browser(tmp_path / "chromium") as browser:
        for sample, words in INCIDENTS.items():
            out = tmp_path / sample.replace(".log", "")
            out.mkdir()
            status, html = report(out, str(SAMPLES / sample))
            assert 0 == status, sample
            specs = charts(html)
            page = Page(browser)
            url = (out / "report.html").as_uri()
            page.load(url)
            count = page.wait_for("document.documentElement.dataset.charts", time.monotonic() + 30)
            assert str(len(specs)) == count, sample
            seen = drawn(page)
            assert [s["id"] for s in specs] == [d["id"] for d in seen], sample
            for spec, chart in zip(specs, seen, strict=True):
                assert len(spec["series"]) == chart["series"], (sample, spec["title"])
                assert expected(spec) == chart["points"], (sample, spec["title"])
                assert chart["canvas"] >= 1, (sample, spec["title"])
            text = page.evaluate("document.body.innerText")
            for phrase in words:
                assert phrase in text, (sample, phrase)
            assert [] == page.console_errors(), sample
            assert [url] == page.requests(), sample
            shot = out / "report.png"
            page.screenshot(shot, scale=0.75)
            width, height = png_size(shot)
            assert 960 == width and height > 600, sample


@pytest.mark.slow
def test_the_landing_page_draws_each_window_without_fetching_anything(tmp_path: Path) -> None:
    """The daemon's `/`, read by chromium: the pinned gateway's window charted (the pin on it, the
    alerts marked), no console error, no request but the page's own."""
    log = tmp_path / "usage.log"
    log.write_bytes((SAMPLES / "usage-newapi.log").read_bytes())
    config = write_config(tmp_path / "c.toml", file_source("gw", log, engine="usage"))
    daemon = Kvwatch(["--config", str(config)], tmp_path / "k.log")
    wait_until(lambda: "pinned_cache_length" in daemon.get("/")[2], 30.0, "the pin found")
    with Browser(tmp_path / "chromium") as browser:
        page = Page(browser)
        page.load(daemon.url + "/")
        count = int(page.wait_for("document.documentElement.dataset.charts", time.monotonic() + 30))
        seen = drawn(page)
        text = page.evaluate("document.body.innerText")
        errors, requests = page.console_errors(), page.requests()
    assert 0 == daemon.stop()
    assert 5 == count == len(seen) and all(chart["canvas"] for chart in seen)
    assert "17920 = 280 \u00d7 64 tokens" in text and "Recent window: gw" in text
    assert [] == errors
    assert [daemon.url + "/"] == requests


@pytest.mark.slow
def test_every_sample_report_draws_what_it_holds_without_an_error(tmp_path: Path) -> None:
    """Each bundled sample's report, whatever its engine: every chart drawn with its data's series and
    points, no console error, no request but the file."""
    logs = sorted([*SAMPLES.glob("*.log"), *SAMPLES.glob("*.log.*.gz")])
    assert len(logs) > 40
    with Browser(tmp_path / "chromium") as browser:
        for log in logs:
            out = tmp_path / log.name
            out.mkdir()
            status, html = report(out, str(log))
            assert 0 == status, log.name
            page = Page(browser)
            url = (out / "report.html").as_uri()
            page.load(url)
            page.wait_for("document.documentElement.dataset.charts", time.monotonic() + 30)
            specs = charts(html)
            assert [(len(s["series"]), expected(s)) for s in specs] == [
                (d["series"], d["points"]) for d in drawn(page)
            ], log.name
            assert ([], [url]) == (page.console_errors(), page.requests()), log.name
            page.send("Page.close")
