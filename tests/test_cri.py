"""Kubernetes container logs (CRI framing): told by content, pieces joined, both runtimes' times, both
streams; every sample framed so replays as the unframed log does."""

from __future__ import annotations

import gzip
from datetime import datetime, timezone
from pathlib import Path

import pytest
from corpora import sample_logs
from cri_helpers import Line, cri_line, framed, sample_lines, stamp

from kvwatch.cli import main
from kvwatch.model import LogLine
from kvwatch.sources.cri import CriJoiner, SavedCriJoiner, looks_like_cri, split_cri
from kvwatch.sources.fileframing import FileFraming
from kvwatch.sources.framing import Framer, Malformed, sniff
from kvwatch.sources.openfile import FileCounters
from kvwatch.times import parse_rfc3339

WHEN = datetime(2026, 8, 20, 9, 30, 1, 500000, tzinfo=timezone.utc)
START = datetime(2026, 8, 20, tzinfo=timezone.utc)
#: Samples whose replay reads the transport time of some lines (a gateway's rows that are no requests
#: take it): framed, they are compared with the same lines and times as a json-file log instead.
TRANSPORT_TIMED = {"usage-newapi.log"}


def test_both_runtimes_times_are_read() -> None:
    """containerd's trimmed `Z` time and CRI-O's nine digits with an offset give the same instant."""
    containerd = split_cri(b"2026-08-20T09:30:01.5Z stderr F INFO hello")
    crio = split_cri(b"2026-08-20T09:30:01.500000000+00:00 stderr F INFO hello")
    zoned = split_cri(b"2026-08-20T11:30:01.500000000+02:00 stdout F INFO hello")
    whole = split_cri(b"2026-08-20T09:30:01Z stdout F ")
    assert containerd is not None and crio is not None and zoned is not None and whole is not None
    assert containerd.time == crio.time == zoned.time == WHEN.timestamp()
    assert (containerd.stream, containerd.partial, containerd.message) == ("stderr", False, b"INFO hello")
    assert (zoned.stream, whole.message, whole.time) == ("stdout", b"", WHEN.timestamp() - 0.5)
    assert stamp(WHEN, "containerd") == "2026-08-20T09:30:01.5Z"
    assert stamp(WHEN, "cri-o") == "2026-08-20T09:30:01.500000000+00:00"


def test_containerds_times_read_the_same_as_any_rfc3339_time() -> None:
    """containerd's lines (read by one match, their second's value kept) give the very float the general
    RFC 3339 reader gives, for every length of fraction, across seconds, days and a leap day."""
    for second in (
        "2026-08-20T09:30:01",
        "2026-08-20T09:30:02",
        "2028-02-29T23:59:59",
        "2026-12-31T00:00:00",
    ):
        for fraction in ("", "5", "05", "123", "000001", "123456789", "999999999", "100000000"):
            text = second + (f".{fraction}" if fraction else "") + "Z"
            piece = split_cri(f"{text} stdout F INFO hello".encode())
            assert piece is not None and piece.time == parse_rfc3339(text), text
    assert split_cri(b"2026-02-30T09:30:01.5Z stdout F hello") is None  # (no such day: cached as none)
    assert split_cri(b"2026-02-30T09:30:01.6Z stdout F hello") is None


def test_lines_that_are_not_cri_are_refused() -> None:
    """A plain line, a `docker logs -t` line, a bad time or stream is no CRI line."""
    for raw in (
        b"INFO 08-20 09:30:01 hello",
        b"2026-08-20T09:30:01.5Z hello",
        b"2026-13-40T09:30:01.5Z stdout F hello",
        b"2026-08-20T09:30:01.5Z stdin F hello",
        b"2026-08-20T09:30:01.5Z stdout X hello",
    ):
        assert split_cri(raw) is None, raw


def test_pieces_are_joined_per_stream_as_bytes() -> None:
    """`P` pieces join with their `F`, per stream, in bytes (a piece may end inside a character); the
    time is the first piece's; a tag's extra fields after `:` are ignored."""
    joiner = CriJoiner()
    text = "缓存命中 " * 5
    data = text.encode()
    lines = [
        b"2026-08-20T09:30:01.5Z stdout P " + data[:7],
        b"2026-08-20T09:30:01.6Z stderr F other",
        b"2026-08-20T09:30:01.7Z stdout P:x " + data[7:20],
        b"2026-08-20T09:30:01.8Z stdout F " + data[20:],
    ]
    out = [joiner.add(piece) for piece in map(split_cri, lines) if piece is not None]
    assert out == [None, ("other", WHEN.timestamp() + 0.1), None, (text, WHEN.timestamp())]
    assert not joiner.busy


