"""`kvwatch replay` of files no engine recognises: said on stderr per file, exit 3, no engine named."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kvwatch.cli import FORMATS, build_parser, main
from kvwatch.config import ConfigError, config_for_stdin
from kvwatch.engines import ENGINES
from kvwatch.replay.files import source_name

ROOT = Path(__file__).resolve().parents[1]
GOOD = ROOT / "samples" / "vllm-docker.log"
JUNK = bytes(range(256)) * 10  # ten newlines among them: 11 lines, the last without one
#: Any engine's name, as a report could carry it (a metric's name is not a claim: see _claims).
NAMED = re.compile(r"vllm|llama|usage", re.IGNORECASE)


def unrecognised(tmp_path: Path) -> dict[str, tuple[Path, int]]:
    """Files no engine recognises, by case: the file and its number of lines."""
    empty, binary, text, zipped = (
        tmp_path / n for n in ("empty.log", "junk.bin", "notes.txt", "junk.log.gz")
    )
    empty.write_bytes(b"")
    binary.write_bytes(JUNK)
    text.write_text("hello world\nthis is not a log\nof any engine\n")
    zipped.write_bytes(gzip.compress(JUNK))
    return {"empty": (empty, 0), "binary": (binary, 11), "text": (text, 3), "gzip": (zipped, 11)}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The CLI in-process: status, stdout, stderr."""
    status = main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def said(path: Path, lines: int) -> str:
    """The line replay writes on stderr for `path` without --engine."""
    tried = ", ".join(ENGINES)
    return f"kvwatch: no known engine recognised the {lines} lines of {path} (tried: {tried})\n"


def claims(output: str, fmt: str) -> list[str]:
    """The parts of an output that could say which engine a file is: all of it, but for the HELP and
    TYPE lines of the prom exposition (every metric family is declared whatever the files were)."""
    if fmt == "prom":
        return [line for line in output.splitlines() if line and not line.startswith("#")]
    return [output]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", ["empty", "binary", "text", "gzip"])
def test_each_kind_of_unrecognised_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, fmt: str
) -> None:
    """An empty file, binary junk, plain text, a gzip of junk: one line on stderr with the file's
    line count and the engines tried, exit 3; the report names no engine for it, in any format."""
    path, lines = unrecognised(tmp_path)[case]
    status, out, err = run(capsys, "replay", "--format", fmt, "--year", "2026", str(path))
    assert (3, said(path, lines)) == (status, err)
    assert [] == [part for part in claims(out, fmt) if NAMED.search(part)]
    if fmt == "text":
        assert f"source {source_name(str(path))} (no engine recognised, plain)" in out
    if fmt == "json":
        total = json.loads(out)["metrics"]["kvwatch_lines_total"]
        assert [{"labels": {"source": source_name(str(path))}, "value": lines}] == total


def test_one_good_file_and_one_unrecognised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With several files, each unrecognised one is said and the status is 3; the good one is
    reported as it is alone, its engine named."""
    junk, lines = unrecognised(tmp_path)["text"]
    alone = run(capsys, "replay", "--format", "json", "--year", "2026", str(GOOD))
    status, out, err = run(capsys, "replay", "--format", "json", "--year", "2026", str(GOOD), str(junk))
    assert (0, 3, said(junk, lines)) == (alone[0], status, err)
    good = {
        name: [row for row in rows if row["labels"].get("source") == "vllm-docker"]
        for name, rows in json.loads(out)["metrics"].items()
    }
    assert json.loads(alone[1])["metrics"] == {name: rows for name, rows in good.items() if rows}
    status, out, _ = run(capsys, "replay", "--year", "2026", str(GOOD), str(junk))
    assert (3, True, True) == (
        status,
        "source vllm-docker (engine vllm, docker-json)" in out,
        "source notes (no engine recognised, plain)" in out,
    )


def test_files_of_one_source_are_told_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Under one --source, a junk file among good ones is still said, with its own line count (the
    source's count holds both files' lines), and the source names only the engine that recognised it."""
    junk, lines = unrecognised(tmp_path)["binary"]
    status, out, err = run(capsys, "replay", "--year", "2026", "--source", "one", str(junk), str(GOOD))
    assert (3, said(junk, lines), True) == (
        status,
        err,
        "source one (engine vllm, plain, docker-json)" in out,
    )


def test_engine_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With --engine, the line says which engine was asked for; a file it recognises is exit 0."""
    text, lines = unrecognised(tmp_path)["text"]
    empty, _ = unrecognised(tmp_path)["empty"]
    status, out, err = run(capsys, "replay", "--engine", "llamacpp", str(text), str(empty), str(GOOD))
    assert (3, f"kvwatch: no line of {text} was recognised as llamacpp output ({lines} lines)\n") == (
        status,
        err.splitlines(keepends=True)[0],
    )
    assert f"kvwatch: no line of {empty} was recognised as llamacpp output (0 lines)\n" in err
    assert "source notes (no engine recognised, plain)" in out
    assert (0, "") == run(capsys, "replay", "--engine", "vllm", "--year", "2026", str(GOOD))[::2]


def test_the_engines_tried_are_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    """--engine's choices and the config's are the registry's engines, in its order, after `auto`."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["replay", "--engine", "no-such-engine", "x.log"])
    offered = capsys.readouterr().err.rpartition("(choose from ")[2].rstrip(")\n")
    assert ("auto", *ENGINES) == tuple(name.strip("' ") for name in offered.split(","))
    assert [name for name in ENGINES] == [config_for_stdin(name).sources[0].engine for name in ENGINES]
    with pytest.raises(ConfigError) as err:
        config_for_stdin("no-such-engine")
    expected = f'--engine: must be one of {", ".join(("auto", *ENGINES))} (got "no-such-engine")'
    assert expected in str(err.value)


def test_through_a_real_process(tmp_path: Path) -> None:
    """The status and the line as a shell sees them."""
    path, lines = unrecognised(tmp_path)["gzip"]
    done = subprocess.run(
        [sys.executable, "-m", "kvwatch", "replay", "--format", "golden", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (3, said(path, lines)) == (done.returncode, done.stderr)
    assert [] == [line for line in done.stdout.splitlines() if NAMED.search(line)]
