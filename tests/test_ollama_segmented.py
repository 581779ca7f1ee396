"""A big Ollama log parsed in segments by several workers gives exactly what parsing it in one go
gives: each runner's llama.cpp state, the conversations numbered per runner and slot, the runners'
models, the journald clock and the blindness facts carry across."""

# Log lines are built whole from their format strings, however long.
# ruff: noqa: E501

from __future__ import annotations

import io
import re
import sys
from itertools import pairwise
from pathlib import Path

import pytest
import segment_helpers
from segment_helpers import Outcome

from kvwatch import segmented
from kvwatch.engines import make_parser
from kvwatch.engines.ollama.events import OllamaRequest
from kvwatch.engines.ollama.parser import OllamaParser
from kvwatch.model import Event, ServerRestart
from kvwatch.parsers.base import ParserSettings
from kvwatch.sources import forked

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from gen_ollama import generate  # the bench's generator

_JOURNAL = re.compile(r"^[A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d gpu-ws ollama\[2231\]: ", re.M)
_START = re.compile(
    r"^(?P<prefix>[^\n]*?)time=(?P<time>\S+) [^\n]*msg=\"starting llama-server\"[^\n]*\n", re.M
)
_PORT = re.compile(r"--port (\d+)")
_STAMP = "%b %d %H:%M:%S"


def generated(mb: float = 0.8, seed: int = 7) -> str:
    """The bench's log: journald framing, runners started one after another, two models in turn."""
    out = io.StringIO()
    generate(out, mb, seed=seed)
    return out.getvalue()


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def one_go(path: Path) -> Outcome:
    return segment_helpers.one_go("ollama", path, ParserSettings(now_year=2026))


def in_segments(path: Path, workers: int = 2) -> Outcome:
    return segment_helpers.in_segments("ollama", path, ParserSettings(now_year=2026), workers)


def requests(events: list[Event]) -> list[OllamaRequest]:
    return [event for event in events if isinstance(event, OllamaRequest)]


@pytest.fixture
def roomy(small: list[int], monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """`small`'s segments at 96 KiB with a 64 KiB stretch: the bench's runners live ~50 KiB each, so
    the stretch rebuilds the one serving and the one idle before it (the fallbacks, as `small`'s)."""
    monkeypatch.setattr(segmented, "MIN_SEGMENT", 96 << 10)
    monkeypatch.setattr(segmented, "MAX_SEGMENT", 96 << 10)
    monkeypatch.setattr(segmented, "WARM_UP", 64 << 10)
    return small


@pytest.fixture
def reconciled(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, bool]]:
    """Per reconcile of a guess that was not the truth: whether the conversation counts differed, and
    whether it held."""
    seen: list[tuple[bool, bool]] = []
    real = OllamaParser.reconcile

    def spy(self: OllamaParser, guess: object, truth: object, asked: object, end: object) -> object:
        got = real(self, guess, truth, asked, end)  # type: ignore[arg-type]
        seen.append((guess[1][0] != truth[1][0], got is not None))  # type: ignore[index]
        return got

    monkeypatch.setattr(OllamaParser, "reconcile", spy)
    return seen


def test_segments_agree_with_one_go_and_every_guess_holds(
    roomy: list[int], rounds: list[int], reconciled: list[tuple[bool, bool]], tmp_path: Path
) -> None:
    """The bench's line mix: every segment's guess holds, though it lacks the counts of the runners
    gone before its stretch (which no later line reads)."""
    path = write(tmp_path, "ollama.log", generated())
    expected = one_go(path)
    assert len(segmented.boundaries(str(path), 0, 2)) > 6 and len(requests(expected[0])) > 300
    assert expected == in_segments(path)
    assert [] == roomy and 1 == len(rounds)
    assert reconciled and all(held for _, held in reconciled) and any(counts for counts, _ in reconciled)


def test_plain_framing_agrees(roomy: list[int], rounds: list[int], tmp_path: Path) -> None:
    """Without journald's prefix (Ollama in a terminal or docker): runner lines take the time of the
    last slog record. One guess misses a runner idle since before its stretch (a second round of
    workers); the results are those of one go."""
    path = write(tmp_path, "plain.log", _JOURNAL.sub("", generated()))
    expected = one_go(path)
    assert len(requests(expected[0])) > 300
    assert expected == in_segments(path)
    assert [] == roomy and 2 == len(rounds)


