"""The live daemon and `kvwatch replay` choose the same engine for the same file, by one rule fed the
same lines (kvwatch.engines.detect), and so give the same metrics and alerts: on a vLLM log whose
first LMCache record comes before any line naming vLLM (an LMCache MP server's log, to a rule that
decides on the first line that matches), on a file that grows line by line, and on a file whose head
holds only lines that do not tell (the daemon decides once the log falls quiet and reads the source
again should the rule later choose otherwise).
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest
from corpora import SAMPLES, sample_logs
from daemon_helpers import Kvwatch, wait_until, write_config
from prometheus_client.parser import text_string_to_metric_families
from test_live_parity import compared

from kvwatch.cli import main
from kvwatch.daemon import sources
from kvwatch.daemon.sources import AutoParser
from kvwatch.engines import detect_engine, make_parser
from kvwatch.engines.detect import HEAD_LINES, Detector, detect_lines
from kvwatch.model import LogLine, SourceCounts
from kvwatch.parsers.base import ParserSettings
from kvwatch.parsers.run import SourceRun
from kvwatch.replay.files import detect_file, sniff_file

SETTINGS = ParserSettings(year=2026)
#: vLLM 0.26 with LMCache's remote connector, from its first LMCache record on (its start-up lines cut).
CARRIED = (SAMPLES / "lmcache-0.5.6-remote-write-only.log").read_text().splitlines()[8:]
NOISE = [f"starting worker {n}: loading shard {n} of 400" for n in range(400)]


def first_vllm_line(lines: list[str]) -> int:
    """The index of the first line vLLM's sniff needs (the first that tells the log is vLLM's)."""
    return next(n for n in range(len(lines)) if detect_engine("\n".join(lines[: n + 1])) == "vllm")


def test_a_carried_layers_first_lines_do_not_decide() -> None:
    """LMCache's records before vLLM's first line: the rule waits for the carrier, and says vLLM."""
    assert "LMCache" in CARRIED[0] and first_vllm_line(CARRIED) > 0
    assert "lmcache" == detect_engine(CARRIED[0])  # (what deciding on the first match took it for)
    assert "vllm" == detect_lines(CARRIED)
    detector = Detector()
    decided_at = next(n for n, text in enumerate(CARRIED) if detector.feed(text))
    assert ("vllm", first_vllm_line(CARRIED)) == (detector.engine, decided_at)
    assert "lmcache" == detect_lines(CARRIED[:2])  # (the whole input: an MP server's records alone)
    assert "lmcache" == detect_lines((SAMPLES / "lmcache-0.5.6-mp.log").read_text().splitlines())


def test_a_head_of_lines_that_tell_nothing_decides_when_full_or_at_the_end() -> None:
    """No engine recognises the head: the rule decides at HEAD_LINES lines or at the end of input."""
    detector = Detector()
    assert not any(detector.feed(text) for text in NOISE) and detector.end() is None
    detector = Detector()
    lines = [f"noise {n}" for n in range(HEAD_LINES)] + CARRIED
    assert [HEAD_LINES - 1] == [n for n, text in enumerate(lines) if detector.feed(text)][:1]
    assert detector.engine is None  # (the head told nothing: replay's fallback, and the daemon's)


def auto_engine(lines: list[str]) -> str | None:
    """The engine an auto parser fed the lines one by one settles on: a provisional choice confirmed or
    made again, the end of input at the latest."""
    auto = AutoParser("s", SETTINGS)
    for text in lines:
        auto.parse(LogLine("s", text, None))
        if auto.again is not None:
            auto.redo()
        if auto.engine is not None and not auto.provisional:
            return auto.engine
    auto.flush()
    if auto.again is not None:
        auto.redo()
    return auto.engine


@pytest.mark.parametrize(
    "name", [log.name for log in sample_logs(rotated=False) if sniff_file(str(log))[0] == "plain"]
)
def test_the_daemon_and_replay_choose_alike_for_every_plain_sample(name: str, tmp_path: Path) -> None:
    """Every plain sample, as it is and behind its lines' cut or a head of noise: the same engine."""
    lines = (SAMPLES / name).read_text(errors="replace").splitlines()
    for variant in (lines, lines[5:], NOISE[:50] + lines):
        path = tmp_path / "log"
        path.write_text("\n".join(variant) + "\n")
        assert detect_file(str(path)) == auto_engine(variant) or (
            detect_file(str(path)) is None and auto_engine(variant) == "vllm"  # (both: the fallback)
        ), name


def test_a_carried_engines_line_parses_at_once_then_again_when_the_rule_chooses_otherwise() -> None:
    """LMCache's first record: parsed as LMCache's at once, provisionally; once a vLLM line decides the
    rule, every line is parsed again as vLLM's, and the counts end as a vLLM parser's."""
    auto = AutoParser("s", SETTINGS)
    run = SourceRun("s", auto, SourceCounts())
    lines = [LogLine("s", text, None) for text in CARRIED]
    for line in lines[:2]:
        run.take(line)
    assert ("lmcache", True, True) == (auto.engine, auto.provisional, auto.holding)
    run.counts.add(auto.settle())
    upto = first_vllm_line(CARRIED) + 1
    for line in lines[2:upto]:
        run.take(line)
    assert "vllm" == auto.again
    redone = auto.redo()
    run.counts.add(auto.settle())
    assert ("vllm", False, False) == (auto.engine, auto.provisional, auto.holding) and auto.markers
    named = SourceRun("s", make_parser("vllm", "s", SETTINGS), SourceCounts())
    events = [event for line in lines[:upto] for event in named.take(line)]
    assert events == redone
    assert (named.counts.lines, named.counts.recognized, named.counts.errors) == (
        run.counts.lines,
        run.counts.recognized,
        run.counts.errors,
    )


