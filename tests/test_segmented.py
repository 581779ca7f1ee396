"""A big dense log parsed in segments by several workers gives exactly what parsing it in one go gives.

The segments are made small here (64 KiB, with a 16 KiB stretch before each to rebuild the state) so
that a generated log has a dozen of them: the workers' guesses of each segment's start state hold on
busy logs; with too short a stretch they fail, and the rest is parsed in one go from the true state.
"""

from __future__ import annotations

import gzip
import os
import random
from itertools import pairwise
from pathlib import Path

import pytest
from test_llamacpp_block import SAMPLES, damaged, generated

from kvwatch import segmented
from kvwatch.engines import make_parser
from kvwatch.engines.llamacpp.events import LlamaRequest
from kvwatch.engines.llamacpp.parser import Asked, LlamacppParser, StateKey
from kvwatch.model import Event, SourceCounts
from kvwatch.parsers.base import ParserSettings
from kvwatch.parsers.run import SourceRun
from kvwatch.sources.framing import Framer
from kvwatch.sources.wholefile import batches, open_log

MAX_LINE = 4096
Outcome = tuple[list[Event], tuple[int, int, int, int]]


def one_go(path: Path) -> Outcome:
    """The file parsed as replay's single child parses it."""
    parser = make_parser("llamacpp", "src", ParserSettings())
    run = SourceRun("src", parser, SourceCounts())
    framer = Framer("src", "plain", parser.markers, MAX_LINE)
    events: list[Event] = []
    with open_log(str(path)) as stream:
        for group in batches(stream, framer, MAX_LINE):
            events += run.take_many(group)
    events += parser.flush()
    counts = run.counts
    return events, (counts.lines, counts.recognized, counts.errors, framer.truncated)


def in_segments(path: Path, workers: int) -> Outcome:
    """The file parsed by segmented.parse."""
    parser = make_parser("llamacpp", "src", ParserSettings())
    run = SourceRun("src", parser, SourceCounts())
    events: list[Event] = []
    work = segmented.parse(str(path), run, workers, MAX_LINE)
    while True:
        try:
            events += next(work)
        except StopIteration as end:
            added, truncated, damage, final = end.value
            break
    assert (added, damage) == ((0, 0, 0), None)  # (counted in run.counts already)
    assert final is not None  # (the parser as the file left it, for a rotated log's next file)
    counts = run.counts
    return events, (counts.lines, counts.recognized, counts.errors, truncated)


