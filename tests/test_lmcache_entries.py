"""LMCache's records read from docker json-file entries' bytes give exactly what decoding and parsing
them line by line gives: the samples, and their entries mangled every way a raw reading could go wrong."""

from __future__ import annotations

import io
import json
import random
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kvwatch.detectors import DetectorSettings
from kvwatch.engines import make_parser
from kvwatch.engines.lmcache.parser import LmcacheLayer
from kvwatch.engines.vllm.parser import VllmParser
from kvwatch.model import Event, SourceCounts
from kvwatch.output.exposition import golden_lines
from kvwatch.parsers.base import BlockResult, ParserSettings
from kvwatch.parsers.run import SourceRun
from kvwatch.replay import plan, replay
from kvwatch.sources import wholefile
from kvwatch.sources.docker_json import EntryJoiner
from kvwatch.sources.framing import Entries, Framer, decode_whole, marker_pattern, whole_entry
from kvwatch.sources.wholefile import batches

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
LOGS = ["lmcache-0.3.12-write-only.log", "lmcache-0.3.9-failed-loads.log", "lmcache-0.4.4-healthy.log"]
LOGS += ["lmcache-0.5.6-tp2.log"]


def moby(text: str, stream: str = "stderr", time: str = "2026-09-14T08:00:36.123456789Z") -> bytes:
    """One json-file entry as moby writes it (ESC as `\\u001b`, `<>&` escaped, non-ASCII raw)."""
    body = json.dumps(text + "\n", ensure_ascii=False)
    body = body.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return ('{"log":' + body + ',"stream":"' + stream + '","time":"' + time + '"}').encode()


def docker_log(name: str) -> list[bytes]:
    """A sample's lines as the json-file entries of vLLM's container log."""
    return [moby(line) for line in (SAMPLES / name).read_text().splitlines()]


def parsed(lines: list[bytes], *, entries: bool, tz: str = "UTC") -> tuple[list[Event], tuple[int, int, int]]:
    """The events (flush included) and line counts of the entries, read undecoded where the parser can."""
    parser = make_parser("vllm", "s", ParserSettings(year=2026, tz=tz))
    assert isinstance(parser, VllmParser)
    run = SourceRun("s", parser, SourceCounts())
    framer = Framer(
        "s", "docker-json", parser.markers, 1 << 20, raw_marker=parser.raw_marker if entries else None
    )
    events: list[Event] = []
    for group in batches(io.BytesIO(b"".join(line + b"\n" for line in lines)), framer, 1 << 20):
        events += run.take_many(group)
    events += parser.flush()
    return events, run.counts.parsed()


