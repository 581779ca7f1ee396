"""Big files are framed (dense and json-file ones also parsed) in a forked child: results as the plain
replay's; errors and damaged gzip reported; no child outlives its replay."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest
from corpora import SAMPLES
from daemon_helpers import wait_until

from kvwatch.detectors import DetectorSettings
from kvwatch.output.exposition import golden_lines
from kvwatch.parsers.base import ParserSettings
from kvwatch.replay import ReplayInput, forked, plan, replay
from kvwatch.replay.files import HEAD
from kvwatch.replay.speedups import PLAIN, Speedups

SETTINGS = ParserSettings(now_year=2026)
#: Every file, however small, framed (and parsed) in a child.
FORKED = Speedups(fork_bytes=0, dense_fork_bytes=0)


def outcome(
    inputs: list[ReplayInput], speedups: Speedups = FORKED, jobs: int | None = None
) -> tuple[list[str], dict[str, tuple[int, int, int, int]], list[str]]:
    """Everything a replay reports: metrics and alerts, per-source counts, damage notes."""
    result = replay(inputs, SETTINGS, DetectorSettings(), jobs, speedups=speedups)
    counts = {
        name: (c.lines, c.recognized, c.errors, c.truncated) for name, c in result.summary.counts.items()
    }
    return golden_lines(result.registry, result.alerts), counts, result.damaged


def _inline(paths: list[str]) -> tuple[list[str], dict[str, tuple[int, int, int, int]], list[str]]:
    """The plain replay's outcome (one process, line by line)."""
    return outcome(plan(paths, "auto", None), PLAIN)


def test_forked_framing_gives_the_inline_result(tmp_path: Path) -> None:
    """Docker json-file, plain and gzip'd vLLM logs replayed together: identical either way (the
    json-file log parsed in its child too)."""
    packed = tmp_path / "vllm-docker.log.1.gz"
    packed.write_bytes(gzip.compress((SAMPLES / "vllm-docker.log").read_bytes(), mtime=0))
    plain = tmp_path / "vllm-served.log"  # `vllm serve >> file`: stats lines among many access lines
    access = '(APIServer pid=1) INFO:     10.0.0.7:4242 - "GET /health HTTP/1.1" 200 OK\n' * 6
    lines = (SAMPLES / "vllm-write-only-offload.log").read_text().splitlines(keepends=True)
    plain.write_text("".join(line + access for line in lines))
    paths = [str(packed), str(plain)]
    expected = _inline(paths)
    assert expected == outcome(plan(paths, "auto", None))
    assert any("kvwatch_alert_firing" in line for line in expected[0])  # the comparison covers alerts


