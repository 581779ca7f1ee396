"""Docker json-file, `docker logs -t` and plain framing; the chunk path equals the line path."""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path

import pytest

from kvwatch.model import LogLine
from kvwatch.replay import files as wholefile
from kvwatch.replay.files import batches, open_log, source_name
from kvwatch.sources.docker_json import DOCKER_SPLIT, decode_entry, simple_entry, split_logs_t
from kvwatch.sources.framing import Batch, Block, Framer, Malformed, sniff
from kvwatch.sources.linecap import clip_bytes
from kvwatch.times import parse_rfc3339

MARKERS = ("throughput:", "KV Transfer")
STATS = "INFO 08-18 01:22:08 [loggers.py:310] Engine 000: Avg prompt throughput: 1.0 tokens/s"


def moby(log: str, time: str = "2026-08-18T01:22:08.5Z", stream: str = "stdout") -> bytes:
    """One json-file entry as moby writes it (`<>&` escaped, non-ASCII raw)."""
    body = json.dumps(log, ensure_ascii=False)
    body = body.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return ('{"log":' + body + ',"stream":"' + stream + '","time":"' + time + '"}').encode()


def expand(items: Iterable[Batch]) -> Iterator[Batch]:
    """A Block as the lines it stands for: a LogLine where a marker is, else one skipped line."""
    for item in items:
        if isinstance(item, Block):
            for text in item.texts:
                yield LogLine("s", text) if any(m in text for m in MARKERS) else 1
        else:
            yield item


def normal(items: Iterable[Batch]) -> list[object]:
    """Merge adjacent skip counts so two framings of the same data compare equal."""
    out: list[object] = []
    for item in expand(items):
        if isinstance(item, int) and out and isinstance(out[-1], int):
            out[-1] += item
        else:
            out.append(item)
    return out


def both_paths(framing: str, data: bytes) -> tuple[list[object], list[object]]:
    """Frame data once line by line and once as one chunk."""
    by_line = Framer("s", framing, MARKERS, 1 << 20)  # type: ignore[arg-type]
    line_out = [b for raw in data.split(b"\n")[:-1] for b in by_line.feed(raw)]
    by_chunk = Framer("s", framing, MARKERS, 1 << 20)  # type: ignore[arg-type]
    return normal(line_out), normal(by_chunk.chunk(data))


def test_json_file_split_line_is_joined() -> None:
    """Entries without a trailing newline are joined until one ends in `\\n`; time of the first."""
    long_text = "x" * 20000 + " throughput: é<&>"
    raw = long_text.encode()
    first, second = raw[:DOCKER_SPLIT], raw[DOCKER_SPLIT:]
    data = (
        moby(first.decode("utf-8", "replace"), "2026-08-18T01:22:08Z")
        + b"\n"
        + moby(second.decode("utf-8", "replace") + "\n", "2026-08-18T01:22:09.1Z")
        + b"\n"
        + moby("access line\n")
        + b"\n"
    )
    line_path, chunk_path = both_paths("docker-json", data)
    assert line_path == chunk_path
    assert isinstance(line_path[0], LogLine)
    assert (long_text, 1787016128.0) == (line_path[0].text, line_path[0].time)
    assert 1 == line_path[1]


def test_json_file_escapes_and_crlf() -> None:
    """moby's `\\u001b`, `\\r\\n` and raw UTF-8 decode to the original text."""
    data = moby("\x1b[1;36m(APIServer pid=1)\x1b[0;0m " + STATS + " ü\r\n") + b"\n"
    (line,) = both_paths("docker-json", data)[0]
    assert isinstance(line, LogLine)
    assert "\x1b[1;36m(APIServer pid=1)\x1b[0;0m " + STATS + " ü" == line.text


def test_json_that_is_not_docker_is_malformed() -> None:
    """JSON of another shape, and a torn entry, are counted as malformed, never fatal."""
    data = b'{"msg": "throughput: 1"}\n{"log":"INFO throughput: 1\\n","stream":"std\n' + moby("ok\n") + b"\n"
    line_path, chunk_path = both_paths("docker-json", data)
    assert line_path == chunk_path
    assert [Malformed("not a docker json-file entry")] * 2 + [1] == line_path


def test_chunk_and_line_paths_agree_on_mixed_data() -> None:
    """Fast and exact paths give identical batches for plain and json-file data."""
    plain = b"".join(
        (STATS + f" {i}\n").encode() if i % 7 == 0 else f"access {i}\n".encode() for i in range(200)
    )
    assert both_paths("plain", plain)[0] == both_paths("plain", plain)[1]
    docker = b"".join(moby((STATS if i % 5 == 0 else "x") + f" {i}\n") + b"\n" for i in range(200))
    line_path, chunk_path = both_paths("docker-json", docker)
    assert line_path == chunk_path
    assert 40 == sum(1 for item in line_path if isinstance(item, LogLine))