def two_runners(turns: int, *, journald: bool) -> str:
    """Two llama-servers (two models, one slot each) serving at once: their requests' lines
    interleaved line by line, the picks (`task -1`) of both."""
    lines: list[str] = []
    second = 0

    def stamp(text: str) -> str:
        minute, sec = divmod(second, 60)
        hour, minute = divmod(minute, 60)
        prefix = f"Jun 10 {9 + hour:02d}:{minute:02d}:{sec:02d} gpu-ws ollama[2231]: " if journald else ""
        return prefix + text

    def slog(msg: str, attrs: str = "") -> str:
        minute, sec = divmod(second, 60)
        hour, minute = divmod(minute, 60)
        return stamp(
            f'time=2026-06-10T{9 + hour:02d}:{minute:02d}:{sec:02d}.000Z level=INFO source=x.go:1 msg="{msg}"{attrs}'
        )

    lines.append(slog("Listening on 127.0.0.1:11434 (version 0.30.2)"))
    for port, blob in ((39001, "sha256-aaaa"), (39002, "sha256-bbbb")):
        cmd = f"/usr/lib/ollama/llama-server --model /m/blobs/{blob} --port {port} -np 1 --log-verbosity 4"
        lines.append(slog("starting llama-server", f' cmd="{cmd}"'))
        lines.append(
            stamp("srv    load_model: initializing, n_slots = 1, n_ctx_slot = 32768, kv_unified = 'false'")
        )
        lines.append(stamp("slot   load_model: id  0 | task -1 | new slot, n_ctx = 32768"))
    held = [0, 0]
    for turn in range(turns):
        second += 7
        blocks = []
        for runner in (0, 1):
            task = turn * 2 + runner  # (llama-server numbers its tasks across the server: gaps)
            prompt = held[runner] + 400 + 37 * (turn % 11)
            cached = held[runner]
            tag = f"id  0 | task {task} |"
            pick = (
                "selected slot by LRU, t_last = -1"
                if turn == 0 or turn % 9 == 4
                else (
                    f"selected slot by LCP similarity, sim_best = {cached / prompt:.3f} (> 0.100 thold), f_keep = 1.000"
                )
            )
            if pick.startswith("selected slot by LRU"):
                cached = 0
            new = prompt - cached
            blocks.append([
                f"slot get_availabl: id  0 | task -1 | {pick}",
                f"slot launch_slot_: {tag} processing task, is_child = 0",
                f"slot   operator(): {tag} new prompt, n_ctx_slot = 32768, n_keep = 0, task.n_tokens = {prompt}",
                f"slot   operator(): {tag} cached n_tokens = {cached}, memory_seq_rm [{cached}, end)",
                f"slot print_timing: {tag} prompt eval time = {new * 0.4:10.2f} ms / {new:5d} tokens (    0.40 ms per token,  2500.00 tokens per second)",
                f"slot print_timing: {tag}        eval time =    2630.00 ms /   100 tokens (   26.30 ms per token,    38.02 tokens per second)",
                f"slot print_timing: {tag}       total time = {new * 0.4 + 2630:10.2f} ms / {prompt + 100:5d} tokens",
                f"slot      release: {tag} stop processing: n_tokens = {prompt + 99}, truncated = 0",
                "srv  update_slots: all slots are idle",
            ])  # fmt: skip
            held[runner] = 0 if prompt > 20000 else prompt + 100
        # The first runner's pick, then both requests' lines in turn (each pick before its own task).
        first, other = blocks
        lines += [stamp(first[0]), stamp(first[1])]
        lines.append(stamp(other[0]))
        for a, b in zip(first[2:], other[1:], strict=False):
            lines += [stamp(a), stamp(b)]
        lines += [stamp(text) for text in other[len(first) - 1 :]]
        for _ in (0, 1):
            lines.append(
                stamp('[GIN] 2026/06/10 - 09:00:00 | 200 |     2.9s |       127.0.0.1 | POST     "/api/chat"')
            )
    return "".join(line + "\n" for line in lines)


@pytest.mark.parametrize("journald", [True, False])
def test_two_runners_interleaved_agree(
    small: list[int], rounds: list[int], tmp_path: Path, journald: bool
) -> None:
    """Two runners serving at once all along, their lines interleaved: slot lines are routed among
    them by their tasks (which reads both runners' last finished tasks); their conversations go on
    from before any stretch (a guess numbers them from 0, `amend` puts them right). Every guess
    holds, and the results are those of one go."""
    path = write(tmp_path, "two.log", two_runners(900, journald=journald))
    expected = one_go(path)
    assert {record.runner for record in requests(expected[0])} == {"39001", "39002"}
    assert {record.conversation for record in requests(expected[0])} >= {"runner 39002 slot 0 #50"}
    assert len(segmented.boundaries(str(path), 0, 2)) > 6
    assert expected == in_segments(path)
    assert [] == small and 1 == len(rounds)


