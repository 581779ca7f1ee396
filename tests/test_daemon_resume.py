"""A restart in the middle of a llama.cpp request: the record comes out whole, no line counted twice."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpora import sample_logs
from daemon_helpers import ROOT, Kvwatch, file_source, wait_until, write_config
from prometheus_client.parser import text_string_to_metric_families

from kvwatch.engines.llamacpp.parser import LlamacppParser
from kvwatch.model import LogLine
from kvwatch.parsers.base import ParserSettings

SAMPLE = ROOT / "samples" / "llamacpp-healthy-two-slots.log"
#: What a record straddling the restart changes when its first lines are lost: its pick (LCP
#: similarity), its exact prompt and reused counts (else derived from the timings).
TOTALS = (
    "kvwatch_llamacpp_requests_total",
    "kvwatch_llamacpp_prompt_tokens_total",
    "kvwatch_llamacpp_cached_tokens_total",
    "kvwatch_llamacpp_slot_similarity_ratio_count",
)


def sample_lines() -> list[str]:
    """The sample's lines, and where to cut it: inside task 26's request (after `new prompt`)."""
    return SAMPLE.read_text().splitlines()


def cut_index(lines: list[str]) -> int:
    """The first line after task 26's `new prompt`: its pick and prompt come before, its end after."""
    return next(i for i, t in enumerate(lines) if "task 26 | new prompt" in t) + 1


def replayed(path: Path, source: str) -> dict[str, float]:
    """TOTALS and kvwatch_lines_total of `kvwatch replay` over the whole file."""
    argv = [sys.executable, "-m", "kvwatch", "replay", "--format", "prom", "--engine", "llamacpp"]
    done = subprocess.run([*argv, "--source", source, str(path)], capture_output=True, text=True, check=True)
    return totals(done.stdout, source)


def totals(exposition: str, source: str) -> dict[str, float]:
    """TOTALS and kvwatch_lines_total of `source` in a Prometheus exposition."""
    wanted = {*TOTALS, "kvwatch_lines_total"}
    found = {name: 0.0 for name in wanted}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name in wanted and sample.labels.get("source") == source:
                found[sample.name] = float(sample.value)
    return found


def scraped(kv: Kvwatch, source: str) -> dict[str, float]:
    """TOTALS and kvwatch_lines_total of `source` as the daemon exposes them now."""
    return totals(kv.get("/metrics")[2], source)


