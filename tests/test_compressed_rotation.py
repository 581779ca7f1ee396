"""A file rotated and gzipped while kvwatch was down is read on from its saved offset, decompressed; a gzip
file cut short (the node lost power while it was being compressed) yields every complete line before the
cut, says which file and where, and the lines of the file after it still come."""

from __future__ import annotations

import gzip
import logging
import random
from pathlib import Path

import pytest

from kvwatch.sources.filetail import FileTail
from kvwatch.sources.positions import FilePosition


def lines(first: int, last: int) -> list[bytes]:
    """Numbered lines of random letters and varied lengths (compressed, they take some room)."""
    rng = random.Random(first)
    letters = "abcdefghijklmnopqrstuvwxyz "
    return [
        f"line {n} {''.join(rng.choices(letters, k=rng.randrange(0, 3000)))}".encode()
        for n in range(first, last + 1)
    ]


def read_all(tail: FileTail) -> list[bytes]:
    """Poll until a poll returns nothing."""
    out: list[bytes] = []
    while got := tail.poll_raw():
        out += got
    return out


def rotated_while_down(tmp_path: Path, cut: bool) -> tuple[FileTail, list[bytes], Path]:
    """A tail reads lines 1-100 and is stopped; lines 101-200 are written, the file is renamed as the
    kubelet does and gzipped (the .gz `cut` to half when asked), lines 201-210 go to a new live file;
    a tail resumed from the saved position, the lines it had not read, the .gz's path."""
    live = tmp_path / "0.log"
    live.write_bytes(b"".join(line + b"\n" for line in lines(1, 100)))
    tail = FileTail(live, "s", start_at="beginning")
    assert read_all(tail) == lines(1, 100)
    saved: list[FilePosition] = tail.position()
    tail.close()
    with live.open("ab") as out:
        out.write(b"".join(line + b"\n" for line in lines(101, 200)))
    rotated = tmp_path / "0.log.20260820-093001"
    live.rename(rotated)
    packed = gzip.compress(rotated.read_bytes())
    zipped = rotated.with_name(rotated.name + ".gz")
    zipped.write_bytes(packed[: len(packed) // 2] if cut else packed)
    rotated.unlink()
    live.write_bytes(b"".join(line + b"\n" for line in lines(201, 210)))
    return FileTail(live, "s", saved=saved), lines(101, 200) + lines(201, 210), zipped


def test_a_file_gzipped_while_kvwatch_was_down_is_read_on_from_its_offset(tmp_path: Path) -> None:
    """The lines written after the saved offset come from the .gz, then the new file's: none lost or
    repeated."""
    tail, unread, _ = rotated_while_down(tmp_path, cut=False)
    assert read_all(tail) == unread


def test_a_cut_gzip_file_yields_its_complete_lines_and_says_where_it_stops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A .gz cut in half: the lines before the cut come whole and in order (the line the cut fell in is
    dropped, not half-read), a warning names the file and where its data ends, then the new file's lines
    come."""
    tail, unread, zipped = rotated_while_down(tmp_path, cut=True)
    with caplog.at_level(logging.WARNING, logger="kvwatch.sources.compressed"):
        got = read_all(tail)
    from_gz, from_live = got[:-10], got[-10:]
    assert from_live == unread[-10:]
    assert 0 < len(from_gz) < 100 and from_gz == unread[: len(from_gz)]
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith(
        f"{zipped}: the gzip data ends early: the file stops at byte {zipped.stat().st_size}"
    )