def _restarted(text: str, every: int) -> str:
    """`text` with Ollama restarted (`Listening on`) before every `every`-th runner start."""
    starts = list(_START.finditer(text))
    out, at = [], 0
    for number, start in enumerate(starts):
        if number and number % every == 0:
            out.append(text[at : start.start()])
            listening = 'level=INFO source=routes.go:2008 msg="Listening on 127.0.0.1:11434 (version 0.30.2)"'
            out.append(f"{start['prefix']}time={start['time']} {listening}\n")
            at = start.start()
    return "".join(out) + text[at:]


def test_server_restarts_and_model_switches_midway_agree(
    roomy: list[int], rounds: list[int], tmp_path: Path
) -> None:
    """Ollama restarted now and then (its runners and counts dropped), runners replaced by the
    other model's: every guess still holds, and the results are those of one go."""
    path = write(tmp_path, "restarts.log", _restarted(generated(), 5))
    expected = one_go(path)
    assert sum(isinstance(event, ServerRestart) for event in expected[0]) > 3
    assert expected == in_segments(path)
    assert [] == roomy and 1 == len(rounds)


def test_ports_reused_keep_their_counts_and_the_guesses(
    roomy: list[int], rounds: list[int], reconciled: list[tuple[bool, bool]], tmp_path: Path
) -> None:
    """Runners on three ports in turn: a new runner on a port goes on with the conversation count of
    the port's earlier runners, which a guess (rebuilt from the stretch before its segment) does not
    know; the guesses hold, and the conversations are numbered as in one go."""
    ports = iter(range(10**6))
    text = _PORT.sub(lambda _: f"--port {39000 + next(ports) % 3}", generated())
    path = write(tmp_path, "ports.log", text)
    expected = one_go(path)
    assert {r.conversation for r in requests(expected[0])} >= {
        "runner 39000 slot 0 #3",
        "runner 39001 slot 0 #3",
    }
    assert expected == in_segments(path)
    assert [] == roomy and 1 == len(rounds)
    assert any(counts and held for counts, held in reconciled)


def test_a_runner_idle_since_before_the_stretch_fails_a_guess_and_still_agrees(
    small: list[int], rounds: list[int], tmp_path: Path
) -> None:
    """A 16 KiB stretch: the runner idle before the one serving started before it, so the guess
    lacks it; the segments from a wrong guess on are parsed from the true state, with one go's
    results."""
    path = write(tmp_path, "ollama.log", generated())
    expected = one_go(path)
    assert expected == in_segments(path)
    assert len(rounds) > 1 or small  # (a new round of workers, or one child, after a wrong guess)