def test_a_joined_line_past_the_cap_keeps_head_and_tail() -> None:
    """A line of many pieces longer than the cap is cut once, keeping its head and tail."""
    joiner = CriJoiner(max_line=1000)
    raw = cri_line(b"head" + b"x" * 5000 + b"tail", "stdout", WHEN, "containerd", split=300)
    results = [joiner.add(p) for p in (split_cri(r) for r in raw.splitlines()) if p is not None]
    line = results[-1]
    assert line is not None and line[0].startswith("head") and line[0].endswith("tail")
    assert len(line[0]) == 1000 and joiner.truncated == 1


def test_sniff_tells_cri_from_docker_logs_t_and_plain() -> None:
    """Content tells the framing: CRI lines, `docker logs -t` lines, plain text."""
    cri = cri_line(b"INFO hello", "stdout", WHEN, "containerd") * 3
    assert looks_like_cri(cri) and sniff(cri) == "cri"
    assert sniff(cri_line(b"x", "stderr", WHEN, "cri-o") * 3) == "cri"
    assert sniff(b"2026-08-20T09:30:01.500000000Z INFO hello\n" * 3) == "docker-t"
    assert sniff(b"INFO 08-20 09:30:01 hello\n") == "plain"


def test_framer_counts_lines_without_markers_and_malformed_ones() -> None:
    """Replay's framer: a full line without a marker is counted, a split one joined first, a line that is
    no CRI line malformed, a line whose `F` never came still a line at the end."""
    framer = Framer("s", "cri", ("Avg prompt",), 1 << 20)
    data = (
        cri_line(b"INFO nothing here", "stdout", WHEN, "containerd")
        + cri_line(b"INFO Avg prompt throughput: 1", "stderr", WHEN, "containerd", split=10)
        + b"garbage\n"
        + b"2026-08-20T09:30:01.5Z stdout P Avg prompt"
        + b"\n"
    )
    batches = framer.chunk(data)
    assert batches == [
        1,
        LogLine("s", "INFO Avg prompt throughput: 1", WHEN.timestamp()),
        Malformed("not a CRI log line"),
    ]
    assert framer.finish() == [LogLine("s", "Avg prompt", WHEN.timestamp())]


def test_a_split_line_read_before_a_restart_is_joined_after_it() -> None:
    """The daemon's framing keeps a split line's pieces in the saved position: after a restart the line
    is joined whole, not lost and not parsed in halves."""
    raw = cri_line("INFO 命中 Avg prompt".encode() * 40, "stderr", WHEN, "containerd", split=50).splitlines()
    counters = FileCounters()
    before = FileFraming("s", 1 << 20, counters, markers=("Avg prompt",))
    assert before.frame(raw[:5]) == []
    assert before.framing == "cri"
    saved = before.lines.pending()
    assert len(saved) == 5
    after = FileFraming("s", 1 << 20, counters, pending=saved, markers=("Avg prompt",))
    assert isinstance(after.lines, SavedCriJoiner)
    (line,) = after.frame(raw[5:])
    assert line == LogLine("s", "INFO 命中 Avg prompt" * 40, WHEN.timestamp())
    assert counters.malformed == 0


def replay(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`kvwatch replay --format prom` of a file, as source `s`."""
    assert 0 == main(["replay", "--format", "prom", "--year", "2026", "--source", "s", str(path)])
    return capsys.readouterr().out


def unframed_replay(log: Path, lines: list[Line], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """What a framed copy of `log` must replay to: the sample's own replay, or, where its lines' times
    come from a transport prefix the framing replaces, the replay of its json-file copy."""
    if log.name not in TRANSPORT_TIMED:
        return replay(log, capsys)
    reference = tmp_path / "docker" / log.name.removesuffix(".gz").removesuffix(".1")
    reference.parent.mkdir()
    reference.write_bytes(framed(lines, "docker-json", START))
    return replay(reference, capsys)


@pytest.mark.parametrize("log", sample_logs(), ids=lambda p: p.name)
def test_every_sample_framed_by_either_runtime_replays_as_the_unframed_log(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Framed as containerd writes it (lines past 16 KiB split, and every line past 100 bytes split in
    a second copy) and as CRI-O does, a sample replays to the metrics and alerts of the unframed log
    (every third plain line on stderr); compressed too."""
    lines = [
        (message, "stderr" if not when and index % 3 == 1 else stream, when)
        for index, (message, stream, when) in enumerate(sample_lines(log))
    ]
    assert lines
    name = log.name.removesuffix(".gz").removesuffix(".1")
    expected = unframed_replay(log, lines, tmp_path, capsys)
    for runtime, split in (("containerd", 16384), ("containerd", 100), ("cri-o", 16384)):
        path = tmp_path / f"{runtime}-{split}" / name
        path.parent.mkdir()
        path.write_bytes(framed(lines, runtime, START, split))  # type: ignore[arg-type]
        assert replay(path, capsys) == expected, (runtime, split)
    zipped = tmp_path / "gz" / (name + ".1.gz")
    zipped.parent.mkdir()
    zipped.write_bytes(gzip.compress(framed(lines, "cri-o", START, 100)))
    assert replay(zipped, capsys) == expected