def test_a_dense_plain_log_is_framed_and_parsed_in_a_child(tmp_path: Path) -> None:
    """Nearly every line of a llama.cpp -lv 4 log is parsed: the child parses too and sends events
    (pickling every line would cost more than parsing it). Together with a sparse file, and with a
    restart and a request cut off at the end of the file, the results are the inline ones."""
    healthy = (SAMPLES / "llamacpp-healthy-two-slots.log").read_text()
    restarted = tmp_path / "llamacpp-restarted.log"  # a second server run: its clock starts again
    restarted.write_text(healthy + (SAMPLES / "llamacpp-swa-checkpoints.log").read_text())
    cut = tmp_path / "llamacpp-cut.log"  # ends inside a request: flush() drops it, in the child too
    lines = healthy.splitlines(keepends=True)
    cut.write_text("".join(lines[: len(lines) * 2 // 3]))
    paths = [str(SAMPLES / "llamacpp-jsonl.log"), str(restarted), str(cut), str(SAMPLES / "vllm-docker.log")]
    expected = _inline(paths)
    assert expected == outcome(plan(paths, "auto", None))
    assert all(counts[1] > 0 for counts in expected[1].values())


def test_a_json_file_log_of_lmcache_lines_is_parsed_in_a_child(tmp_path: Path) -> None:
    """vLLM's container log with LMCache's lines parsed in a child (its framing hands LMCache's records
    over undecoded, for the parser to read from their bytes), as vLLM's alone: as inline."""
    lines = (SAMPLES / "lmcache-0.5.6-tp2.log").read_text().splitlines()
    stamp = '","stream":"stderr","time":"2026-09-14T08:00:00.5Z"}\n'
    lmcache = tmp_path / "vllm-lmcache-json.log"
    lmcache.write_text("".join('{"log":' + json.dumps(line + "\n")[:-1] + stamp for line in lines))
    paths = [str(lmcache), str(SAMPLES / "vllm-docker.log")]
    expected = _inline(paths)
    assert expected == outcome(plan(paths, "auto", None))
    assert expected[1]["vllm-lmcache"][1] > 100  # (LMCache's records recognised)


def test_a_json_file_log_whose_lmcache_lines_come_after_a_long_start_is_parsed_in_a_child(
    tmp_path: Path,
) -> None:
    """LMCache's records only after more than the first read's worth of vLLM's own lines (a long
    startup): parsed in a child, as inline."""
    stamp = '","stream":"stderr","time":"2026-09-14T08:00:00.5Z"}\n'
    start = (SAMPLES / "vllm-docker.log").read_bytes()
    start *= HEAD // len(start) + 1
    lines = (SAMPLES / "lmcache-0.5.6-tp2.log").read_text().splitlines() * 40
    log = tmp_path / "vllm-lmcache-late.log"
    log.write_bytes(
        start + "".join('{"log":' + json.dumps(line + "\n")[:-1] + stamp for line in lines).encode()
    )
    expected = _inline([str(log)])
    assert expected == outcome(plan([str(log)], "auto", None))
    assert expected[1]["vllm-lmcache-late"][1] > 1000


@pytest.mark.slow
def test_damaged_gzip_replays_what_came_before_and_says_so(tmp_path: Path) -> None:
    """A .gz cut short (rotated while copied) keeps the lines before the cut, in both paths; its
    counts and the damage note come back from the child that parsed it."""
    whole = gzip.compress((SAMPLES / "vllm-docker.log").read_bytes() * 20, mtime=0)
    cut = tmp_path / "vllm.log.2.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    expected = _inline([str(cut)])
    got = outcome(plan([str(cut)], "auto", None))
    assert expected == got
    _, counts, damaged = got
    assert counts["vllm"][0] > 1000
    assert 1 == len(damaged) and "the gzip data ends early" in damaged[0] and str(cut) in damaged[0]
    # a dense log is parsed in the child: its counts and the damage note come back from there
    whole = gzip.compress((SAMPLES / "llamacpp-healthy-two-slots.log").read_bytes() * 20, mtime=0)
    llama = tmp_path / "llama.log.1.gz"
    llama.write_bytes(whole[: len(whole) // 2])
    expected = _inline([str(llama)])
    assert expected == outcome(plan([str(llama)], "auto", None))
    assert str(llama) in expected[2][0]  # (the lines before the damage: issue 34 makes them all come)


def test_an_error_in_the_child_is_raised_in_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's failure is the replay's failure, not a silent short result."""

    def broken(*_: object) -> object:
        raise PermissionError(13, "Permission denied", "vllm.log")

    monkeypatch.setattr(forked, "batches", broken)  # the forked child inherits this
    with pytest.raises(PermissionError):
        outcome(plan([str(SAMPLES / "vllm-docker.log")], "vllm", None))


def test_stopping_early_ends_the_child() -> None:
    """A parent that stops reading a child's items (an error downstream) leaves no child behind."""

    def work() -> Generator[int, None, None]:
        yield from range(10**9)

    items = forked.in_child(work, "kvwatch-test")
    assert [0, 1] == [next(items), next(items)]
    items.close()
    assert [] == multiprocessing.active_children()


def _children_of(pid: int) -> list[int]:
    """Live child processes of pid (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _replay_running(log: Path, setup: str = "", pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    """`kvwatch replay --format prom LOG` started in a session of its own, after `setup` (Python run
    first in its process, e.g. to lower thresholds), with `pass_fds` open in it; stderr piped."""
    # Ctrl-C as a shell's foreground job gets it: SIGINT at Python's own handler. A runner that started
    # the tests as a background job (`cmd &` in a script) passes SIGINT on ignored, and Python keeps an
    # ignored SIGINT ignored, as it should for a background replay: not the case tested here.
    script = (
        "import signal, sys\nfrom kvwatch import cli\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        f"{setup}sys.exit(cli.main(sys.argv[1:]))\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script, "replay", "--format", "prom", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        pass_fds=pass_fds,
    )


def _seen(
    proc: subprocess.Popen[bytes], find: Callable[[], list[Any]], what: str, enough: int = 1
) -> list[Any]:
    """What `find` finds of the running replay's processes, once it finds `enough` (within 30 s)."""
    deadline = time.monotonic() + 30
    while len(found := find()) < enough:
        assert proc.poll() is None and time.monotonic() < deadline, f"no {what} seen"
    return found


def test_ctrl_c_ends_replay_and_its_child_quietly(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the process group) while a child reads a big file: exit 130, one line, no
    process left. The child says on a pipe that it has read its first batch, then reads on only once
    the replay has ended (so it cannot end first, however slow the machine): the signal is sent then."""
    big = tmp_path / "vllm-big.log"
    block = (SAMPLES / "vllm-docker.log").read_bytes()
    with big.open("wb") as out:
        for _ in range((Speedups().fork_bytes or 0) // len(block) * 3):
            out.write(block)
    report, told = os.pipe()
    held, hold = os.pipe()  # (the replay holds `hold` open: its end is read as EOF by `held`)
    try:
        proc = _replay_running(
            big,
            "import os\n"
            "from kvwatch.replay import forked\n"
            "real = forked.batches\n"
            "def batches(*args):\n"
            "    reads = real(*args)\n"
            "    yield next(reads)\n"
            f"    os.write({told}, b'reading %d\\n' % os.getpid())\n"
            f"    os.close({hold})\n"
            f"    os.read({held}, 1)  # (until the replay and its other children have ended)\n"
            "    yield from reads\n"
            "forked.batches = batches\n",
            pass_fds=(told, held, hold),
        )
        os.close(told)
        os.close(hold)
        said = _said(report, proc)
    finally:
        os.close(report)
        os.close(held)
    assert said.startswith(b"reading "), said
    child = int(said.split()[1])
    assert child in [c for pid in [proc.pid, *_children_of(proc.pid)] for c in _children_of(pid)]
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        states = _states([proc.pid, *_children_of(proc.pid), child])
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"the replay did not end on Ctrl-C: {states}") from None
    assert (130, b"kvwatch: interrupted\n") == (proc.returncode, err), err
    wait_until(lambda: _gone(child), 20.0, "the reading child ending")


def _states(pids: list[int]) -> dict[int, dict[str, str]]:
    """What /proc says of each process where it waits (state, signals blocked, ignored and caught,
    kernel wait channel): said when a replay does not end, so that a rare hang names its cause."""
    out: dict[int, dict[str, str]] = {}
    for pid in pids:
        try:
            status = (Path("/proc") / str(pid) / "status").read_text()
            wchan = (Path("/proc") / str(pid) / "wchan").read_text()
        except OSError:
            continue
        keep = ("State", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt", "Threads")
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        out[pid] = {key: fields[key].strip() for key in keep if key in fields} | {"wchan": wchan}
    return out


def _said(report: int, proc: subprocess.Popen[bytes]) -> bytes:
    """The first line written to the `report` pipe by the replay's child (within 60 s)."""
    deadline = time.monotonic() + 60
    said = b""
    while not said.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0 and proc.poll() is None, f"the child never said it was reading ({said!r})"
        ready, _, _ = select.select([report], [], [], left)
        if ready:
            chunk = os.read(report, 4096)
            assert chunk, "the report pipe closed before the child said anything"
            said += chunk
    return said


def _gone(pid: int) -> bool:
    """Whether a process has ended (a zombie nobody reaped has ended too)."""
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split() or ["Z"])[0] == "Z"
    except OSError:
        return True


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_replay_stopped_alone_leaves_no_child_behind(tmp_path: Path, sig: int) -> None:
    """The replay process alone gets SIGTERM (a supervisor, `kill PID`) or SIGKILL while its child parses
    a big llama.cpp log. SIGTERM: exit 143 and one line, as Ctrl-C, its child stopped; SIGKILL: the child
    ends by itself (no pipe end is left open to it), never blocked for good."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import gen_llamacpp

    log = tmp_path / "llama.log"
    with log.open("w") as out:
        gen_llamacpp.generate(out, 400000, None, 1)  # (a dense log big enough for a child, and to stop)
    proc = _replay_running(log)
    workers = _seen(proc, lambda: _children_of(proc.pid), "child")  # (up: the parse is under way)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    if sig == signal.SIGTERM:
        assert (143, b"kvwatch: terminated\n") == (proc.returncode, err)
    else:
        assert -signal.SIGKILL == proc.returncode
    wait_until(lambda: all(map(_gone, workers)), 20.0, "the child ending")


def test_files_of_one_source_parsed_in_children_add_up(tmp_path: Path) -> None:
    """A log and its rotated predecessor are one source: the line counts their children bring back
    add up (each child counts on its own copy), as inline, beside a file of the same source read inline."""
    healthy = (SAMPLES / "llamacpp-healthy-two-slots.log").read_text()
    (tmp_path / "llama.log.1").write_text(healthy)
    (tmp_path / "llama.log").write_text(healthy + "not a llama.cpp line\n")
    (tmp_path / "llama.log.2.gz").write_bytes(gzip.compress(healthy.encode(), mtime=0))
    paths = [str(tmp_path / name) for name in ("llama.log.2.gz", "llama.log.1", "llama.log")]
    expected = _inline(paths)
    assert expected == outcome(plan(paths, "llamacpp", None))
    assert 3 * healthy.count("\n") + 1 == expected[1]["llama"][0]


def test_the_files_of_a_rotated_log_take_the_child_in_turn(tmp_path: Path) -> None:
    """With one child allowed, a log's rotated files are read one after another, each in the child
    the file before it left: none is read inline for want of one, and the result is the inline one."""
    healthy = (SAMPLES / "llamacpp-healthy-two-slots.log").read_text()
    for name in ("llama.log.2", "llama.log.1", "llama.log"):
        (tmp_path / name).write_text(healthy)
    paths = [str(tmp_path / name) for name in ("llama.log", "llama.log.1", "llama.log.2")]
    expected = _inline(paths)
    assert expected == outcome(plan(paths, "llamacpp", None), jobs=1)


@pytest.mark.slow
def test_a_child_starts_before_the_pipeline_is_imported(tmp_path: Path) -> None:
    """A big file's child is forked as soon as its parser is made: prometheus_client and the detectors
    load in the parent while it reads (a fresh interpreter, as `kvwatch replay` starts)."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        "from kvwatch.parsers.base import ParserSettings\n"
        "from kvwatch.replay import forked, plan, replay\n"
        "from kvwatch.replay.speedups import Speedups\n"
        "real, seen = forked.in_child, []\n"
        "def spy(work, name):\n"
        "    seen.append(('prometheus_client' in sys.modules, 'kvwatch.detectors' in sys.modules))\n"
        "    return real(work, name)\n"
        "forked.in_child = spy\n"
        "paths = sys.argv[1:]\n"
        "eager = Speedups(fork_bytes=0, dense_fork_bytes=0)\n"
        "result = replay(plan(paths, 'auto', None), ParserSettings(now_year=2026), speedups=eager)\n"
        "print(seen, sorted(result.summary.counts))\n"
    )
    paths = [str(SAMPLES / "llamacpp-healthy-two-slots.log"), str(SAMPLES / "vllm-docker.log")]
    proc = subprocess.run([sys.executable, str(script), *paths], capture_output=True, text=True, check=True)
    expected = "[(False, False), (False, False)]"
    assert f"{expected} ['llamacpp-healthy-two-slots', 'vllm-docker']" == proc.stdout.strip()


@pytest.mark.slow
def test_a_json_file_replay_killed_leaves_no_stage_behind(tmp_path: Path) -> None:
    """SIGKILL to the replay alone while its json-file log is parsed in a child that fills its pipe:
    the child ends by itself (its pipe's far end closes), never blocked for good."""
    big = tmp_path / "vllm-big.log"
    block = (SAMPLES / "vllm-docker.log").read_bytes()
    with big.open("wb") as out:
        for _ in range((64 << 20) // len(block)):
            out.write(block)
    proc = _replay_running(
        big,
        "import time\n"
        "from kvwatch import pipeline\n"
        "real = pipeline.Pipeline.apply\n"
        "def slow(self, event):\n"
        "    time.sleep(0.001)\n"  # (a parent that reads slowly: both stages fill their pipes)
        "    return real(self, event)\n"
        "pipeline.Pipeline.apply = slow\n",
    )
    stages = _seen(proc, lambda: _children_of(proc.pid), "child")
    proc.kill()
    proc.communicate(timeout=30)
    wait_until(lambda: all(map(_gone, stages)), 20.0, "the parsing child ending")
