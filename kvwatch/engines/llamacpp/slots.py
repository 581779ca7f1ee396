"""The state of one llama-server process: its clock, its slots, each slot's request in progress."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from kvwatch.engines.llamacpp import lines as ln
from kvwatch.engines.llamacpp.events import LlamaCutOff, LlamaRequest
from kvwatch.model import Event
from kvwatch.parsers.base import ParseError, ParseResult
from kvwatch.parsers.drift import Drift

Selection = Literal["lcp", "lru", "id", "unknown"]


#: How every message `_update` reads begins, but memory_seq_rm's (its own word is mid-line).
READ = frozenset(("new ", "kv c", "rest", "forc", "prom", "eval", "stop", "tota", "fail"))


@dataclass(slots=True)
class Pick:
    """How a slot was chosen (a `task -1` line), waiting for the slot's next task."""

    selection: Selection = "unknown"
    sim: float | None = None
    keep: float | None = None
    rescue: bool = False
    broken: bool = False


@dataclass(slots=True)
class Request:
    """One request in progress on a slot: what its lines said so far."""

    task: int
    pick: Pick = field(default_factory=Pick)
    prompt: int | None = None
    reused: int | None = None
    armed: bool = False  # the next memory_seq_rm gives the reused prefix (after new prompt / restore)
    restore_past: int | None = None
    full: bool = False
    truncate_failed: bool = False  # the full re-process came from `failed to truncate tokens ...`
    restores: int = 0
    new: int | None = None
    eval_seconds: float | None = None
    n_gen: int | None = None
    stop_n: int | None = None
    stopped: bool = False  # `stop processing` came before the timings (V-2025-08 order)
    broken: bool = False

    def record(self, source: str, time: float, slot: int) -> LlamaRequest | None:
        """The finished record. Without timings (a cancelled or failed request, an embedding, a build
        or verbosity that prints none) it is what the lines before said: the prompt of `new prompt`
        and the reuse of its `memory_seq_rm`; None when they did not say both."""
        if self.new is None:
            if self.prompt is None or self.reused is None:
                return None
            self.new = max(0, self.prompt - self.reused)
        prompt, reused, derived = self.prompt, self.reused, False
        if reused is None and self.restore_past is not None:
            reused = self.restore_past
        if prompt is None and None not in (self.stop_n, self.n_gen, self.new):
            # default verbosity: n_tokens at stop = prompt + generated - 1 (exact for length stops)
            prompt, derived = (self.stop_n or 0) - (self.n_gen or 0) + 1, True
        if reused is None and prompt is not None and self.new is not None:
            reused, derived = max(0, min(prompt, prompt - self.new)), True
        return LlamaRequest(
            source, time, slot, self.task, prompt, reused, self.new, self.pick.selection,
            sim_best=self.pick.sim, f_keep=self.pick.keep, prompt_cache_rescue=self.pick.rescue,
            full_reprocess=self.full, truncate_failed=self.truncate_failed, checkpoint_restores=self.restores,
            prompt_eval_seconds=self.eval_seconds, derived=derived,
        )  # fmt: skip