def summed(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """Two runs' counters added up (what Prometheus' increase() over both sees)."""
    return {name: a[name] + b[name] for name in a}


def saved(state: Path, source: str) -> dict[str, Any]:
    """The source's position file ({} while none)."""
    try:
        data: dict[str, Any] = json.loads((state / "positions" / f"{source}.json").read_text())
    except FileNotFoundError:
        return {}
    return data


def file_offset(state: Path, source: str) -> int:
    """The offset saved for a file source's only file (0 while none)."""
    files = saved(state, source).get("files", {})
    return int(next(iter(files.values()))[-1]["offset"]) if files else 0


@pytest.mark.slow  # a parse of the rest of the file at every line of every sample: ~12 s
@pytest.mark.parametrize("name", [p.name for p in sample_logs("llamacpp-", rotated=False)])
def test_a_saved_parser_state_goes_on_as_if_never_stopped(name: str) -> None:
    """At every line of every llama.cpp sample: snapshot (through JSON), restore, parse the rest."""
    lines = (ROOT / "samples" / name).read_text().splitlines()
    settings = ParserSettings(year=2026, now_year=2026, tz="UTC", start=1.7e9)

    def parse(parser: LlamacppParser, texts: list[str]) -> list[object]:
        events: list[object] = []
        for text in texts:
            result = parser.parse(LogLine("s", text))
            events += result if isinstance(result, list) else []
        return events

    whole = parse(LlamacppParser("s", settings), lines)
    for cut in range(len(lines) + 1):
        first = LlamacppParser("s", settings)
        head = parse(first, lines[:cut])
        second = LlamacppParser("s", settings)
        second.restore(json.loads(json.dumps(first.snapshot())))
        assert whole == head + parse(second, lines[cut:]), cut


def test_a_malformed_parser_state_is_refused() -> None:
    """A state of another engine, or torn, raises (the daemon then starts the parser afresh)."""
    settings = ParserSettings(year=2026, now_year=2026, tz="UTC", start=0.0)
    parser = LlamacppParser("s", settings)
    state = parser.snapshot()
    for bad in ({**state, "engine": "vllm"}, {**state, "streams": [[None, {"anchor": 1.0}]]}, {}):
        with pytest.raises((KeyError, TypeError, ValueError)):
            LlamacppParser("s", settings).restore(bad)


def restarted_mid_request(
    tmp_path: Path,
    sig: int,
    source_table: str,
    write: Callable[[list[str]], None],
    synced: Callable[[Path], bool],
) -> tuple[dict[str, float], dict[str, float]]:
    """Write the sample up to the cut, run until its position is saved, stop with `sig`, write the rest,
    run again: (the two runs' counters summed, what the second run alone counted)."""
    lines = sample_lines()
    cut = cut_index(lines)
    state = tmp_path / "state"
    cfg = write_config(tmp_path / "kv.toml", source_table, state)
    args = ["--config", str(cfg), "--sync-interval", "0.2"]
    write(lines[:cut])
    first = Kvwatch(args, tmp_path / "run1.err")
    wait_until(lambda: first.lines("llama") == cut, 20.0, "the first part processed")
    wait_until(lambda: synced(state), 20.0, "its position saved")
    before = scraped(first, "llama")
    assert "parser" in saved(state, "llama")
    assert (-sig if sig == signal.SIGKILL else 0) == first.stop(sig)
    write(lines[cut:])
    second = Kvwatch(args, tmp_path / "run2.err")
    wait_until(lambda: second.lines("llama") == len(lines) - cut, 20.0, "the second part processed")
    after = scraped(second, "llama")
    assert 0 == second.stop()
    return summed(before, after), after


def append_text(path: Path) -> Callable[[list[str]], None]:
    """A writer appending lines to a plain file."""

    def write(lines: list[str]) -> None:
        with path.open("a") as out:
            out.writelines(f"{line}\n" for line in lines)

    return write


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_file_source_restarted_mid_request_emits_it_whole(tmp_path: Path, sig: int) -> None:
    """kill -9 (or SIGTERM) between a request's lines: replay's totals, every line counted once."""
    log = tmp_path / "llama.log"
    log.touch()
    source = file_source("llama", log, engine="llamacpp")
    both, _ = restarted_mid_request(
        tmp_path,
        sig,
        source,
        append_text(log),
        lambda state: file_offset(state, "llama") == log.stat().st_size,
    )
    assert replayed(SAMPLE, "llama") == both


@pytest.mark.slow
def test_a_docker_source_killed_mid_request_emits_it_whole(tmp_path: Path) -> None:
    """The same through a container's json-file log: entries around a kill -9."""
    from test_docker_source import Container

    root = tmp_path / "docker"
    box = Container(root, "llama", "2026-08-18T00:00:00.1Z")
    source = (
        '[[source]]\nname = "llama"\nengine = "llamacpp"\ntype = "docker"\ncontainer = "llama"\n'
        f'docker_root = "{root}"\nstart_at = "beginning"\n'
    )

    def write(lines: list[str]) -> None:
        for line in lines:
            box.line(line)

    def synced(state: Path) -> bool:
        files = saved(state, "llama").get("files", [])
        return bool(files) and int(files[-1]["offset"]) == box.log_path.stat().st_size

    both, _ = restarted_mid_request(tmp_path, signal.SIGKILL, source, write, synced)
    assert replayed(SAMPLE, "llama") == both


@pytest.mark.slow
def test_a_journald_source_killed_mid_request_emits_it_whole(tmp_path: Path) -> None:
    """The same through journal entries read by cursor: entries around a kill -9."""
    from test_journald_source import Journal
    from test_journald_source import write as write_journal

    path = tmp_path / "llama.journal"
    journal = Journal()
    source = (
        '[[source]]\nname = "llama"\nengine = "llamacpp"\ntype = "journald"\nunit = "llama.service"\n'
        f'file = "{path}"\nstart_at = "beginning"\n'
    )

    def write(lines: list[str]) -> None:
        write_journal(path, [journal.entry(line, _SYSTEMD_UNIT="llama.service") for line in lines])

    def synced(state: Path) -> bool:
        argv = ["journalctl", f"--file={path}", "--output=json", "--lines=1", "--no-pager"]
        last = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
        return saved(state, "llama").get("cursor") == last["__CURSOR"]

    both, _ = restarted_mid_request(tmp_path, signal.SIGKILL, source, write, synced)
    assert replayed(SAMPLE, "llama") == both