@pytest.fixture(params=["c", "python"])
def take(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """LmcacheLayer.take_run's loop in C (kvwatch.engines.lmcache._rows.take, built: CI has a C compiler),
    or its Python twin (_take_rows, where none was): each test that asks runs both."""
    from kvwatch.engines.lmcache import _rows
    from kvwatch.engines.lmcache import parser as lmcache_parser

    assert lmcache_parser._take is _rows.take
    if request.param == "python":
        monkeypatch.setattr(lmcache_parser, "_take", None)
    return str(request.param)


@pytest.fixture
def read_raw(monkeypatch: pytest.MonkeyPatch, take: str) -> list[int]:
    """How many entries the LMCache layer read from their bytes (one count per `parsed` call): the lines
    of its runs that it did not hand back to be decoded."""
    counts: list[int] = []
    real = LmcacheLayer.take_run

    def spy(self: LmcacheLayer, run: bytes, other: Callable[[bytes], Any]) -> BlockResult:
        decoded = []

        def counted(line: bytes) -> Any:
            decoded.append(line)
            return other(line)

        result = real(self, run, counted)
        counts[-1] += run.count(b"\n") - 1 - len(decoded)
        return result

    monkeypatch.setattr(LmcacheLayer, "take_run", spy)
    return counts


def both(lines: list[bytes], read_raw: list[int], tz: str = "UTC") -> int:
    """Parse the entries both ways, assert the same outcome; return how many were read raw."""
    expected = parsed(lines, entries=False, tz=tz)
    read_raw.append(0)
    assert expected == parsed(lines, entries=True, tz=tz)
    return read_raw[-1]


@pytest.mark.parametrize("name", LOGS)
def test_samples_read_raw_give_the_decoded_result(name: str, read_raw: list[int]) -> None:
    """Every LMCache sample in json-file form: the same events and counts, most INFO records read raw."""
    lines = docker_log(name)
    raw = both(lines, read_raw)
    assert raw > 0
    assert parsed(lines, entries=True)[0]  # (the comparison covers events)


def test_small_reads_read_raw_give_the_decoded_result(
    read_raw: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads that cut entries anywhere: the same."""
    monkeypatch.setattr(wholefile, "CHUNK", 777)
    assert both(docker_log("lmcache-0.5.6-tp2.log"), read_raw) > 0


def _insert(piece: bytes) -> Callable[[bytes, random.Random], bytes]:
    def mutate(line: bytes, rng: random.Random) -> bytes:
        at = rng.randrange(1, len(line))
        return line[:at] + piece + line[at:]

    return mutate


def _replace(old: bytes, new: bytes) -> Callable[[bytes, random.Random], bytes]:
    return lambda line, rng: line.replace(old, new, 1)


def _digit(line: bytes, rng: random.Random) -> bytes:
    digits = [i for i, byte in enumerate(line) if 48 <= byte <= 57]
    at = rng.choice(digits)
    return line[:at] + rng.choice([b"\xd9\xa3", b"x", b"12", b"", b"-1", b" "]) + line[at + 1 :]


def _drop(line: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(line))
    return line[:at] + line[at + 1 :]


MUTATIONS: list[Callable[[bytes, random.Random], bytes]] = [
    _insert(b'\\"'),
    _insert(b"\\\\"),
    _insert(b"\\u00e9"),
    _insert("é".encode()),
    _insert(b"\xff"),
    _insert(b"\x01"),
    _insert(b"\\t"),
    _insert(b"\\r"),
    _insert(b'"'),
    _insert(b"\\u001b"),
    _insert(b"] LMCache INFO:"),
    _insert(b" "),
    _digit,
    _drop,
    _replace(b"INFO", b"DEBUG"),
    _replace(b"\\u001b[0m", b""),
    _replace(b"\\u001b[3m", b""),
    _replace(b"\\u001b", b"\\u001B"),
    _replace(b'"stderr"', b'"stdout"'),
    _replace(b'"stderr"', b'"stdin"'),
    _replace(b'\\n","stream"', b'","stream"'),
    _replace(b'Z"}', b'\\u0000"}'),
    _replace(b"-09-14 ", b"-13-14 "),
    _replace(b"-09-14 ", b"-09-31 "),
    _replace(b"08:00", b"24:00"),
    _replace(b" GB", b" gb"),
    _replace(b" gb", b" GB"),
    _replace(b"req_id=chatcmpl", b"req_id=chat]cmpl"),
    _replace(b"req_id=chatcmpl", b"req_id=chat\\u001bcmpl"),
    _replace(b"Reqid: chatcmpl", b"Reqid: chat cmpl"),
    _replace(b"(Worker_TP1", b"(Worker_TP1 \\u0028TP3"),
    _replace(b"(Worker_TP0", b"(Worker_DP1_TP0"),
    _replace(b"(Worker_TP0 pid=120) ", b""),
    lambda line, rng: re.sub(rb"Retrieved \d+ out of", b"Retrieved 1 out of", line),  # a short load
    _replace(b"throughput: ", b"throughput: \\u00a0"),
    _replace(b"throughput: ", b"throughput: \xc2\xa0"),
    _replace(b"; offload_time", b"; offload_time: 1 ms"),
    _replace(b" \\u001b[3m(", b"\\u001b[3m("),
    _replace(b'{"log":"', b'{"stream":"stderr","log":"'),
    _replace(b'{"log":"(', b'{"log":"\xff('),  # (in the process tag: not UTF-8, a malformed entry)
    _replace(b'{"log":"(', b'{"log":"\x01('),
    _replace(b'{"log":"(', b'{"log":"\\x('),
    _replace(b'{"log":"(', b'{"log":"\\"('),
    lambda line, rng: line + b" ",
    _replace(b"(cache_engine.py", b"(cache engine.py"),  # (record() cuts the message at the last ` (`)
    _replace(b"(vllm_v1_adapter.py", b"(vllm v1 (adapter.py"),
    _replace(b")\\u001b[0m\\n", b") \\u001b[3m(x)\\u001b[0m\\n"),
    # (sizes and costs past 2^53 units of 1e-4: record() reads them through a float)
    lambda line, rng: re.sub(rb"size: \d+\.\d+", b"size: 81106012127733.1033", line),
    lambda line, rng: re.sub(rb"cost \d+\.\d+", b"cost 81106012127733.1033", line),
]


@pytest.mark.parametrize("seed", range(12))
def test_mangled_entries_read_raw_give_the_decoded_result(
    seed: int, read_raw: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries with an escape, a quote, a control or non-ASCII byte, a bad digit, stamp or shape,
    anywhere, among intact ones (repeated lookups, short loads, cut entries): the same either way."""
    monkeypatch.setattr(wholefile, "CHUNK", 4096)  # (a read holding a cut entry is read line by line)
    rng = random.Random(seed)
    lines = [line for name in LOGS for line in docker_log(name)]
    out: list[bytes] = []
    for line in lines:
        if b"LMCache" in line and rng.random() < 0.3:
            for _ in range(rng.choice([1, 1, 2])):
                line = rng.choice(MUTATIONS)(line, rng)  # noqa: PLW2901 (mangled in place)
        out.append(line)
        if rng.random() < 0.05:
            out.append(line)  # a repeated line: a lookup counts once
    assert both(out, read_raw) > 0


def test_every_mutation_is_read_as_decoded(read_raw: list[int]) -> None:
    """Each mutation alone, on the first record of each kind the layer reads raw: as the source's first
    LMCache record (read the general way, said with a fact), and after others."""
    lines = docker_log("lmcache-0.5.6-tp2.log")
    rng = random.Random(7)
    for kind in (b"] Stored ", b"] Retrieved ", b"Reqid: "):
        at = next(index for index, line in enumerate(lines) if kind in line)
        first = [line for line in lines[:at] if b"LMCache" not in line]  # (it is the source's first)
        for mutate in MUTATIONS:
            changed = mutate(lines[at], rng)
            both([*lines[:at], changed, *lines[at + 1 :]], read_raw)
            both([*first, changed, *lines[at + 1 :]], read_raw)


@pytest.mark.parametrize("name", ["lmcache-0.5.6-tp2.log", "lmcache-0.5.6-mp.log"])
def test_lmcache_s_own_log_in_json_file_form_replays_as_plain(name: str, tmp_path: Path) -> None:
    """`engine = "lmcache"` on a json-file log (its lines read as decoded: the layer alone takes lines,
    only a parser that carries it reads entries' bytes): what the plain log gives."""
    plain, wrapped = tmp_path / "plain" / "lm.log", tmp_path / "json" / "lm.log"
    plain.parent.mkdir()
    wrapped.parent.mkdir()
    plain.write_bytes((SAMPLES / name).read_bytes())
    wrapped.write_bytes(b"".join(line + b"\n" for line in docker_log(name)))

    def outcome(path: Path) -> tuple[list[str], tuple[int, int, int]]:
        result = replay(plan([str(path)], "lmcache", None), ParserSettings(now_year=2026), DetectorSettings())
        counts = result.summary.counts["lm"]
        return golden_lines(result.registry, result.alerts), (counts.lines, counts.recognized, counts.errors)

    expected = outcome(plain)
    assert expected[1][1] > 10
    assert expected == outcome(wrapped)


@pytest.mark.parametrize("seed", range(6))
def test_the_raw_runs_hold_the_lines_the_framer_would_decode(seed: int) -> None:
    """The framer walks the scanner's hits itself: its runs hold, in order, the lines whose first marker is
    LMCache's, each a whole entry that decode_whole decodes as the line-by-line framing does; with the
    decoded lines between them, exactly what the framing without runs gives. Over reads that start
    anywhere, lines with several markers, entries of every shape, and the framer's own sentinel."""
    rng = random.Random(seed)
    parser = make_parser("vllm", "s", ParserSettings(year=2026))
    assert isinstance(parser, VllmParser) and parser.raw_marker is not None
    pool = docker_log("lmcache-0.5.6-tp2.log") + docker_log("lmcache-0.4.4-healthy.log")
    pool += [moby("INFO 09-14 08:00:36 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s")]
    pool += [moby("plain text, no marker"), moby("x] LMCache INFO: throughput: KV Transfer metrics")]
    pool += [moby('[2026-09-14 08:00:36,123] LMCache INFO: "quoted" é')]
    pool += [
        b'{"log":"[2026-09-14 08:00:36,123] LMCache INFO: x\\n","stream":"stderr","time":"t","log":"y\\n"}'
    ]
    pool += [b'{"log":"a] LMCache b\\n","stream":"stderr","time":"] LMCache "}', b"] LMCache not json"]
    marker = parser.raw_marker.encode()
    pattern = marker_pattern(parser.markers)
    assert pattern is not None
    runs = 0
    for _ in range(60):
        lines = [rng.choice(pool) for _ in range(rng.randrange(1, 30))]
        if rng.random() < 0.3:
            lines.insert(rng.randrange(len(lines) + 1), b'{"log":"a\\\\n","stream":"stdout","time":"t"}')
        data = b"".join(line + b"\n" for line in lines)
        first = rng.choice([0, data.find(b"\n", rng.randrange(len(data))) + 1])
        raw = Framer("s", "docker-json", parser.markers, 1 << 20, raw_marker=parser.raw_marker)
        plain = Framer("s", "docker-json", parser.markers, 1 << 20)
        expected = [item for item in plain.chunk(data, first) if not isinstance(item, int)]
        got: list[Any] = []
        for batch in raw.chunk(data, first):
            if not isinstance(batch, Entries):
                got += [batch] if not isinstance(batch, int) else []
                continue
            for item in batch.items:
                if not isinstance(item, bytes):
                    got.append(item)
                    continue
                runs += 1
                assert item.startswith(b"\n") and item.endswith(b"\n")
                for line in item[1:-1].split(b"\n"):
                    assert whole_entry(line, 0, len(line)) and line.find(marker) == min(
                        at for at in (line.find(m.encode()) for m in parser.markers) if at >= 0
                    )
                    decoded = decode_whole("s", line, marker, pattern)
                    got += [decoded] if decoded is not None else []
        assert got == expected
    assert runs > 20


@pytest.mark.parametrize("seed", range(4))
def test_the_c_walk_over_a_read_s_hits_is_the_python_one(seed: int) -> None:
    """kvwatch.sources._spans (built: CI has a C compiler) gives what framing.read_entry_lines gives, on
    reads of entries of every shape (the mutations too), from anywhere, with the framer's own sentinel."""
    from kvwatch.sources import _spans, framing

    assert framing.entry_lines is _spans.entry_lines
    rng = random.Random(seed)
    parser = make_parser("vllm", "s", ParserSettings(year=2026))
    assert isinstance(parser, VllmParser)
    framer = Framer("s", "docker-json", parser.markers, 1 << 20, raw_marker=parser.raw_marker)
    scanner, raw = framer._scanner, framer._raw
    assert scanner is not None and raw is not None
    pool = [line for name in LOGS for line in docker_log(name)]
    pool += [b'{"log":"a\\\\n","stream":"stdout","time":"t"}', b"] LMCache not json", b"", b"{"]
    runs = 0
    for _ in range(150):
        lines = [rng.choice(pool) for _ in range(rng.randrange(1, 25))]
        lines = [rng.choice(MUTATIONS)(line, rng) if line and rng.random() < 0.3 else line for line in lines]
        data = b"".join(line + b"\n" for line in lines)
        first = rng.choice([0, rng.randrange(len(data))])
        hits = scanner.hits(data, first)
        expected = framing.read_entry_lines(data, first, hits, scanner.markers, raw)
        assert _spans.entry_lines(data, first, hits, scanner.markers, raw) == expected
        runs += sum(type(each) is bytes for each in expected)
    assert runs > 50
    with pytest.raises(ValueError):
        _spans.entry_lines(b"x", 0, [(0, 5, 6)], 1, 0)


def test_records_seconds_apart_in_runs_of_every_length_give_the_decoded_result(
    monkeypatch: pytest.MonkeyPatch, take: str
) -> None:
    """Records in the same second, or one to seven apart, with vLLM's lines among them, read in runs that
    end anywhere: the stretches of sums (10 s) end where they do line by line, and a row of the second
    of the row before moves nothing; the same events and counts."""
    rng = random.Random(2)
    records = [line for line in docker_log("lmcache-0.5.6-tp2.log") if b"] LMCache INFO" in line]
    stats = moby("INFO 09-14 08:00:36 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s")
    for gap in (1, 3, 7):
        lines, second = [], 0
        for _ in range(300):
            second += rng.choice([0, 0, gap])
            stamp = f"2026-09-14 {8 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}".encode()
            lines.append(re.sub(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", stamp, rng.choice(records), count=1))
            if rng.random() < 0.05:
                lines.append(stats)
        for chunk in (1500, 9000, 1 << 20):
            monkeypatch.setattr(wholefile, "CHUNK", chunk)
            expected = parsed(lines, entries=False)
            assert expected == parsed(lines, entries=True)
            assert sum(1 for event in expected[0] if type(event).__name__ == "LmcacheTransfer") > 20


def test_a_cut_entry_among_raw_lines_sends_the_read_the_exact_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line that decodes to part of an entry (its log without `\\n`, though the read's counts look whole:
    another line holds two ends): the runs after it could hold the rest, so the read is framed line by
    line, as feed() frames it, and the joiner is left as feed() leaves it."""
    parser = make_parser("vllm", "s", ParserSettings(year=2026))
    assert isinstance(parser, VllmParser)
    lines = docker_log("lmcache-0.5.6-tp2.log")
    cut = b'{"log":"Engine 000: Avg prompt throughput: 1 tokens/s","stream":"stderr","time":"t"}'
    twice = b'{"log":"x\\n","stream":"stderr","time":"\\n","stream":"stderr"}'
    lines = [*lines[:5], cut, twice, *lines[5:]]
    data = b"".join(line + b"\n" for line in lines)
    assert data.count(b'\\n","stream":"') == data.count(b"\n")  # (the read's counts look whole)
    forgotten: list[int] = []
    forget = EntryJoiner.forget
    monkeypatch.setattr(EntryJoiner, "forget", lambda joiner: forgotten.append(1) or forget(joiner))
    chunked = Framer("s", "docker-json", parser.markers, 1 << 20, raw_marker=parser.raw_marker)
    fed = Framer("s", "docker-json", parser.markers, 1 << 20)
    assert chunked.chunk(data) == [batch for line in lines for batch in fed.feed(line)]
    assert chunked.finish() == fed.finish()
    assert forgotten  # (the raw framing began, and gave the read up)


def _taken(run: bytes, *, c: bool) -> tuple[Any, ...]:
    """What a fresh layer (past its first record) makes of `run` with the C loop or its Python twin: the
    result, the lines handed back, the request ids it holds, and its sums, flushed."""
    layer = LmcacheLayer("s", ParserSettings())
    layer._seen_any = True
    passed: list[bytes] = []
    result = layer.take_run(run, passed.append) if c else layer._take_rows(run, passed.append)
    return result, passed, list(layer._seen), layer.flush()


def test_the_c_loop_reads_every_run_as_the_python_one() -> None:
    """kvwatch.engines.lmcache._rows.take (built: CI has a C compiler) reads and sums what its Python twin
    (LINE's rows, summed in Python) does, line by line: on the samples' entries mangled every way (see
    MUTATIONS), runs cut anywhere, and numbers past a machine word."""
    from kvwatch.engines.lmcache import parser as lmcache_parser

    assert lmcache_parser._take is not None
    rng = random.Random(11)
    lines = [line for name in LOGS for line in docker_log(name)]
    taken = 0
    for _ in range(300):
        picked = [rng.choice(lines) for _ in range(rng.randrange(1, 12))]
        picked = [rng.choice(MUTATIONS)(line, rng) if rng.random() < 0.5 else line for line in picked]
        run = b"\n" + b"".join(line + b"\n" for line in picked)
        expected = _taken(run, c=False)
        assert _taken(run, c=True) == expected
        # (every line taken, or handed back: whose None is no recognised line)
        assert expected[0].recognized == len(picked) - len(expected[1])
        taken += len(picked) - len(expected[1])
        cut = run[: rng.randrange(len(run) + 1)]
        assert _taken(cut, c=True) == _taken(cut, c=False)
    assert taken > 500
    # numbers past a machine word (up to 18 digits are read in one), and past the C reader's buffer
    for digits in (b"1" * 18, b"9" * 19, b"7" * 25, b"3" * 70):
        for line in lines:
            longer = re.sub(rb"(Stored|Retrieved|Total tokens|need to load: -?)\d+", rb"\g<1>" + digits, line)
            if longer != line:
                run = b"\n" + longer + b"\n"
                expected = _taken(run, c=False)
                assert _taken(run, c=True) == expected
                assert expected[1] == [] or b"Retrieved" in longer  # (read, but a short load: handed back)
    assert _taken(b"", c=True) == _taken(b"", c=False)
    assert _taken(b"x\n" + run[1:], c=True) == _taken(b"x\n" + run[1:], c=False)


@pytest.mark.parametrize("entries", [True, False])
def test_an_entry_ending_in_an_escaped_backslash_before_n_is_joined_as_line_by_line(entries: bool) -> None:
    """A log value ending in `\\\\n` (a backslash, then `n`: no newline, the entry continues in the next)
    among marker lines: the read's sentinel hit sends it the exact way, whose result is feed()'s."""
    rng = random.Random(3)
    pool = docker_log("lmcache-0.5.6-tp2.log")
    cut = moby("Engine 000: Avg prompt throughput: 1 tokens/s \\").replace(b'\\n","stream"', b'n","stream"')
    assert b'\\\\n","stream"' in cut
    for _ in range(20):
        lines = [rng.choice(pool) for _ in range(rng.randrange(1, 20))]
        lines.insert(rng.randrange(len(lines) + 1), cut)
        data = b"".join(line + b"\n" for line in lines)
        parser = make_parser("vllm", "s", ParserSettings(year=2026))
        assert isinstance(parser, VllmParser)
        raw_marker = parser.raw_marker if entries else None
        chunked = Framer("s", "docker-json", parser.markers, 1 << 20, raw_marker=raw_marker)
        fed = Framer("s", "docker-json", parser.markers, 1 << 20, raw_marker=raw_marker)
        assert chunked.chunk(data) == [batch for line in lines for batch in fed.feed(line)]


@pytest.mark.parametrize(
    ("seed", "tz"), [(0, "UTC"), (1, "UTC"), (2, "America/New_York"), (3, "Asia/Kolkata")]
)
def test_request_ids_seconds_and_numbers_of_every_kind_give_the_decoded_result(
    seed: int, tz: str, read_raw: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lookups and transfers of a few requests in turn (a lookup repeated, one forgotten past MAX_IDS and
    counted again, one run and looked up again), stamps a second or more apart, across midnight and a
    month's end, some no date at all, needs below zero, numbers wider than a machine word, in UTC and
    other zones: the same events and counts either way, and with either loop (`take`, via read_raw)."""
    from kvwatch.engines.lmcache import parser as lmcache_parser

    monkeypatch.setattr(lmcache_parser, "MAX_IDS", 3)
    monkeypatch.setattr(wholefile, "CHUNK", 3000)
    rng = random.Random(seed)
    records = [line for name in LOGS for line in docker_log(name) if b"] LMCache INFO" in line]
    records = [line for line in records if re.search(rb"Reqid: |\] Stored |\] Retrieved ", line)]
    requests = [f"chatcmpl-{index:04x}".encode() for index in range(6)]
    lines, start = [], datetime(2026, rng.choice([2, 9, 12]), 28, 23, 59, 0)
    second = 0
    for _ in range(400):
        line = rng.choice(records)
        second += rng.choice([0, 0, 1, 4, 907])
        stamp = (start + timedelta(seconds=second)).strftime("%Y-%m-%d %H:%M:%S").encode()
        if rng.random() < 0.03:  # (no date: read the general way, which says so)
            stamp = rng.choice([b"2026-02-30 08:00:00", b"2026-13-01 08:00:00", b"0000-01-01 00:00:00"])
            stamp = rng.choice(
                [stamp, b"2026-09-14 24:00:00", b"2026-09-14 23:60:00", b"2026-09-14 23:00:60"]
            )
        line = re.sub(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", stamp, line, count=1)
        line = re.sub(rb"(Reqid: |req_id=)[^,\]\s]+", lambda m: m.group(1) + rng.choice(requests), line)
        if rng.random() < 0.1:
            line = re.sub(rb"need to load: \d+", b"need to load: -" + str(rng.randrange(9)).encode(), line)
        if rng.random() < 0.05:
            line = re.sub(rb"(Stored |Total tokens |hit tokens: )\d+", rb"\g<1>" + b"9" * 25, line, count=1)
        lines.append(line)
    assert both(lines, read_raw, tz) > 200
    expected = parsed(lines, entries=False, tz=tz)
    kinds = {type(event).__name__ for event in expected[0]}
    assert {"LmcacheLookup", "LmcacheTransfer"} <= kinds


def test_the_c_loop_reads_a_utc_second_as_the_layer_does() -> None:
    """_rows.take reads a UTC stamp's second itself: for leap days, month ends, the first and last years
    a date may have and stamps that are no date, the time the layer's _when gives (or, where it gives
    none, the line handed back to be read the general way)."""
    from kvwatch.engines.lmcache import parser as lmcache_parser

    assert lmcache_parser._take is not None
    record = next(line for line in docker_log("lmcache-0.5.6-tp2.log") if b"] Stored " in line)
    rng = random.Random(5)
    stamps = ["2028-02-29 12:00:00", "2026-02-29 12:00:00", "1900-02-29 00:00:00", "2000-02-29 23:59:59"]
    stamps += ["0001-01-01 00:00:00", "9999-12-31 23:59:59", "0000-06-01 00:00:00", "1969-12-31 23:59:59"]
    stamps += ["2026-04-31 00:00:00", "2026-00-10 00:00:00", "2026-01-00 00:00:00", "2026-12-31 23:59:60"]
    for _ in range(300):
        y, mo, d = rng.randrange(0, 10000), rng.randrange(0, 14), rng.randrange(0, 33)
        h, mi, s = rng.randrange(0, 26), rng.randrange(0, 62), rng.randrange(0, 62)
        stamps.append(f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}")
    for stamp in stamps:
        layer = LmcacheLayer("s", ParserSettings())
        layer._seen_any = True
        expected = layer._when(stamp + ",000")
        line = re.sub(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", stamp.encode(), record, count=1)
        passed: list[bytes] = []
        layer.take_run(b"\n" + line + b"\n", passed.append)
        if expected is None:
            assert passed == [line], stamp
        else:
            assert (passed, layer._sums.start, layer._sums.last) == ([], expected, expected), stamp


@pytest.mark.parametrize("digits", [17, 18, 19])
def test_sums_past_a_machine_word_are_exact(digits: int, read_raw: list[int]) -> None:
    """Stores of one worker in one stretch whose tokens sum past 2^63 (the C loop adds words in a cache of
    its own until one would overflow): the sums the decoded lines give, to the token."""
    record = next(line for line in docker_log("lmcache-0.5.6-tp2.log") if b"] Stored " in line)
    big = re.sub(
        rb"Stored \d+ out of total \d+",
        b"Stored " + b"9" * digits + b" out of total " + b"9" * digits,
        record,
    )
    lines = [record, *[big] * 40, record]
    assert both(lines, read_raw) >= 40
    sums = [event for event in parsed(lines, entries=True)[0] if type(event).__name__ == "LmcacheTransfer"]
    assert sum(event.tokens for event in sums) > 40 * (10 ** (digits - 1))