@dataclass(slots=True)
class Stream:
    """One server process's output (the server, or one router child): clock and slot state."""

    anchor: float | None = None  # event time of relative time 0
    last_rel: float = 0.0
    stamped: bool = False  # this run prints relative times
    active: bool = False  # slot lines seen in this run
    announced: bool = False  # a ServerRestart was emitted for this run
    picks: dict[int, Pick] = field(default_factory=dict)
    requests: dict[int, Request] = field(default_factory=dict)
    finished: dict[int, int] = field(default_factory=dict)  # slot -> its last finished task
    last_pick: Pick | None = None
    timing: tuple[int, int] | None = None  # (slot, task) of a bare legacy timing header
    # to_int() of slot and task ids already read: int() is a tenth of a slot line's cost, and a task's
    # id comes back on each of its dozen lines (a cache: it is emptied now and then).
    ids: dict[str, int] = field(default_factory=dict)
    #: the source's drifted shapes (set by the parser; a message it cannot read is told there)
    drift: Drift | None = field(default=None, compare=False)

    def reset(self) -> None:
        """A new process: nothing of the old one applies (but the source's drift, which is the source's)."""
        fresh = Stream(drift=self.drift)
        for name in Stream.__slots__:
            setattr(self, name, getattr(fresh, name))

    def dump(self) -> dict[str, Any]:
        """Its state as JSON (a saved position: see `restored`)."""
        return {
            "anchor": self.anchor,
            "last_rel": self.last_rel,
            "stamped": self.stamped,
            "active": self.active,
            "announced": self.announced,
            "picks": [[slot, asdict(pick)] for slot, pick in self.picks.items()],
            "requests": [[slot, asdict(request)] for slot, request in self.requests.items()],
            "finished": [[slot, task] for slot, task in self.finished.items()],
            "last_pick": self._where_last_pick(),
            "timing": None if self.timing is None else list(self.timing),
        }

    def _where_last_pick(self) -> list[Any] | None:
        """The last pick as `dump` saves it: the slot whose pick or request holds it, else its fields."""
        last = self.last_pick
        if last is None:
            return None
        for slot, pick in self.picks.items():
            if pick is last:
                return ["pick", slot]
        for slot, request in self.requests.items():
            if request.pick is last:
                return ["request", slot]
        return ["alone", asdict(last)]

    @classmethod
    def restored(cls, data: dict[str, Any]) -> Stream:
        """`dump()` read back; KeyError, TypeError or ValueError when malformed."""
        anchor, timing, last = data["anchor"], data["timing"], data["last_pick"]
        picks = {int(slot): Pick(**pick) for slot, pick in data["picks"]}
        requests = {
            int(slot): Request(**{**fields, "pick": Pick(**fields["pick"])})
            for slot, fields in data["requests"]
        }
        # (the last pick is the very object of the pick it is: `_srv` changes it in place)
        kind, where = last if last is not None else ("none", {})
        if kind == "pick":
            last_pick: Pick | None = picks[int(where)]
        elif kind == "request":
            last_pick = requests[int(where)].pick
        else:
            last_pick = Pick(**where) if kind == "alone" else None
        return cls(
            anchor=None if anchor is None else float(anchor),
            last_rel=float(data["last_rel"]),
            stamped=bool(data["stamped"]),
            active=bool(data["active"]),
            announced=bool(data["announced"]),
            picks=picks,
            requests=requests,
            finished={int(slot): int(task) for slot, task in data["finished"]},
            last_pick=last_pick,
            timing=None if timing is None else (int(timing[0]), int(timing[1])),
        )

    def drop_in_flight(self, now: float | None = None, source: str = "") -> list[Event]:
        """End of input: the records of requests released without timings (at `now`); forget the
        others, which never finished."""
        ended = self.end_stopped(now, source) if now is not None else []
        if now is not None:  # what the unfinished ones had shown: a forced re-processing, an LRU pick
            for request in self.requests.values():
                if not request.stopped and (request.full or request.pick.selection == "lru"):
                    ended.append(LlamaCutOff(source, now, request.full, request.pick.selection == "lru"))
            for slot, pick in self.picks.items():
                if pick.selection == "lru" and slot not in self.requests:
                    ended.append(LlamaCutOff(source, now, False, True))
        self.requests.clear()
        self.picks.clear()
        self.timing = None
        return ended

    def read(self, body: str, now: float, source: str) -> ParseResult:
        """Apply one message; the finished record, [] for a known line, None for a foreign one."""
        timing, self.timing = self.timing, None
        match = ln.SLOT.match(body)
        if match:
            return self.slot(match[1], match[2], match[3].strip(), now, source)
        if ln.SLOT_START.match(body):
            self._poison(None)
            return ParseError("llamacpp: torn slot line")
        if ln.CONTINUATION.match(body):
            return self._continuation(timing, body.strip(), now, source)
        srv = ln.SRV.match(body)
        if srv:
            self._srv(srv[1])
            return []
        return None

    def end_stopped(self, now: float, source: str) -> list[Event]:
        """The records of requests whose `stop processing` came and no timings after it (V-2025-08
        prints them after the release; a build that prints none never does), at `now`: the line that
        shows none will come (the slot's next task, the end of input)."""
        events: list[Event] = []
        for slot, request in list(self.requests.items()):
            if request.stopped:
                events += self.finish((slot, request), now, source)
        return events

    def slot(self, slot_text: str, task_text: str, msg: str, now: float, source: str) -> ParseResult:
        """A tagged slot line (its id, task and message)."""
        ids = self.ids
        slot, task = ids.get(slot_text), ids.get(task_text)
        if slot is None or task is None:
            try:
                slot, task = ln.to_int(slot_text), ln.to_int(task_text)
            except ln.GarbledError as exc:
                self._poison(task_text)
                return ParseError(f"llamacpp: {exc}")
            if len(ids) > 4096:
                ids.clear()
            ids[slot_text], ids[task_text] = slot, task
        if msg.startswith("selected slot by "):
            self.active = True
            return self._select(slot, msg)
        if task < 0:
            return []  # startup `new slot` lines, idle-slot saves, sampler dumps: not requests
        self.active = True
        request = self.requests.get(slot)
        ended: list[Event] = []
        if request is None or request.task != task:  # (most lines belong to the slot's request)
            if request is not None and request.stopped:
                ended = self.finish((slot, request), now, source)  # released, and no timings came
            request = self._request(slot, task)
            if request is None:
                return ended
            if ended:
                result = self.slot(slot_text, task_text, msg, now, source)
                return ended + result if isinstance(result, list) else result
        if not msg:
            self.timing = (slot, task)
            return []
        if msg[:4] not in READ and "memory_seq_rm" not in msg:
            # sampler, progress and graph lines, most of a -lv 4 log: no _update branch reads them
            # (but one naming a figure kvwatch reads is a reworded message: told as format drift)
            drift = self.drift
            if drift is None or drift.shapes is None or not drift.shapes.marked(msg):
                return []
            return drift.line(now, msg) or []
        return self.apply((slot, request), msg, now, source)

    def apply(self, where: tuple[int, Request], msg: str, now: float, source: str) -> ParseResult:
        """Update a slot's request in progress from one of its messages; emit it when it ends."""
        ended = self.update(where, msg)
        if isinstance(ended, ParseError):
            return ended
        drift = self.drift
        if ended is None:  # begins as a message it reads, but is none of them: reworded, maybe
            return (drift.line(now, msg) or []) if drift is not None else []
        events = self.finish(where, now, source) if ended else []
        limit = ln.KEYS_PRINTED.get(msg[:4])
        keyed = ln.unknown_keys(msg) if limit is not None and msg.count(" = ") > limit else None
        if keyed is not None and keyed[1] and drift is not None:  # read by key: one of no build's counted
            events = events + drift.keys(now, keyed[0], keyed[1], frozenset())
        return events

    def update(self, where: tuple[int, Request], msg: str) -> bool | ParseError | None:
        """Fold a message into the slot's request in progress: True when it ends the request (None:
        not a message it reads)."""
        try:
            return _update(where[1], msg)
        except ln.GarbledError as exc:
            where[1].broken = True
            return ParseError(f"llamacpp: {exc}")

    def finish(self, where: tuple[int, Request], now: float, source: str) -> list[Event]:
        """The slot's request ended at `now`: its record, unless it is broken or never ran."""
        slot, request = where
        del self.requests[slot]
        self.finished[slot] = request.task
        record = None if request.broken else request.record(source, now, slot)
        return [record] if record is not None else []

    def _continuation(self, timing: tuple[int, int] | None, msg: str, now: float, source: str) -> ParseResult:
        """A legacy timing line without prefix: it belongs to the bare header just before."""
        request = self.requests.get(timing[0]) if timing is not None else None
        if timing is None or request is None or request.task != timing[1]:
            return ParseError("llamacpp: timing line without its header")
        if not msg.startswith("total time"):
            self.timing = timing
        return self.apply((timing[0], request), msg, now, source)

    def _request(self, slot: int, task: int) -> Request | None:
        """The slot's request for this task, starting one (with the waiting pick) on a new task."""
        request = self.requests.get(slot)
        if request is not None and request.task == task:
            return request
        if self.finished.get(slot) == task:
            return None  # a late line of a request already emitted
        # a new task on a busy slot: the old request was cut off; it is replaced, never emitted
        request = Request(task, self.picks.pop(slot) if slot in self.picks else Pick())
        request.broken = request.pick.broken
        self.requests[slot] = request
        return request

    def _select(self, slot: int, msg: str) -> ParseResult:
        """`selected slot by ...`: how the slot's next task was placed."""
        self.picks[slot] = self.last_pick = pick = Pick(broken=True)
        try:
            if match := ln.SELECT_LCP.match(msg):
                pick.selection, pick.sim, pick.keep = (
                    "lcp",
                    ln.to_float(match[1]),
                    ln.to_float(match[2]),
                )
            elif match := ln.SELECT_LCS.match(msg):
                pick.selection, pick.sim = "lcp", ln.to_float(match[1])
            elif match := ln.SELECT_LRU.match(msg):
                pick.selection = "lru"
                ln.to_int(match[1])
            elif match := ln.SELECT_ID.match(msg):
                pick.selection = "id"
                ln.to_int(match[1])
            else:
                raise ln.GarbledError("unknown slot selection")
        except ln.GarbledError as exc:
            return ParseError(f"llamacpp: {exc}")
        pick.broken = False
        return []

    def _srv(self, msg: str) -> None:
        """Server lines: only the host prompt cache's rescue of the last selection matters."""
        match = ln.FOUND.match(msg)
        if match and self.last_pick is not None:
            pick = self.last_pick
            try:
                pick.keep, pick.sim = ln.to_float(match[1]), ln.to_float(match[2])
            except ln.GarbledError:
                pick.broken = True
                raise
            pick.rescue = True

    def _poison(self, task_text: str | None) -> None:
        """A slot line that cannot be attributed: no record it may belong to can come out wrong."""
        try:
            task = ln.to_int(task_text) if task_text is not None else None
        except ln.GarbledError:
            task = None
        for request in self.requests.values():
            if task is None or request.task == task:
                request.broken = True
        if task is None:
            for pick in self.picks.values():
                pick.broken = True


