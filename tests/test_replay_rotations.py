"""A log and its rotated files replay as the one log the daemon followed across the rotations."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from corpora import sample_logs

from kvwatch.cli import main
from kvwatch.parsers.base import ParserSettings
from kvwatch.replay import ReplayInput
from kvwatch.replay.driver import age, rotations

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sample_logs(rotated=False)
#: Replayed five times each: the new-api day (the biggest sample) takes seconds.
SLOW_SAMPLES = {"usage-newapi.log"}


def golden(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """`kvwatch replay --format golden --year 2026 --source log ARGS`."""
    assert 0 == main(["replay", "--format", "golden", "--year", "2026", "--source", "log", *args])
    return capsys.readouterr().out


def cut(sample: Path, tmp_path: Path, at: float) -> list[Path]:
    """The sample cut at a share of its lines into `log.2`, `log.1` and `log`, newest first (the order
    a shell's `log*` gives)."""
    lines = sample.read_bytes().splitlines(keepends=True)
    first, second = int(len(lines) * at), int(len(lines) * (at + 1) / 2)
    parts = {"log.2": lines[:first], "log.1": lines[first:second], "log": lines[second:]}
    for name, part in parts.items():
        (tmp_path / name).write_bytes(b"".join(part))
    return [tmp_path / "log", tmp_path / "log.1", tmp_path / "log.2"]


@pytest.mark.parametrize(
    "sample",
    [pytest.param(s, marks=pytest.mark.slow) if s.name in SLOW_SAMPLES else s for s in SAMPLES],
    ids=lambda p: p.name,
)
def test_a_sample_cut_into_rotated_files_replays_as_the_whole(
    sample: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cut anywhere (mid-request, between a stats line and its KV line): the same metrics and alerts
    as the whole file, whatever order the files are named in."""
    whole = golden(capsys, str(sample))
    for at in (0.3, 0.5):
        files = cut(sample, tmp_path, at)
        assert whole == golden(capsys, *map(str, files)), at
        assert whole == golden(capsys, *map(str, reversed(files))), at


def test_rotated_files_parsed_in_children_hand_their_parser_on(tmp_path: Path) -> None:
    """Each file of a rotated llama.cpp log parsed in a child of its own, one after another (one child
    allowed), hands its parser to the next file: the result is the plain replay's of the whole log."""
    from kvwatch.output.exposition import golden_lines
    from kvwatch.replay import plan, replay
    from kvwatch.replay.speedups import PLAIN, Speedups

    sys.path.insert(0, str(ROOT / "bench"))
    import gen_llamacpp

    log = tmp_path / "llama.log"
    with log.open("w") as out:
        gen_llamacpp.generate(out, 3000, None, 1)
    rotated = tmp_path / "rotated"
    rotated.mkdir()
    settings = ParserSettings(year=2026)
    for at in (0.3, 0.7):  # a request in progress at each cut
        files = [str(p) for p in cut(log, rotated, at)]
        outputs = [
            golden_lines(result.registry, result.alerts)
            for result in (
                replay(plan(files, "auto", "llama"), settings, speedups=PLAIN),
                replay(plan(files, "auto", "llama"), settings, jobs=1, speedups=Speedups(fork_bytes=0)),
            )
        ]
        assert outputs[0] == outputs[1], at


def test_rotations_are_told_by_directory_name_and_suffix() -> None:
    """Oldest first by the rotation number (gzip or not); the same name in another directory (another
    host's log) or of another engine is another log, merged by time but parsed apart."""
    paths = [
        "/a/vllm.log",
        "/a/vllm.log.10.gz",
        "/b/vllm.log",
        "/a/vllm.log.2",
        "/a/vllm.log.1",
        "/a/vllm.log.3",
    ]
    engines = ["vllm"] * 5 + ["llamacpp"]
    logs = rotations([ReplayInput(p, "vllm", e) for p, e in zip(paths, engines, strict=True)])
    assert [
        ["/a/vllm.log.10.gz", "/a/vllm.log.2", "/a/vllm.log.1", "/a/vllm.log"],
        ["/b/vllm.log"],
        ["/a/vllm.log.3"],
    ] == [[item.path for item in files] for files in logs]
    assert (-10, -1, 0) == (age("x.log.10.gz"), age("x-json.log.1"), age("x-json.log"))


def test_a_containers_logs_are_one_source_named_after_the_container(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kvwatch replay /var/lib/docker/containers/ID/ID-json.log*`: the source is the container's
    name (as the daemon's docker source would be configured), not its 64-digit id."""
    from test_docker_source import Container

    box = Container(tmp_path / "docker", "vllm-main", "2026-08-19T06:39:00.1Z")
    assert box.fh is not None
    box.fh.close()
    sample = ROOT / "samples" / "vllm-docker.log"
    logs = cut(sample, tmp_path, 0.5)
    for log, name in zip(logs, ("", ".1", ".2"), strict=True):
        log.rename(box.dir / f"{box.id}-json.log{name}")
    assert 0 == main(["replay", "--format", "golden", "--year", "2026", str(sample)])
    whole = capsys.readouterr().out.replace('source="vllm-docker"', 'source="vllm-main"')
    rotated = sorted(str(p) for p in box.dir.glob("*-json.log*"))
    assert 0 == main(["replay", "--format", "golden", "--year", "2026", *rotated])
    assert whole == capsys.readouterr().out
