"""Docker json-file, `docker logs -t` and plain framing; the chunk path equals the line path."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from pathlib import Path

from kvwatch.model import LogLine
from kvwatch.sources.docker_json import DOCKER_SPLIT, split_logs_t
from kvwatch.sources.framing import Batch, Framer, Malformed, sniff
from kvwatch.sources.wholefile import batches, open_log, source_name

MARKERS = ("throughput:", "KV Transfer")
STATS = "INFO 08-18 01:22:08 [loggers.py:310] Engine 000: Avg prompt throughput: 1.0 tokens/s"


def moby(log: str, time: str = "2026-08-18T01:22:08.5Z", stream: str = "stdout") -> bytes:
    """One json-file entry as moby writes it (`<>&` escaped, non-ASCII raw)."""
    body = json.dumps(log, ensure_ascii=False)
    body = body.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return ('{"log":' + body + ',"stream":"' + stream + '","time":"' + time + '"}').encode()


def normal(items: Iterable[Batch]) -> list[object]:
    """Merge adjacent skip counts so two framings of the same data compare equal."""
    out: list[object] = []
    for item in items:
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
        out = normal(batches(stream, Framer("s", "plain", MARKERS, 1 << 20), 1 << 20))
    assert [LogLine("s", STATS), 1] == out


def test_overlong_line_is_cut_and_counted(tmp_path: Path) -> None:
    """A 10 MB line keeps its head, is counted once as truncated, and memory stays bounded."""
    path = tmp_path / "big.log"
    path.write_bytes(b"throughput: " + b"z" * (10 << 20) + b"\n" + STATS.encode() + b"\n")
    framer = Framer("s", "plain", MARKERS, 1 << 16)
    with open_log(str(path)) as stream:
        out = list(batches(stream, framer, 1 << 16))
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
        out = list(batches(stream, framer, 1 << 20))
    assert [LogLine, Malformed] == [type(item) for item in out]


def test_source_names() -> None:
    """Rotation and compression suffixes are stripped from the source name."""
    assert ["vllm", "vllm", "abc", "llama-server"] == [
        source_name(p) for p in ("vllm.log.1.gz", "/x/vllm.log", "abc-json.log.3", "llama-server.log")
    ]
