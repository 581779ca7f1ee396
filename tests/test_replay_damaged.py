"""A cut or corrupt `.gz` replays every complete line before the damage, then names the file and the
compressed byte where reading stopped, and exits 4 (docs/replay.md's status for damaged input)."""

from __future__ import annotations

import gzip
import re
import subprocess
from pathlib import Path

import pytest
from corpora import sample

from kvwatch.cli import main
from kvwatch.replay.files import open_log
from kvwatch.sources.gziplog import CompressedDataError, GzipLog

ROTATED = sample("vllm-rotated.log.1.gz")


def zcat(path: Path) -> bytes:
    """What zcat recovers of a (perhaps damaged) gzip file, its complete lines only."""
    done = subprocess.run(["zcat", str(path)], capture_output=True, check=False, timeout=60)
    return done.stdout[: done.stdout.rfind(b"\n") + 1]


def read_all(path: Path, size: int) -> tuple[bytes, CompressedDataError | None]:
    """Everything replay's reader hands out, `size` bytes a read, and the damage it then raises."""
    out, lengths = bytearray(), []
    with open_log(str(path)) as stream:
        assert isinstance(stream, GzipLog)
        while True:
            try:
                data = stream.read(size)
            except CompressedDataError as damage:
                found: CompressedDataError | None = damage
                break
            if not data:
                found = None
                break
            out += data
            lengths.append(len(data))
    assert all(size == length for length in lengths[:-1])  # (short only at the end)
    return bytes(out), found


def replayed(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, int, str]:
    """(exit status, kvwatch_lines_total, stderr) of `kvwatch replay --format prom PATH`."""
    status = main(["replay", "--format", "prom", "--year", "2026", str(path)])
    out, err = capsys.readouterr()
    lines = re.search(r"^kvwatch_lines_total\{[^}]*\} (\S+)$", out, re.M)
    return status, int(float(lines[1])) if lines else 0, err


def test_a_cut_gzip_gives_what_zcat_recovers_at_every_cut(tmp_path: Path) -> None:
    """Cut at ~200 offsets (header, first block, later blocks, trailer): the bytes read are zcat's
    complete lines, and the damage is placed at the file's end."""
    whole = ROTATED.read_bytes()
    cut = tmp_path / "cut.log.gz"
    for end in [*range(2, 40), *range(40, len(whole), 53), len(whole) - 4, len(whole) - 1]:
        cut.write_bytes(whole[:end])
        for size in (1 << 20, 4096):
            data, damage = read_all(cut, size)
            assert zcat(cut) == data, (end, size)
            assert damage is not None and damage.cut and end == damage.offset, (end, damage)
            assert f"stops at byte {end}," in str(damage)


def test_a_whole_gzip_reads_whole_at_any_read_size(tmp_path: Path) -> None:
    """Undamaged, one member or several with gzip's zero padding after them: every byte, no damage."""
    text = gzip.decompress(ROTATED.read_bytes())
    two = tmp_path / "two.log.gz"
    two.write_bytes(gzip.compress(text[:5000], mtime=0) + gzip.compress(text[5000:], mtime=0) + b"\0" * 9)
    for path in (ROTATED, two):
        for size in (1, 777, 1 << 20):
            assert (text, None) == read_all(path, size)


@pytest.mark.parametrize("end", [2000, 5000, 7777, 10420])
def test_replay_of_a_cut_gzip_counts_zcats_lines_says_where_and_exits_4(
    end: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kvwatch replay` of a cut rotated vLLM log: zcat's complete lines, one line on stderr, status 4."""
    cut = tmp_path / "t.log.gz"
    cut.write_bytes(ROTATED.read_bytes()[:end])
    status, lines, err = replayed(cut, capsys)
    assert 4 == status
    assert zcat(cut).count(b"\n") == lines > 0
    assert [
        f"kvwatch: {cut}: the gzip data ends early: the file stops at byte {end}, inside compressed data;"
        " replayed the complete lines before it"
    ] == err.splitlines()


def test_a_bigger_log_cut_at_90_percent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 265 KB vLLM log, gzip'd and cut at 90%: zcat's complete lines are replayed, status 4."""
    text = gzip.decompress(ROTATED.read_bytes())
    packed = gzip.compress(text * (265_000 // len(text) + 1), mtime=0)
    cut = tmp_path / "big.log.gz"
    cut.write_bytes(packed[: len(packed) * 9 // 10])
    status, lines, err = replayed(cut, capsys)
    assert (4, zcat(cut).count(b"\n")) == (status, lines)
    assert lines > 0 and f"stops at byte {len(packed) * 9 // 10}," in err


def test_a_second_member_cut_keeps_the_first(tmp_path: Path) -> None:
    """A gzip of two members (`cat a.gz b.gz`), cut in the second: the first's lines, then the second's
    complete lines before the cut."""
    text = gzip.decompress(ROTATED.read_bytes())
    first = gzip.compress(text[:20000], mtime=0)
    both = first + gzip.compress(text[20000:], mtime=0)
    cut = tmp_path / "two.log.gz"
    cut.write_bytes(both[: len(first) + 900])
    data, damage = read_all(cut, 1 << 20)
    assert zcat(cut) == data and data.startswith(text[:20000]) and len(data) > 20000
    assert damage is not None and len(first) + 900 == damage.offset


def test_corrupt_data_stops_at_the_bad_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A byte overwritten mid-file: the complete lines decoded before deflate sees a bad code (those
    after the flipped byte may be garbled: only the CRC-32 at the member's end could tell), and the
    compressed byte where it did, at or after the flipped one; status 4."""
    whole = ROTATED.read_bytes()
    found = []
    for at in range(100, len(whole) - 8, 701):
        bad = tmp_path / f"bad{at}.log.gz"
        bad.write_bytes(whole[:at] + bytes([whole[at] ^ 0xFF]) + whole[at + 1 :])
        data, damage = read_all(bad, 1 << 20)
        if damage is None:  # (a flipped byte deflate still decodes: the trailer's CRC-32 catches it)
            continue
        found.append(damage)
        assert not damage.cut and data[-1:] in (b"", b"\n")
        assert at <= damage.offset <= len(whole), (at, damage)
        assert damage.offset < at + 64 or damage.reason == "incorrect data check", (at, damage)
    assert len(found) >= 5
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(whole[:3000] + b"\xff" * 20 + whole[3020:])
    status, lines, err = replayed(bad, capsys)
    assert 4 == status and lines > 0
    assert re.fullmatch(
        rf"kvwatch: {bad}: the gzip data is corrupt at byte 30\d\d \([^)]+\);"
        r" replayed the complete lines before it\n",
        err,
    ), err


def test_a_file_damaged_before_its_first_line_is_named_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cut inside the gzip header: no line, one message (the damage, not "no engine recognised"), 4."""
    cut = tmp_path / "t.log.gz"
    cut.write_bytes(ROTATED.read_bytes()[:15])
    status, lines, err = replayed(cut, capsys)
    assert (4, 0) == (status, lines)
    assert 1 == len(err.splitlines()) and "stops at byte 15," in err
