"""A whole request of an untagged `-lv 4` stream read in one match, when its lines come as b9452 writes them.

Ollama's copy of a runner's output (no llama.cpp stamp, one journald prefix a second) has a short
request's lines all under one prefix: the slot pick, `processing task`, `new prompt`, the first
`memory_seq_rm`, progress lines, the timings and `stop processing`. `REQUEST` matches exactly such a
run (each line of a shape whose reading by `Stream.slot` and `_update` is known: see the comments), and
`read` gives what the line-by-line path gives for it. Any other run, a line of another shape, another
prefix, number or order, does not match and goes the general way.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kvwatch.engines.llamacpp import lines as ln
from kvwatch.engines.llamacpp.events import LlamaRequest
from kvwatch.engines.llamacpp.slots import Pick, Stream
from kvwatch.model import Event

# A number `to_float` reads, in ASCII digits (float() of it is to_float's answer).
_NUMBER = r"[0-9]+(?:\.[0-9]+)?"
# A line of the followed request up to its message: its prefix, `slot <func>:` and its tag
# (`untagged_run`'s test: the tag starts with ` id`, which `\S*` cannot hold, so this is the tag's
# first place in the line).
_HEAD = r"(?P=p)slot +\S*:(?P=t) +"
# No `memory_seq_rm` in the rest of the line: `_update` would read any such line as one (after the
# words before this, which no other branch before it reads).
_CLEAN = r"(?![^\n]*memory_seq_rm)"

REQUEST = re.compile(
    # The pick, as SLOT and SELECT_LCP / SELECT_LRU read it (the prefix is the caller's: see `read`).
    r"(?P<p>[^\n]*?\]: )slot +\S*: id +(?P<s>[0-9]+) \| task -1 \| +selected slot by "
    rf"(?:LCP similarity, sim_best = (?P<sim>{_NUMBER}) \([^\n]*f_keep = (?P<keep>{_NUMBER})"
    r"|LRU, t_last = -?[0-9]+)\n"
    # The task on that slot (same id text): its tag, as `_follow` takes it; a quiet message.
    rf"(?P=p)slot +\S*:(?P<t> id +(?P=s) \| task (?P<task>[0-9]+) \|) +processing task{_CLEAN}[^\n]*\n"
    # NEW_PROMPT (read first, whatever else the line holds; its last `n_tokens =` ends the line), then
    # the first SEQ_RM (armed).
    rf"{_HEAD}new prompt, [^\n]*(?:n_prompt_tokens|task\.n_tokens) = (?P<prompt>[0-9]+)\n"
    rf"{_HEAD}cached n_tokens = [0-9]+, memory_seq_rm \[(?P<reused>[0-9]+), end\)\n"
    # Lines that change nothing: `prompt processing` is read by `_update` and matches none of its
    # branches, and a later SEQ_RM is read (a valid number) when the request is no longer armed.
    rf"(?P<mid>(?:{_HEAD}(?:prompt processing{_CLEAN}[^\n]*"
    r"|cached n_tokens = [0-9]+, memory_seq_rm \[[0-9]+, end\))\n)*)"
    # The rest, its lines holding no `memory_seq_rm` (`read` looks, once for them all): more that
    # change nothing (`init sampler` and `n_gen =` are quiet, their first four letters not in READ),
    # then PROMPT_EVAL, EVAL, `total time` (quiet: no `stop processing` before it) and STOP.
    rf"(?P<late>(?P<quiet>(?:{_HEAD}(?:prompt processing|init sampler|n_gen = )[^\n]*\n)*)"
    rf"{_HEAD}prompt eval time = +(?P<ms>{_NUMBER}) ms / +(?P<new>[0-9]+) tokens[^\n]*\n"
    rf"{_HEAD}eval time = +\S+ ms / +[0-9]+ tokens[^\n]*\n"
    rf"{_HEAD}total time = [^\n]*\n"
    rf"{_HEAD}stop processing: (?:n_past|n_tokens) = [0-9]+(?:,[^\n]*)?(?:\n|\Z))"
)
#: Lines a request may span to be read in one match (a longer one goes the general way).
WINDOW = 64
#: Lines tried first (most requests are shorter): the window is joined for the match, and a request
#: that may be longer is tried again in the whole window.
FIRST = 24
#: Lines of a match besides those its repeated parts (`mid`, `quiet`) hold.
_FIXED_LINES = 8


def read(  # noqa: PLR0917  (untagged_run's arguments, passed on)
    stream: Stream,
    lines: list[str],
    start: int,
    prefix: str,
    now: float,
    source: str,
    mine: Callable[[str], bool],
    *,
    placed: bool,
    mine_task: Callable[[int, int], bool] | None = None,
) -> tuple[list[Event], int] | None:
    """The request whose pick is `lines[start]` (under `prefix`), read whole at time `now`: its events
    and the number of its lines; None when its lines are not `REQUEST`'s or the stream's state would
    make the line-by-line path read them otherwise (nothing is changed then). `mine`: asked of the
    task's first line (or `mine_task` of its slot and task, where given) and, unless the caller `placed`
    it, of the pick: as `untagged_run` asks of a slot line it does not follow.

    What the line-by-line path does with these lines, given the checks, written out: the pick is the
    slot's (`_select`) and the last one; the task's first line starts its request with it, replacing
    one cut off (`_request`, which notes the question a watched stream asks); the messages fill it
    in as `_update` does; `stop processing` finishes it (`finish`: the slot's last finished task, its
    record as `Request.record` makes it of these fields). The clock stays at `now`, `timing` ends None.
    """
    # (a match ends at a line's end, and no line after one can extend it: the same in either text)
    text = "\n".join(lines[start : start + FIRST])
    found = REQUEST.match(text)
    if found is None and start + FIRST < len(lines) and lines[start + FIRST - 1].startswith(prefix):
        text = "\n".join(lines[start : start + WINDOW])
        found = REQUEST.match(text)
    if found is None or found.end("p") != len(prefix):
        return None
    skip = len(prefix)
    if not (placed or mine(lines[start][skip:])):
        return None
    owns = mine_task or (lambda _slot, _task: mine(lines[start + 1][skip:]))
    record = take(stream, found, now, source, owns)
    return None if record is None else ([record], lines_of(found))


def lines_of(found: re.Match[str]) -> int:
    """The lines of a request `REQUEST` (or a pattern that starts as it does) matched."""
    # (each fixed line ends in `\n` but the last, which may end the text)
    text = found.string
    return _FIXED_LINES + text.count("\n", *found.span("mid")) + text.count("\n", *found.span("quiet"))


def take(
    stream: Stream, found: re.Match[str], now: float, source: str, owns: Callable[[int, int], bool]
) -> LlamaRequest | None:
    """`read`'s checks and changes for a request `REQUEST` (or a pattern that starts as it does) matched
    under the caller's prefix: its record, or None (nothing changed). `owns`: whether the task's first
    line, of this slot and task, is the stream's (`mine` of its text)."""
    if found.string.find("memory_seq_rm", *found.span("late")) >= 0:
        return None
    slot_text, task_text, sim, keep, prompt, reused, ms, new = found.group(
        "s", "task", "sim", "keep", "prompt", "reused", "ms", "new"
    )
    slot, task = int(slot_text), int(task_text)
    requests, finished = stream.requests, stream.finished
    request = requests.get(slot)
    if (request is not None and (request.task == task or request.stopped)) or task <= finished.get(slot, -1):
        # (its lines are those of a request in progress, or late ones, or the slot holds a request
        # released without timings whose record this task's first line gives: read one by one)
        return None
    if not owns(slot, task):
        return None
    pick = Pick("lru") if sim is None else Pick("lcp", float(sim), float(keep))
    stream.active, stream.timing, stream.last_pick = True, None, pick
    stream.picks.pop(slot, None)
    requests.pop(slot, None)
    finished[slot] = task
    return LlamaRequest(
        source, now, slot, task, int(prompt), int(reused), int(new), pick.selection, pick.sim, pick.keep,
        False, False, 0, ln.round_us(float(ms) / 1000.0), False,
    )  # fmt: skip  # (rescue, full reprocess, checkpoint restores, prompt eval seconds, derived)
