"""The daemon's log: levels, logfmt and JSON, the journal check by device:inode, the sampled line log."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import Kvwatch, file_source, wait_until, write_config

from kvwatch.config import ConfigError, parse_config
from kvwatch.daemon.log import (
    JournalFormatter,
    JsonFormatter,
    LogfmtFormatter,
    formatter,
    setup_logging,
    stderr_is_journal,
)
from kvwatch.engines import make_parser
from kvwatch.model import LogLine, SourceCounts
from kvwatch.parsers.base import ParserSettings
from kvwatch.parsers.run import SourceRun
from kvwatch.parsers.skips import SkipLog, describe, shape

#: A request line holding prompt text and a vLLM marker ("throughput:"), so the parser sees and rejects it.
PROMPT = "Received request chatcmpl-1: prompt: 'the launch code is swordfish, throughput: nobody', params: {}"


def record(msg: str, *args: object, level: int = logging.INFO, **extra: object) -> logging.LogRecord:
    """A LogRecord as `logger.log(level, msg, *args, extra=extra)` makes it."""
    rec = logging.getLogger("kvwatch.test").makeRecord(
        "kvwatch.test", level, "/x/daemon.py", 42, msg, args, None, extra=extra
    )
    rec.created = 1767225600.25  # 2026-01-01T00:00:00.250Z
    return rec


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Put the root logger's handlers and level back after a test that calls setup_logging."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_logfmt_is_go_kits_shape_with_every_value_escaped() -> None:
    line = LogfmtFormatter().format(record('source %s: "down" = %d', "a b", 3, source="vllm", lines=7))
    assert (
        'ts=2026-01-01T00:00:00.250Z level=info caller=daemon.py:42 msg="source a b: \\"down\\" = 3"'
        " source=vllm lines=7"
    ) == line
    assert "level=warn" in LogfmtFormatter().format(record("x", level=logging.WARNING))
    multi = LogfmtFormatter().format(record("a\nb"))
    assert 'msg="a\\nb"' in multi and "\n" not in multi


def test_json_is_one_object_per_line_with_the_same_keys() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        rec = record("failed on %s", "Lines", level=logging.ERROR, source="s")
        rec.exc_info = __import__("sys").exc_info()
    line = JsonFormatter().format(rec)
    assert "\n" not in line
    obj = json.loads(line)
    assert ("2026-01-01T00:00:00.250Z", "error", "daemon.py:42", "failed on Lines", "s") == (
        obj["ts"],
        obj["level"],
        obj["caller"],
        obj["msg"],
        obj["source"],
    )
    assert obj["err"].endswith("RuntimeError: boom")


def test_the_journal_is_recognised_by_device_and_inode_not_by_presence(tmp_path: Path) -> None:
    """`$JOURNAL_STREAM` counts only when it names the very stream stderr is (systemd.exec(5))."""
    with open(tmp_path / "stderr", "w") as stream, open(tmp_path / "other", "w") as other:
        st, ot = os.fstat(stream.fileno()), os.fstat(other.fileno())
        fd = stream.fileno()
        assert stderr_is_journal({"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}, fd)
        assert not stderr_is_journal({"JOURNAL_STREAM": f"{ot.st_dev}:{ot.st_ino}"}, fd)  # inherited
        assert not stderr_is_journal({"JOURNAL_STREAM": "8:12345x"}, fd)
        assert not stderr_is_journal({}, fd)
        assert not stderr_is_journal({"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}, -1)
        journal = {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}
        assert isinstance(formatter(None, journal, fd), JournalFormatter)
        plain = formatter(None, {"JOURNAL_STREAM": f"{ot.st_dev}:{ot.st_ino}"}, fd)
        assert not isinstance(plain, JournalFormatter)
        assert re.fullmatch(r"\S+ \S+ INFO kvwatch.test: hi", plain.format(record("hi")))
        assert isinstance(formatter("json", journal, fd), JsonFormatter)  # a format asked for is kept


def test_levels_and_formats_are_the_exporters_names(restore_logging: None) -> None:
    setup_logging("warn", "logfmt")
    assert logging.WARNING == logging.getLogger().level
    setup_logging("debug")
    assert logging.DEBUG == logging.getLogger().level
    levels = r"log level must be one of debug, info, warn, error \(got 'trace'\)"
    with pytest.raises(ValueError, match=levels):
        setup_logging("trace")
    with pytest.raises(ValueError, match=r"log format must be one of logfmt, json \(got 'text'\)"):
        setup_logging("info", "text")


def test_the_log_table_of_the_config(tmp_path: Path) -> None:
    assert ("info", None) == (parse_config({}, tmp_path).log.level, parse_config({}, tmp_path).log.format)
    given = parse_config({"log": {"level": "debug", "format": "json"}}, tmp_path).log
    assert ("debug", "json") == (given.level, given.format)
    with pytest.raises(ConfigError) as info:
        parse_config({"log": {"level": "verbose", "format": "text", "colour": True}}, tmp_path)
    assert [
        'log.level: must be one of debug, info, warn, error (got "verbose")',
        'log.format: must be one of logfmt, json (got "text")',
        "log.colour: unknown key",
    ] == info.value.problems


def test_a_skipped_line_is_described_without_its_text() -> None:
    said = describe(PROMPT)
    assert not {"launch", "swordfish", "nobody", "chatcmpl"} & set(re.findall(r"[a-z]+", said.lower()))
    assert said.startswith(f"length={len(PROMPT)} sha256=")
    assert "Aaaaaaaa aaaaaaa aaaaaaaa-9: aaa" == shape(PROMPT)
    assert "9999-99-99 99:99:99 AAAA aa" == shape("2026-01-31 18:00:07 INFO ün")
    assert describe(PROMPT) == said and describe(PROMPT + "!") != said


def test_the_line_log_is_sampled_per_source_and_counts_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    skips = SkipLog("vllm", lambda: now[0], limit=2, period=60.0)
    caplog.set_level(logging.DEBUG, logger="kvwatch.lines")
    for i in range(5):
        skips.line("not_recognised", f"line {i}")
    skips.line("error: bad number", "x")
    skips.no_marker(100)
    assert 2 == len(caplog.records)
    assert caplog.records[0].getMessage().startswith("source vllm: line not_recognised: length=6 sha256=")
    now[0] = 60.0
    skips.line("not_recognised", "again")
    summary = "source vllm: 104 more lines not used in the last 60 s: error=1 no_marker=100 not_recognised=3"
    assert summary == caplog.records[2].getMessage()
    assert caplog.records[3].getMessage().startswith("source vllm: line not_recognised: length=5")
    assert not any("line 4" in r.getMessage() for r in caplog.records)


def test_a_source_logs_why_it_did_not_use_a_line_only_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    def run() -> SourceRun:
        parser = make_parser("vllm", "v", ParserSettings(), None)
        return SourceRun("v", parser, SourceCounts(), SkipLog.when_enabled("v", lambda: 0.0))

    caplog.set_level(logging.INFO, logger="kvwatch.lines")
    assert run().skips is None  # the hot path is untouched at info
    caplog.set_level(logging.DEBUG, logger="kvwatch.lines")
    source = run()
    # (a vLLM record with a marker that says nothing kvwatch reads; a stats logger's record of no known
    # shape would be format drift, a line used)
    other = "INFO 01-31 18:00:00 [gpu_worker.py:123] KV offload spec initialised"
    source.take_many([LogLine("v", PROMPT), LogLine("v", other), 40])
    said = [r.getMessage() for r in caplog.records if r.name == "kvwatch.lines"]
    assert any(m.startswith("source v: line not_recognised: length=") for m in said), said
    assert not any("swordfish" in m for m in said)
    assert 42 == source.counts.lines


@pytest.mark.slow
def test_the_daemon_logs_json_at_debug_from_its_config(tmp_path: Path) -> None:
    """`[log] level = "debug"`, `format = "json"`: every stderr line is a JSON object; a line of the
    source that no parser takes is described by length and digest, its words never printed."""
    log = tmp_path / "app.log"
    log.write_text(f"{PROMPT}\n")
    body = '[log]\nlevel = "debug"\nformat = "json"\n' + file_source("a", log)
    cfg = write_config(tmp_path / "kv.toml", body)
    kv = Kvwatch(["--config", str(cfg)], tmp_path / "kvwatch.err")

    def described() -> bool:
        return "source a: line not_recognised: length=" in kv.log.read_text(errors="replace")

    wait_until(described, 15.0, "the skipped line's debug log")
    assert 0 == kv.stop()
    lines = kv.log.read_text().splitlines()
    objects = [json.loads(line) for line in lines]  # every line, even the first ones
    assert {"ts", "level", "caller", "msg"} <= set(objects[-1])
    assert "debug" in {o["level"] for o in objects}
    assert "swordfish" not in kv.log.read_text()