def test_logs_t_prefix_and_glued_timestamps() -> None:
    """`docker logs -t` time is the transport time; glued stamps at 16 KiB are removed."""
    stamp = b"2026-08-18T01:22:08.123456789Z "
    text = b"a" * DOCKER_SPLIT + stamp + b"b" * 10
    body, when = split_logs_t(stamp + text)
    assert (b"a" * DOCKER_SPLIT + b"b" * 10, 1787016128.1234567) == (body, round(when or 0, 7))


def test_sniff() -> None:
    """Framing is told by content."""
    assert "docker-json" == sniff(moby("x\n") + b"\n")
    assert "docker-t" == sniff(b"2026-08-18T01:22:08.123456789Z hello\n" * 3)
    assert "plain" == sniff(b"INFO 08-18 01:22:08 hello\n")


def test_gzip_is_detected_by_content(tmp_path: Path) -> None:
    """A gzip file is read decompressed whatever its name."""
    path = tmp_path / "vllm.log.1"
    path.write_bytes(gzip.compress((STATS + "\nother\n").encode(), mtime=0))
    with open_log(str(path)) as stream:
        out = normal(chain.from_iterable(batches(stream, Framer("s", "plain", MARKERS, 1 << 20), 1 << 20)))
    assert [LogLine("s", STATS), 1] == out


def test_overlong_line_is_cut_and_counted(tmp_path: Path) -> None:
    """A 10 MB line keeps its head, is counted once as truncated, and memory stays bounded."""
    path = tmp_path / "big.log"
    path.write_bytes(b"throughput: " + b"z" * (10 << 20) + b"\n" + STATS.encode() + b"\n")
    framer = Framer("s", "plain", MARKERS, 1 << 16)
    with open_log(str(path)) as stream:
        out = list(expand(chain.from_iterable(batches(stream, framer, 1 << 16))))
    lines = [item for item in out if isinstance(item, LogLine)]
    assert (2, 1 << 16, 1) == (len(lines), len(lines[0].text), framer.truncated)


def test_non_utf8_bytes_are_replaced() -> None:
    """Invalid UTF-8 never raises: it becomes U+FFFD."""
    framer = Framer("s", "plain", MARKERS, 1 << 20)
    (line,) = framer.feed(b"throughput: \xff\xfe")
    assert isinstance(line, LogLine) and "throughput: \ufffd\ufffd" == line.text


def test_file_ending_mid_entry_still_counts(tmp_path: Path) -> None:
    """A last line without newline is still a line; a cut docker entry is malformed."""
    path = tmp_path / "cut.log"
    path.write_bytes(moby(STATS + "\n") + b'\n{"log":"INFO throughput: 1')
    framer = Framer("s", "docker-json", MARKERS, 1 << 20)
    with open_log(str(path)) as stream:
        out = list(chain.from_iterable(batches(stream, framer, 1 << 20)))
    assert [LogLine, Malformed] == [type(item) for item in out]


def test_source_names() -> None:
    """Rotation and compression suffixes are stripped from the source name."""
    assert ["vllm", "vllm", "abc", "llama-server"] == [
        source_name(p) for p in ("vllm.log.1.gz", "/x/vllm.log", "abc-json.log.3", "llama-server.log")
    ]


def test_simple_entry_reads_what_json_loads_reads() -> None:
    """The sliced fast decode equals json.loads on every entry it accepts, over awkward characters."""
    rng = random.Random(7)
    alphabet = ["a", " ", '"', "\\", "\x7f", "\x85", "\u2028", "é", "\t", "\r", "<", "&", "€", "\x00", "/"]
    accepted = 0
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 8))) + rng.choice(["\n", ""])
        raw = moby(text, rng.choice(["2026-08-18T01:22:08.5Z", "2026-08-18T01:22:08Z", "x\x7f"]))
        if rng.random() < 0.3:  # invalid UTF-8 inside the value
            raw = raw.replace(b"a", b"\xff", 1)
        simple = simple_entry(raw, 0, len(raw))
        exact = decode_entry(raw)
        if simple is None:
            continue
        accepted += 1
        assert exact is not None and exact.log.endswith("\n")
        assert (simple[0], simple[1]) == (exact.log[:-1], exact.time)
        assert raw[simple[2] : simple[2] + 2] == b"\\n"
    assert accepted > 200


def test_simple_entry_reads_times_as_parse_rfc3339_does() -> None:
    """An entry's time, read the short way where it has moby's form, equals parse_rfc3339 of it: moby's
    stamps and mangled ones (a character changed, dropped or added; a point, `Z` or offset out of place,
    non-ASCII; no such date or time), in runs that share a second or a day and not."""
    rng = random.Random(11)
    alphabet = "0123456789.:TZ-+ x\x7fé"
    read = 0
    for _ in range(20000):
        day = rng.choice(["2026-08-18", "2026-08-18", "2026-12-31", "2026-02-30", "2026-8-18T"])
        second = f"{day}T{rng.randrange(26):02d}:{rng.randrange(62):02d}:{rng.randrange(62):02d}"[:19]
        stamp = list(f"{second}.{rng.randrange(10**9):09d}Z")
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            at = rng.randrange(len(stamp))
            action = rng.random()
            if action < 0.6:
                stamp[at] = rng.choice(alphabet)
            elif action < 0.8:
                del stamp[at]
            else:
                stamp.insert(at, rng.choice(alphabet))
        text = "".join(stamp)
        raw = moby("line\n", text)
        simple = simple_entry(raw, 0, len(raw))
        exact = decode_entry(raw)
        if simple is None:
            assert exact is None or exact.time is None or not text.isascii()
            continue
        assert exact is not None
        assert repr(simple[1]) == repr(exact.time) == repr(parse_rfc3339(text))
        read += simple[1] is not None
    assert read > 5000