def _update(request: Request, msg: str) -> bool | None:
    """Fold one message into the request; True when it ends the request (None: none it reads)."""
    # (The messages each request has come first; only memory_seq_rm's test must stay second: its
    # word may follow any prefix.)
    if msg.startswith("new prompt"):
        request.prompt, request.armed = _int(ln.NEW_PROMPT.match(msg), msg), True
    elif "memory_seq_rm" in msg or msg.startswith("kv cache rm"):
        n_past = _int(ln.SEQ_RM.search(msg), msg)
        if request.armed:  # later ones are batch progress
            request.reused, request.armed = n_past, False
    elif msg.startswith("prompt eval time"):
        match = ln.PROMPT_EVAL.match(msg)
        request.new = _int(match, msg, 2)
        request.eval_seconds = ln.round_us(ln.to_float(match[1]) / 1000.0) if match else None
    elif msg.startswith("eval time"):
        request.n_gen = _int(ln.EVAL.match(msg), msg, 2)
    elif msg.startswith("stop processing"):
        request.stop_n = _int(ln.STOP.match(msg), msg)
        if request.new is None:  # V-2025-08 releases the slot first, then prints the timings
            request.stopped = True  # (or none come: see Stream.end_stopped)
            return False
        return True
    elif msg.startswith("failed to truncate tokens"):
        # `failed to truncate tokens with position >= %d - clearing the memory` (tools/server/
        # server-context.cpp of llama-cpp-python 0.3.17-0.3.23's llama.cpp and b9093-b9113, right after
        # the memory_seq_rm line; `clearing prompt with N tokens` follows): nothing of the slot's memory
        # is reused, the prompt is processed whole
        request.reused, request.armed, request.full, request.truncate_failed = 0, False, True, True
    elif msg.startswith("total time"):
        return request.stopped
    elif msg.startswith("restored context checkpoint"):
        match = ln.RESTORED.match(msg)
        request.restores += 1
        request.armed = request.prompt is not None
        if match and match[1] is not None:
            request.restore_past = ln.to_int(match[1])
    elif msg.startswith("forcing full prompt re-processing"):
        request.full = True
    else:
        return None
    return False


def _int(match: re.Match[str] | None, msg: str, group: int = 1) -> int:
    """The integer in a matched line; a known line of the wrong shape is torn."""
    if match is None:
        raise ln.GarbledError(f"torn line: {msg[:60]!r}")
    text = match[group]
    return int(text) if text.isdecimal() else ln.to_int(text)  # (to_int's common case, without its call)
