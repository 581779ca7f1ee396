"""`llama-server ... 2>&1 | kvwatch run --stdin --engine llamacpp`: no config file; EOF drains and exits 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_helpers import Kvwatch, wait_until

from kvwatch.sources.stdin import StdinSource

LINES = [
    "srv  params_from_: Chat format: Content-only",
    "slot launch_slot_: id  0 | task 5 | processing task",
    "slot update_slots: id  0 | task 5 | new prompt, n_ctx_slot = 8192, n_keep = 0, task.n_tokens = 512",
]


@pytest.mark.slow
def test_stdin_pipe_is_read_until_eof_then_the_daemon_exits_zero(tmp_path: Path) -> None:
    """Lines piped in are counted; closing the pipe makes kvwatch drain and exit 0."""
    read, write = os.pipe()
    kv = Kvwatch(["--stdin", "--engine", "llamacpp"], tmp_path / "kv.err", stdin=read)
    os.close(read)
    with os.fdopen(write, "w") as pipe:
        pipe.write("\n".join(LINES * 40) + "\n")
        pipe.flush()
        wait_until(lambda: kv.lines("stdin") == 120, what="120 lines")
        pipe.write("a last line without its newline")
    assert 0 == kv.proc.wait(10)
    kv.err.close()
    assert 121 == kv.processed("stdin")


def test_run_refuses_both_or_neither_of_config_and_stdin() -> None:
    """`kvwatch run` needs exactly one of --config and --stdin (exit 2)."""
    done = subprocess.run(
        [sys.executable, "-m", "kvwatch", "run"], capture_output=True, text=True, check=False
    )
    assert (2, "kvwatch run: give --config PATH or --stdin (not both)\n") == (done.returncode, done.stderr)


def test_stdin_source_splits_lines_caps_long_ones_and_flushes_at_eof() -> None:
    """StdinSource: complete lines per poll, a long line cut at the cap, the unterminated tail at EOF."""
    read, write = os.pipe()
    source = StdinSource("pipe", fd=read, line_cap=10)
    os.write(write, b"one\ntwo\r\n" + b"x" * 25 + b"\nthr")
    assert ["one", "two", "x" * 10] == [line.text for line in source.poll()]
    os.write(write, b"ee")
    os.close(write)
    source.wait(1.0)
    assert (["three"], True, 1) == (
        [line.text for line in source.poll()], source.done, source.counters.truncated_long_lines,
    )  # fmt: skip
    os.close(read)
