"""llama.cpp's 2024 server lines (examples/server/server.cpp), joined into request records per slot.

Two forms, read from the sources vendored by llama-cpp-python 0.2.38, 0.2.56 and 0.2.77 and embedded
in Ollama 0.1.32 ... 0.1.48 (llm/ext_server/server.cpp):
- early 2024, `LOG_TEE` (optionally `[<unix seconds>] `): `slot %d : in cache: %i tokens | to process:
  %i tokens` (one whole record: printed only with cache_prompt), `slot %d : kv cache rm - [%d, end)`,
  `print_timings: prompt eval time = ...`, `slot %d released (%d tokens in cache)`;
- mid 2024, `server_log` text: `%4s [%24s] %s | k=v ...` (llama.cpp: level and function padded, keys
  `id_slot`/`id_task`) or Ollama's `LEVEL [function] msg | k=v ...` (unpadded, `slot_id`/`task_id`,
  DEBUG); `tid` and `timestamp` (unix seconds) come first (ordered_json) or sorted among the rest
  (nlohmann::json, llama-cpp-python 0.2.56). A request is `kv cache rm [p0, end)` (p0: tokens reused) or
  `slot progression` (n_past, n_prompt_tokens_processed), then `prompt eval time` (its
  n_prompt_tokens_processed): the record is emitted there, prompt = reused + processed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kvwatch.engines.llamacpp import lines as ln
from kvwatch.engines.llamacpp.events import LlamaRequest

#: Markers of these lines that the modern ones lack (see parser.MARKERS).
MARKERS = (" | tid=", "timestamp=", "kv cache rm")

EARLY_CACHE = re.compile(r"slot (\S+) : in cache: (\S+) tokens \| to process: (\S+) tokens")
EARLY_OTHER = re.compile(
    r"slot \S+ (?:: kv cache rm - \[|released \(|: we have to evaluate|: context shift|is processing \[)"
    r"|slot \S+: context shift - |print_timings: |all slots are idle"
)
# `INFO [            update_slots] kv cache rm [p0, end) | tid="1" timestamp=1717000000 id_slot=0 ...`
LOGGED = re.compile(r"\s*(?:INFO|DEBUG|VERB|WARN|ERR|ERROR) +\[ *(\w+)\] (.*?) \|( \w+=.*)$")
_PAIR = re.compile(r' (\w+)=("(?:[^"\\]|\\.)*"|[^\s"]*)')
_SLOT_KEYS = ("id_slot", "slot_id")
_TASK_KEYS = ("id_task", "task_id")


@dataclass(frozen=True, slots=True)
class Line:
    """One 2024 line: its message, its numbers by key, and its own clock (unix seconds) if printed."""

    message: str
    values: dict[str, str]
    wall: float | None


def read(body: str) -> Line | None:
    """The 2024 `server_log` line in a message body, else None."""
    match = LOGGED.match(body)
    if match is None:
        return None
    values = dict(_PAIR.findall(match[3]))
    stamp = values.get("timestamp")
    wall = float(stamp) if stamp is not None and stamp.isdecimal() else None
    return Line(match[2].strip(), values, wall)


@dataclass(slots=True)
class _Pending:
    task: int
    reused: int | None = None


@dataclass(slots=True)
class Legacy:
    """The 2024 requests in progress of one server process, per slot."""

    pending: dict[int, _Pending] = field(default_factory=dict)

    def dump(self) -> list[list[int | None]]:
        """The requests in progress as JSON (a saved position: see `restored`)."""
        return [[slot, p.task, p.reused] for slot, p in sorted(self.pending.items())]

    @classmethod
    def restored(cls, rows: list[list[int | None]]) -> Legacy:
        """The Legacy a `dump` saved; TypeError or ValueError when it is not one."""
        return cls({int(slot): _Pending(int(task), None if reused is None else int(reused))  # type: ignore[arg-type]
                    for slot, task, reused in rows})  # fmt: skip

    def early(self, body: str, now: float, source: str) -> list[LlamaRequest] | None:
        """An early-2024 `LOG_TEE` slot line: the record of `in cache`, [] for another, else None."""
        match = EARLY_CACHE.match(body)
        if match is None:
            return [] if EARLY_OTHER.match(body) else None
        slot, cached, todo = (ln.to_int(g) for g in match.groups())
        return [LlamaRequest(source, now, slot, -1, cached + todo, cached, todo, "unknown")]

    def logged(self, line: Line, now: float, source: str) -> list[LlamaRequest]:
        """A mid-2024 `server_log` line: the record when its `prompt eval time` closes a request."""
        values, msg = line.values, line.message
        slot_text = next((values[k] for k in _SLOT_KEYS if k in values), None)
        task_text = next((values[k] for k in _TASK_KEYS if k in values), None)
        if slot_text is None or task_text is None:
            return []
        slot, task = ln.to_int(slot_text), ln.to_int(task_text)
        request = self.pending.get(slot)
        if request is None or request.task != task:
            request = self.pending[slot] = _Pending(task)
        if msg == "kv cache rm [p0, end)":
            request.reused = ln.to_int(values.get("p0", ""))
        elif msg == "slot progression":
            request.reused = ln.to_int(values.get("n_past", ""))
        elif msg.startswith("prompt eval time") and request.reused is not None:
            new = ln.to_int(values.get("n_prompt_tokens_processed", ""))
            millis = values.get("t_prompt_processing")
            del self.pending[slot]
            seconds = round(float(millis) / 1000.0, 6) if millis and _NUMBER.fullmatch(millis) else None
            prompt, reused = request.reused + new, request.reused
            return [
                LlamaRequest(
                    source, now, slot, task, prompt, reused, new, "unknown", prompt_eval_seconds=seconds
                )
            ]
        return []


_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")