def test_a_runner_started_just_before_a_cut_and_replaced_within_its_segment_agrees(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Segments cut right after runners' start-up lines: the runner serving a segment started with no
    request before it (the guess has no finished task of its slot), finishes tasks and is replaced
    within the segment; its questions are checked without an end state of its own (it is gone)."""
    monkeypatch.setattr(segmented, "WARM_UP", 64 << 10)
    text = generated(1.2)
    path = write(tmp_path, "ollama.log", text)
    data = text.encode()
    starts = [m.end() for m in re.finditer(rb"server is listening on [^\n]*\n[^\n]*\n", data)]
    cuts = [at for at in starts[::2] if at > segmented.HEAD + (4 << 10)]
    assert len(cuts) > 4
    bounds = list(pairwise([0, *cuts, len(data)]))
    monkeypatch.setattr(
        segmented, "boundaries", lambda path, start, workers: [(start, bounds[0][1]), *bounds[1:]]
    )
    expected = one_go(path)
    assert expected == in_segments(path)


def _with_mlx(text: str, every: int) -> str:
    """`text` with an MLX runner started before every `every`-th llama-server, serving a few requests
    (`cache hit` / `cache miss` records) before that one starts."""
    starts = list(_START.finditer(text))
    out, at = [], 0
    for number, start in enumerate(starts):
        if number and number % every == 0:
            out.append(text[at : start.start()])
            head = f"{start['prefix']}time={start['time']} level=INFO"
            out.append(
                f'{head} source=client.go:391 msg="starting mlx runner subprocess" model=qwen3:mlx port=5{number:04d}\n'
            )
            for turn in range(4):
                miss = turn == 0
                total, matched = 4000 + 900 * turn, 0 if miss else 3900 + 800 * (turn - 1)
                out.append(
                    f'{head} source=prefix_cache.go:125 msg="cache {"miss" if miss else "hit"}" total={total}'
                    f" matched={matched} cached={matched} left={total - matched}\n"
                )
            at = start.start()
    return "".join(out) + text[at:]


@pytest.mark.parametrize("journald", [True, False])
def test_mlx_runner_lines_agree(roomy: list[int], tmp_path: Path, journald: bool) -> None:
    """MLX runners between llama-servers (their records labelled with their model): the results are
    those of one go."""
    text = _with_mlx(generated(), 3)
    path = write(tmp_path, "mlx.log", text if journald else _JOURNAL.sub("", text))
    expected = one_go(path)
    assert sum(record.model == "qwen3:mlx" for record in requests(expected[0])) >= 16
    assert expected == in_segments(path)


def test_reconcile_and_amend_put_the_counts_right() -> None:
    """The counts the lines read are off by what the guess missed: the end has them put right where
    the lines read one, the truth's elsewhere, and `amend` renumbers the conversations up to a
    restart; a routed slot line wants every runner's finished tasks equal."""
    parser = make_parser("ollama", "src", ParserSettings(now_year=2026))
    assert isinstance(parser, OllamaParser)
    core: tuple[object, ...] = ((), ())
    guess = (core, ({("1", 0): 1}, {}))
    truth = (core, ({("1", 0): 3, ("2", 0): 4}, {}))
    end = (core, ({("1", 0): 2, ("2", 0): 1}, {}))
    counted = (False, frozenset({("1", 0), ("2", 0)}), False, {})
    assert parser.reconcile(guess, truth, counted, end) == (core, ({("1", 0): 4, ("2", 0): 5}, {}))
    assert parser.reconcile(guess, truth, (False, frozenset(), False, {}), end) == (core, truth[1])
    assert parser.reconcile(guess, truth, (False, frozenset({("2", 0)}), True, {}), end) == end
    record = OllamaRequest("src", 1.0, 10, 5, slot=0, runner="2", conversation="runner 2 slot 0 #1")
    other = OllamaRequest("src", 1.0, 10, 5, slot=0, runner="1", conversation="runner 1 slot 0 #2")
    restart = ServerRestart("src", 2.0, "ollama")
    amended = parser.amend([record, other, restart, record], guess, truth)
    assert [e.conversation for e in amended if isinstance(e, OllamaRequest)] == [
        "runner 2 slot 0 #5",
        "runner 1 slot 0 #4",
        "runner 2 slot 0 #1",
    ]
    runner: tuple[object, ...] = ((), (("9", ("core",)),))
    mine = (runner, ({}, {"9": {None: {0: 3}}}))
    theirs = (runner, ({}, {"9": {None: {0: 5}}}))
    assert parser.reconcile(mine, theirs, (True, frozenset(), False, {}), mine) is None
    # A runner replaced since (a new process on its port): the old one's questions are still checked,
    # and the end has the new one's tasks.
    asked_of_old = {"9": ({None: ([(0, 3)], set())}, False)}
    assert parser.reconcile(mine, theirs, (False, frozenset(), False, asked_of_old), mine) is None
    fresh = (runner, ({}, {"9": {None: {0: 1}}}))
    unasked = {"9": ({None: ([], set())}, False)}
    assert parser.reconcile(mine, theirs, (False, frozenset(), False, unasked), fresh) == fresh
    kept = {"9": ({None: ([(0, 4)], set())}, True)}
    assert parser.reconcile(mine, theirs, (False, frozenset(), False, kept), mine) == theirs
    assert parser.reconcile(mine, (((), ()), ({}, {})), (False, frozenset(), False, {}), mine) is None


def test_a_dense_ollama_log_is_parsed_by_workers_with_inline_results(
    roomy: list[int], children: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replay parses a dense Ollama log (every line read) in segments by workers; its golden lines
    and counts are those of the inline replay."""
    from kvwatch.detectors import DetectorSettings
    from kvwatch.output.exposition import golden_lines
    from kvwatch.replay import plan, replay

    path = str(write(tmp_path, "ollama.log", generated()))

    def outcome() -> tuple[list[str], dict[str, tuple[int, int, int, int]]]:
        result = replay(plan([path], "auto", None), ParserSettings(now_year=2026), DetectorSettings())
        counts = {k: (c.lines, c.recognized, c.errors, c.truncated) for k, c in result.summary.counts.items()}
        return golden_lines(result.registry, result.alerts), counts

    monkeypatch.setattr(forked, "FORK_MIN_BYTES", 1 << 30)
    monkeypatch.setattr(forked, "DENSE_FORK_MIN_BYTES", 64 << 10)
    in_workers = outcome()
    assert ["kvwatch-parser-0", "kvwatch-parser-1"] == children
    assert any("ollama" in line for line in in_workers[0])
    children.clear()
    monkeypatch.setattr(forked, "DENSE_FORK_MIN_BYTES", 1 << 30)
    assert outcome() == in_workers
    assert [] == children