def write(tmp_path: Path, name: str, texts: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("".join(text + "\n" for text in texts))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("workers", [2, 3])
def test_busy_logs_are_parsed_in_segments(small: list[int], tmp_path: Path, workers: int) -> None:
    """Generated -lv 4 logs (four busy slots): every guess holds, and the results are the one-go ones."""
    for seed in range(3):
        path = write(tmp_path, f"busy{seed}.log", generated(8000, seed))
        expected = one_go(path)
        assert len(expected[0]) > 100
        assert len(segmented.boundaries(str(path), 0, workers)) > 10
        assert expected == in_segments(path, workers)
    assert [] == small


@pytest.mark.slow
def test_damaged_logs_fall_back_to_one_go_and_agree(small: list[int], tmp_path: Path) -> None:
    """Damaged logs (restarts, lines out of order, torn and foreign lines, cut lines longer than the
    cap): whether a guess holds or not, the results are the one-go ones."""
    rng = random.Random(5)
    base = generated(3000, 1)
    for case in range(16):
        texts = damaged(base, rng)
        if case % 4 == 0:
            texts.insert(rng.randrange(len(texts)), "x" * (MAX_LINE * 3))  # cut at the cap, counted
        path = write(tmp_path, f"damaged{case}.log", texts)
        assert one_go(path) == in_segments(path, 2), case


@pytest.mark.slow
def test_a_wrong_guess_falls_back_to_one_go(
    small: list[int], rounds: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stretch too short to rebuild the requests in progress: a wrong guess stops the workers and
    new ones start from the true state; after three rounds in a row whose first guess was wrong, the
    rest is parsed in one go from the true state, with the same results."""
    monkeypatch.setattr(segmented, "WARM_UP", 1 << 10)
    path = write(tmp_path, "busy.log", generated(8000, 3))
    assert one_go(path) == in_segments(path, 2)
    assert len(small) == 1 and len(rounds) == 3  # (three rounds in a row with a wrong first guess)


def idle_slot(texts: list[str], start: float, stop: float) -> tuple[list[str], list[str]]:
    """The lines without slot 1's requests between its first release after `start` of them and its
    first after `stop` (whole requests: the slot goes idle, then serves again); and the kept release's
    timing and release lines (those of the slot's last task before it went idle)."""
    releases = [i for i, text in enumerate(texts) if "id  1 |" in text and "stop processing" in text]
    first = next(i for i in releases if i > start * len(texts))
    last = next(i for i in releases if i > stop * len(texts))
    kept = [t for i, t in enumerate(texts) if not (first < i <= last and "id  1 |" in t)]
    return kept, texts[first - 4 : first + 1]


@pytest.mark.slow
def test_an_idle_slot_keeps_the_guesses(small: list[int], tmp_path: Path) -> None:
    """A slot idle through whole segments, then serving again: a worker's guess does not know its
    last finished task (nor anything else of it, from before the lines the worker skipped), and
    nothing in those segments asks; every guess holds, and the results are the one-go ones."""
    for seed in range(3):
        texts, _ = idle_slot(generated(8000, seed), 0.2, 0.7)
        path = write(tmp_path, f"idle{seed}.log", texts)
        expected = one_go(path)
        assert expected == in_segments(path, 2)
        assert sum(event.slot == 1 for event in expected[0] if isinstance(event, LlamaRequest)) > 20
    assert [] == small


@pytest.mark.slow
@pytest.mark.parametrize("at", [0.35, 0.5, 0.65])
def test_a_late_line_of_an_idle_slot_is_checked(
    small: list[int], rounds: list[int], tmp_path: Path, at: float
) -> None:
    """Lines of the idle slot's last task again, long after it finished: the whole run drops them
    (a late line of a request already emitted), a guess that does not know that task would make a
    second record of it. That guess is refused, new workers go on from the true state, and the
    results are the one-go ones: one record."""
    texts, last_lines = idle_slot(generated(8000, 2), 0.2, 0.7)
    where = int(at * len(texts))
    stamp = texts[where - 1].split(" ", 1)[0]  # (in order: the lines take the time of the one before)
    texts[where:where] = [stamp + " " + text.split(" ", 1)[1] for text in last_lines]
    path = write(tmp_path, "late.log", texts)
    expected = one_go(path)
    task = int(last_lines[-1].split("| task ")[1].split(" ")[0])
    assert 1 == sum(isinstance(event, LlamaRequest) and event.task == task for event in expected[0])
    assert expected == in_segments(path, 2)
    assert [] == small and len(rounds) == 2 and rounds[0] > rounds[1] > 1


def test_reconcile_takes_what_the_lines_did_not_change_from_the_truth() -> None:
    """reconcile(): a guess is kept when the rest of the state is equal and every question of the
    slots' last finished tasks has one answer from both; the end state then has the true task of
    every slot that finished none in the lines, and the lines' own of the others."""
    reconcile = LlamacppParser.reconcile
    core, later = ("clock", "slots"), ("clock'", "slots'")
    guess = core, {None: {0: 5}, 8081: {1: 2}}
    truth = core, {None: {0: 5, 3: 9}, 8081: {1: 4}}
    end = later, {None: {0: 7, 3: 1}, 8081: {1: 6}, 8082: {0: 3}}
    asked = {None: ([(0, 5), (3, 4), (0, 7)], {0}), 8081: ([], None)}
    # slot 0 finished 7 in the lines; slot 3 finished none (its 1 was the guess's); port 8081
    # restarted (its own tasks, whatever came before); port 8082 is new
    assert (later, {None: {0: 7, 3: 9}, 8081: {1: 6}, 8082: {0: 3}}) == reconcile(guess, truth, asked, end)
    assert reconcile(guess, truth, {None: ([(3, 9)], set())}, end) is None  # 9 is 3's last: yes / no
    assert reconcile(guess, truth, {8081: ([(1, 2)], None)}, end) is None  # asked before the restart
    assert reconcile((later, guess[1]), truth, {}, end) is None  # the rest of the state differs
    assert reconcile(truth, truth, asked, end) == reconcile(guess, truth, asked, end)


def test_segments_are_cut_at_line_starts_the_last_stretch_at_half_size(
    small: list[int], tmp_path: Path
) -> None:
    """Segments of the target size, but those of the last `workers` targets half of it (two per
    worker), so that the workers finish together and the parent's share after them is small; all at
    line starts."""
    path = write(tmp_path, "busy.log", generated(8000, 3))
    data = path.read_bytes()
    for workers in (2, 3):
        cuts = segmented.boundaries(str(path), 100, workers)
        assert cuts[0][0] == 100 and cuts[-1][1] == len(data)
        assert all(stop == start for (_, stop), (start, _) in pairwise(cuts))
        assert all(data[start - 1 : start] == b"\n" for start, _ in cuts[1:])
        sizes = [stop - start for start, stop in cuts[:-1]]  # (the last one: what is left)
        whole = [size for size in sizes if 64 << 10 <= size < (64 << 10) + 200]
        halves = [size for size in sizes if 32 << 10 <= size < (32 << 10) + 200]
        assert len(whole) + len(halves) == len(sizes) and len(whole) > 5
        assert 2 * workers - 1 <= len(halves) <= 2 * workers and sizes[-len(halves) :] == halves


def test_the_first_segments_ramp_up(
    small: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the ramp, the first segments are an eighth, a quarter and half of the target (the parent
    gets its first records early), then as without it; all at line starts, the file covered."""
    monkeypatch.setattr(segmented, "RAMP", 3)
    path = write(tmp_path, "busy.log", generated(8000, 3))
    data = path.read_bytes()
    cuts = segmented.boundaries(str(path), 100, 2)
    assert cuts[0][0] == 100 and cuts[-1][1] == len(data)
    assert all(stop == start for (_, stop), (start, _) in pairwise(cuts))
    assert all(data[start - 1 : start] == b"\n" for start, _ in cuts[1:])
    sizes = [stop - start for start, stop in cuts]
    for size, want in zip(sizes[:4], (8 << 10, 16 << 10, 32 << 10, 64 << 10), strict=True):
        assert want <= size < want + 200
    assert len(sizes) > 8 and all(size < (64 << 10) + 200 for size in sizes)


@pytest.mark.parametrize("workers", [2, 3])
def test_ramped_segments_agree(
    small: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """The first segments ramped up (stretches longer than them start where the worker is): every
    guess holds, and the results are the one-go ones."""
    monkeypatch.setattr(segmented, "RAMP", 3)
    path = write(tmp_path, "busy.log", generated(8000, 4))
    expected = one_go(path)
    assert segmented.boundaries(str(path), 1 << 10, workers)[0][1] < (10 << 10) + 1024
    assert expected == in_segments(path, workers)
    assert [] == small


@pytest.mark.slow
def test_a_second_server_run_agrees(
    small: list[int], rounds: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two server runs back to back: the second's clock starts again from the first's last time,
    which a worker cannot guess when the restart lies before the stretch it parses. That guess is
    refused as soon as it is made, before the segment is parsed (never reconciled afterwards), and
    new workers go on from the true state after it, in segments."""
    reconciled: list[bool] = []
    real = LlamacppParser.reconcile

    def spy(guess: StateKey, truth: StateKey, asked: Asked, end: StateKey) -> StateKey | None:
        reconciled.append(LlamacppParser.may_hold(guess, truth))
        return real(guess, truth, asked, end)

    monkeypatch.setattr(LlamacppParser, "reconcile", staticmethod(spy))
    second = generated(4000, 2)
    for lines in range(4000, 4400, 20):  # (the restart well inside a segment, before any stretch)
        path = write(tmp_path, "two-runs.log", generated(lines, 1) + second)
        restart = path.stat().st_size - len("".join(text + "\n" for text in second))
        head = segmented._line_start(str(path), segmented.HEAD, 0)
        cuts = [stop for _, stop in segmented.boundaries(str(path), head, 2)]
        following = min(cut for cut in cuts if cut > restart)
        if following - restart > (32 << 10) and restart - max(c for c in cuts if c <= restart) > (4 << 10):
            break
    else:
        raise AssertionError("no layout with the restart inside a segment")
    expected = one_go(path)
    assert expected == in_segments(path, 2)
    assert any(type(event).__name__ == "ServerRestart" for event in expected[0][1:])
    assert [] == small and len(rounds) == 2 and rounds[1] > 2
    assert all(reconciled)


@pytest.mark.slow
def test_samples_one_after_another(small: list[int], tmp_path: Path) -> None:
    """The llama.cpp samples back to back: restarts, router ports, jsonl and legacy timing lines."""
    texts = [text for path in SAMPLES for text in path.read_text().splitlines()]
    path = write(tmp_path, "samples.log", texts * 3)
    assert one_go(path) == in_segments(path, 2)


def test_which_files_are_parsed_in_segments(
    small: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain files of two segments or more, a parser that tells its state, and two cores or more."""
    texts = generated(2000, 4)
    plain = write(tmp_path, "plain.log", texts)
    packed = tmp_path / "packed.log.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    tiny = write(tmp_path, "tiny.log", texts[:20])
    llama = make_parser("llamacpp", "src", ParserSettings())
    vllm = make_parser("vllm", "src", ParserSettings())
    assert 2 == segmented.workers_for(str(plain), llama)
    assert 0 == segmented.workers_for(str(packed), llama)  # (gzip: no seeking into it)
    assert 0 == segmented.workers_for(str(tiny), llama)
    assert 0 == segmented.workers_for(str(plain), vllm)
    monkeypatch.setattr(segmented, "cores", lambda: 1)
    assert 0 == segmented.workers_for(str(plain), llama)
    monkeypatch.setattr(segmented, "cores", lambda: 64)  # one per core, four at most unless asked
    assert [4, 0, 3, 8] == [segmented.workers_for(str(plain), llama, jobs) for jobs in (None, 1, 3, 8)]


def test_replay_jobs_option(small: list[int], children: list[str], tmp_path: Path) -> None:
    """`kvwatch replay --jobs N` bounds the workers (1: the one-child parse); a bad N is refused."""
    from kvwatch import cli

    path = write(tmp_path, "llama.log", generated(8000, 4))
    outputs = []
    for jobs in ("2", "1"):
        out = tmp_path / f"out{jobs}.prom"
        with out.open("w") as stream, pytest.MonkeyPatch.context() as patch:
            patch.setattr("sys.stdout", stream)
            assert 0 == cli.main(["replay", "--format", "prom", "--jobs", jobs, str(path)])
        outputs.append(out.read_text())
    assert ["kvwatch-parser-0", "kvwatch-parser-1", "kvwatch-parser"] == children
    assert outputs[0] == outputs[1] and "kvwatch_llamacpp_requests_total" in outputs[0]
    with pytest.raises(SystemExit) as refused:
        cli.main(["replay", "--jobs", "0", str(path)])
    assert 2 == refused.value.code


def test_a_stretch_longer_than_a_segment_starts_where_the_worker_is(
    small: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stretch longer than the segment between a worker's two segments starts at the end of its
    last one (never reading a line twice), so it covers that whole segment and every guess holds."""
    monkeypatch.setattr(segmented, "MIN_SEGMENT", 8 << 10)
    monkeypatch.setattr(segmented, "MAX_SEGMENT", 8 << 10)
    monkeypatch.setattr(segmented, "WARM_UP", 32 << 10)
    path = write(tmp_path, "busy.log", generated(4000, 5))
    assert one_go(path) == in_segments(path, 2)
    assert [] == small


def test_replay_parses_a_big_dense_log_in_segments(
    small: list[int], children: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kvwatch replay` of a big llama.cpp -lv 4 log beside a vLLM one: the workers parse it, and
    metrics, alerts and counts are those of a replay without segments."""
    from kvwatch.detectors import DetectorSettings
    from kvwatch.output.exposition import golden_lines
    from kvwatch.replay import plan, replay

    texts = generated(8000, 4)
    paths = [str(write(tmp_path, "llama.log", texts)), str(Path(SAMPLES[0]).parent / "vllm-docker.log")]

    def outcome() -> tuple[list[str], dict[str, tuple[int, int, int, int]]]:
        result = replay(plan(paths, "auto", None), ParserSettings(now_year=2026), DetectorSettings())
        counts = {k: (c.lines, c.recognized, c.errors, c.truncated) for k, c in result.summary.counts.items()}
        return golden_lines(result.registry, result.alerts), counts

    segmented_result = outcome()
    assert ["kvwatch-parser-0", "kvwatch-parser-1", "kvwatch-parser"] == children
    children.clear()
    monkeypatch.setattr(segmented, "cores", lambda: 1)  # the one-child path
    assert outcome() == segmented_result
    assert ["kvwatch-parser", "kvwatch-parser"] == children
    assert segmented_result[1]["llama"][0] == len(texts)


@pytest.mark.slow
def test_a_replay_of_many_big_files_runs_few_children(
    small: list[int], children: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Big files replayed together start children while the replay may run more (by default one per
    core and at least four; `--jobs N`: N), in the order given; the rest are read inline, with the
    same metrics, alerts and counts."""
    from kvwatch.detectors import DetectorSettings
    from kvwatch.output.exposition import golden_lines
    from kvwatch.replay import plan, replay
    from kvwatch.sources import forked

    logs = [str(write(tmp_path, f"llama{seed}.log", generated(6000, seed))) for seed in range(3)]
    paths = [*logs, str(Path(SAMPLES[0]).parent / "vllm-docker.log")]  # (over 64 KiB: parsed ahead)

    def outcome(jobs: int | None) -> tuple[list[str], dict[str, tuple[int, int, int, int]]]:
        result = replay(
            plan(paths, "auto", None), ParserSettings(now_year=2026), DetectorSettings(), jobs=jobs
        )
        counts = {k: (c.lines, c.recognized, c.errors, c.truncated) for k, c in result.summary.counts.items()}
        return golden_lines(result.registry, result.alerts), counts

    workers = ["kvwatch-parser-0", "kvwatch-parser-1"]
    expected = outcome(None)
    assert workers * 2 == children  # two cores, four children: the first two logs in segments
    for jobs, started in (
        (1, ["kvwatch-parser"]),
        (3, [*workers, "kvwatch-parser"]),
        (8, [*workers * 3, "kvwatch-parser"]),
    ):
        children.clear()
        assert expected == outcome(jobs), jobs
        assert started == children, jobs
    children.clear()
    monkeypatch.setattr(forked, "FORK_MIN_BYTES", 1 << 40)
    assert expected == outcome(None)  # every file inline
    assert [] == children


def test_workers_yield_the_cores_to_the_parent(
    small: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each worker runs WORKER_NICENESS below the parent's priority (the parent, which applies every
    event in order, is the stage that cannot be split); the results are the one-go ones."""
    seen = tmp_path / "niceness"
    real = segmented._segmentable

    def spy(parser: object) -> object:
        with seen.open("a") as out:  # (in the worker: written to a file the parent reads)
            out.write(f"{os.getpid()} {os.getpriority(os.PRIO_PROCESS, 0)}\n")
        return real(parser)  # type: ignore[arg-type]

    monkeypatch.setattr(segmented, "_segmentable", spy)
    path = write(tmp_path, "busy.log", generated(3000, 1))
    expected = one_go(path)
    assert expected == in_segments(path, 2)
    asked = dict(line.split() for line in seen.read_text().splitlines())
    parent = os.getpriority(os.PRIO_PROCESS, 0)
    assert str(parent) == asked.pop(str(os.getpid()))  # (the parent reads the head: its own unchanged)
    assert 2 == len(asked)
    assert {str(min(19, parent + segmented.WORKER_NICENESS))} == set(asked.values())