def test_simple_entry_reads_ansi_colour_as_json_loads_does() -> None:
    """Entries whose only escapes are ESC (`\\u001b`: ANSI colour) decode fast, as json.loads reads them."""
    rng = random.Random(8)
    alphabet = ["a", " ", "\x1b", "[", "m", "\\", '"', "\x1f", "é", "u", "0", "1", "b"]
    accepted = 0
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 10))) + "\n"
        raw = moby(text, "2026-08-18T01:22:08.5Z")
        simple = simple_entry(raw, 0, len(raw))
        exact = decode_entry(raw)
        assert exact is not None
        if simple is None:
            assert any(c in text for c in '\\"\x1f'), repr(text)
            continue
        accepted += 1
        assert (simple[0], simple[1]) == (exact.log[:-1], exact.time)
    assert accepted > 300


def _mixed_corpus(framing: str) -> bytes:
    """Lines of every awkward kind: markers, CRLF, long and overlong lines, a docker entry cut in three."""
    rng = random.Random(11)
    texts = []
    for i in range(300):
        kind = rng.randrange(6)
        if i in (53, 203):  # past the 2 KiB cap and longer than any read
            texts.append("throughput: " + "z" * (1200 << 10))
        elif kind == 0:
            texts.append(STATS + f" {i}")
        elif kind == 1:
            texts.append(f"access {i}\r")
        elif kind == 2:
            texts.append("y" * rng.randrange(50, 400) + (" throughput:" if i % 2 else ""))
        else:
            texts.append(f"other é {i}")
    if framing == "plain":
        return "".join(text + "\n" for text in texts).encode()
    out = []
    for i, text in enumerate(texts):
        if i % 97 == 5:  # one line cut by the log copier into three entries
            raw = text + " throughput: cut" + "\n"
            out += [moby(raw[:10]), moby(raw[10:20]), moby(raw[20:])]
        else:
            out.append(moby(text + "\n"))
    return b"\n".join(out) + b"\n"


@pytest.mark.parametrize("framing", ["plain", "docker-json"])
@pytest.mark.parametrize("chunk", [7, 100, 4096, 1 << 20])
def test_reads_of_any_size_frame_like_single_lines(
    framing: str, chunk: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Lines spanning reads, overlong lines and cut entries come out the same whatever the read size."""
    data = _mixed_corpus(framing)
    path = tmp_path / "mixed.log"
    path.write_bytes(data)
    by_line = Framer("s", framing, MARKERS, 2048)  # type: ignore[arg-type]
    expected = [b for raw in data.split(b"\n")[:-1] for b in by_line.feed(clip_bytes(raw, 2048))]
    monkeypatch.setattr(wholefile, "CHUNK", chunk)
    framer = Framer("s", framing, MARKERS, 2048)  # type: ignore[arg-type]
    with open_log(str(path)) as stream:
        out = list(chain.from_iterable(batches(stream, framer, 2048)))
    assert normal(expected) == normal(out)
    assert 2 == framer.truncated


def test_json_file_finds_markers_that_json_escapes() -> None:
    """A marker holding a quote or `<>&` is found in the escaped form json-file stores it in."""
    markers = ('{"type"', "a<b&c")
    texts = ['{"type": "log", "msg": "x"}', "say a<b&c", "nothing here", '{"typ": 1}']
    data = b"".join(moby(text + "\n") + b"\n" for text in texts)
    for framer_input in ("line", "chunk"):
        framer = Framer("s", "docker-json", markers, 1 << 20)
        if framer_input == "line":
            out = [b for raw in data.split(b"\n")[:-1] for b in framer.feed(raw)]
        else:
            out = framer.chunk(data)
        found = [item.text for item in out if isinstance(item, LogLine)]
        assert texts[:2] == found, framer_input


def test_read_head_sees_the_whole_head_of_plain_and_gzip_files(tmp_path: Path) -> None:
    """Engine detection reads 64 KiB, not the first read buffer's worth (peek stops at one buffer)."""
    data = b"".join(f"line {i} ".encode() + b"x" * 50 + b"\n" for i in range(3000))
    for path, raw in ((tmp_path / "a.log", data), (tmp_path / "a.log.gz", gzip.compress(data, mtime=0))):
        path.write_bytes(raw)
        with open_log(str(path)) as stream:
            assert data[: wholefile.HEAD] == wholefile.read_head(stream)
            assert data[:10] == stream.read(10)  # the head is not consumed