def test_lines_that_name_no_engine_are_held_until_the_log_falls_quiet() -> None:
    """A head no sniff names an engine for is held (nothing parsed, no position saved) until QUIET
    seconds pass without a line; then it is decided on, provisionally (vLLM, as replay's fallback)."""
    now = [0.0]
    auto = AutoParser("s", SETTINGS, clock=lambda: now[0])
    for text in NOISE[:20]:
        assert auto.parse(LogLine("s", text, None)) is None
    now[0] = sources.QUIET - 0.1
    assert [] == auto.drain() and (None, True) == (auto.engine, auto.holding)
    now[0] = sources.QUIET
    auto.drain()
    assert ("vllm", True) == (auto.engine, auto.provisional)


@pytest.mark.slow  # a quiet spell (kvwatch.daemon.sources.QUIET) and a file grown line by line: ~30 s
def test_the_daemon_following_tricky_heads_gives_what_replay_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LMCache's lines before vLLM's (written whole, and grown line by line), a head of noise, and a
    head of LMCache lines alone that falls quiet before the rest is written, each followed by its own
    daemon as an `auto` file source: each ends with the engine, metrics and alerts replay gives for the
    final file. (The log's year is next year's: its event time stays ahead of the wall clock, so the
    daemon's detectors run on the event-time grid replay's run on, quiet spell or not.)"""
    year = str(datetime.now(timezone.utc).year + 1)
    files = {"whole": CARRIED, "slow": CARRIED, "noisy": NOISE[:300] + CARRIED, "quiet": CARRIED}
    paths = {name: tmp_path / f"{name}.log" for name in files}
    paths["whole"].write_text("\n".join(CARRIED) + "\n")
    paths["noisy"].write_text("\n".join(files["noisy"]) + "\n")
    paths["quiet"].write_text("\n".join(CARRIED[:2]) + "\n")
    paths["slow"].write_text("")
    daemons = {}
    for name, path in paths.items():
        body = (
            f'[[source]]\nname = "{name}"\nengine = "auto"\ntype = "file"\npath = "{path}"\n'
            f'start_at = "beginning"\nyear = {year}\n'
        )
        config = write_config(tmp_path / f"{name}.toml", body, tmp_path / f"{name}.state")
        daemons[name] = Kvwatch(["--config", str(config)], tmp_path / f"{name}.err")
    stop = threading.Event()

    def grow() -> None:
        with paths["slow"].open("a") as out:
            for text in CARRIED:
                out.write(text + "\n")
                out.flush()
                if stop.wait(0.02):
                    return

    def live(name: str) -> str:
        return daemons[name].get("/metrics")[2]

    def families(name: str) -> set[str]:  # (kvwatch_<this>_...: the engine whose families it fed)
        return {key[0].split("_")[1] for key in compared(live(name))}

    writer = threading.Thread(target=grow)
    writer.start()
    try:
        # The quiet head is read and, once quiet, taken for an LMCache MP server's log (all it shows).
        wait_until(
            lambda: families("quiet") >= {"lmcache"} and "vllm" not in families("quiet"),
            timeout=3 * sources.QUIET + 10,
            what="the quiet head decided",
        )
        assert 2 == compared(live("quiet"))[("kvwatch_lines_total", (("source", "quiet"),))]
        with paths["quiet"].open("a") as out:
            out.write("\n".join(CARRIED[2:]) + "\n")
        writer.join()
        for name, path in paths.items():
            assert 0 == main(["replay", "--format", "prom", "--year", year, "--source", name, str(path)])
            expected = capsys.readouterr().out
            assert ("kvwatch_vllm_stats_lines_total", (("engine", "0"), ("source", name))) in compared(
                expected
            )
            fired = alerts(expected)
            assert fired  # (write_only_offload: what vLLM's view of the log shows)
            try:
                wait_until(lambda: compared(expected) == compared(live(name)), 40, f"{name} read")  # noqa: B023
            finally:
                assert compared(expected) == compared(live(name)), name  # (what differs, if anything)
            wait_until(lambda: alerts(live(name)) == fired, what=f"{name}'s alerts")  # noqa: B023
    finally:
        stop.set()
        writer.join()
        codes = {name: kv.stop() for name, kv in daemons.items()}
    assert {name: 0 for name in daemons} == codes


def alerts(exposition: str) -> set[tuple[tuple[str, str], ...]]:
    """The alerts that fired (a series stays, at 0, once resolved); no_signal left out: a daemon
    judges silence at the wall clock's time."""
    out = set()
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == "kvwatch_alert_firing" and sample.labels.get("alert") != "no_signal":
                out.add(tuple(sorted(sample.labels.items())))
    return out
