"""llama-server's line shapes (log prefix, `slot`/`srv` tags, timings) and the request records."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

# Every message is a printf format string of its era's llama-server source, read from the PyPI sdists that
# vendor llama.cpp (samples/README.llamacpp-synthetic.md lists the eras); the line prefix is each era's
# `common/log.cpp`, the `slot`/`srv` tags `server-common.h` (`utils.hpp` in V-2025-08).

SWA_URL = "https://github.com/ggml-org/llama.cpp/pull/13194#issuecomment-2868343055"


def func12(name: str) -> str:
    """`__func__` as `%12.*s`: truncated to 12 characters, right-aligned in 12."""
    return f"{name[:12]:>12}"


def slot_line(func: str, slot: int, task: int, msg: str) -> str:
    """`slot %12.*s: id %2d | task %d | <msg>`."""
    return f"slot {func12(func)}: id {slot:2d} | task {task} | {msg}"


def srv_line(func: str, msg: str) -> str:
    """`srv  %12.*s: <msg>`."""
    return f"srv  {func12(func)}: {msg}"


def rel_stamp(us: int) -> str:
    """`%d.%02d.%03d.%03d`: minutes (unbounded), seconds, millis, micros since process start."""
    minutes, rest = divmod(us, 60_000_000)
    seconds, rest = divmod(rest, 1_000_000)
    millis, micros = divmod(rest, 1000)
    return f"{minutes}.{seconds:02d}.{millis:03d}.{micros:03d}"


def timing_lines(t_prompt: float, n_prompt: int, t_gen: float, n_gen: int) -> list[str]:
    """print_timings' three messages (prompt eval / eval / total), without the leading prefix."""
    return [
        f"prompt eval time = {t_prompt:10.2f} ms / {n_prompt:5d} tokens "
        f"({t_prompt / n_prompt:8.2f} ms per token, {1e3 / t_prompt * n_prompt:8.2f} tokens per second)",
        f"       eval time = {t_gen:10.2f} ms / {n_gen:5d} tokens "
        f"({t_gen / n_gen:8.2f} ms per token, {1e3 / t_gen * n_gen:8.2f} tokens per second)",
        f"      total time = {t_prompt + t_gen:10.2f} ms / {n_prompt + n_gen:5d} tokens",
    ]


@dataclass
class Log:
    """A log being written: the server's relative clock, the prefix settings, the lines so far."""

    prefix: bool  # --log-prefix/--log-timestamps: `M.SS.mmm.uuu L ` on the first line of each call
    journald: tuple[datetime, str] | None = None  # (wall clock of relative 0, `host unit[pid]: `)
    us: int = 0  # relative time (µs since process start) of the next line
    lines: list[str] = field(default_factory=list)

    def tick(self, micros: int) -> None:
        """Let time pass."""
        self.us += micros

    def emit(self, level: str, text: str, step: int = 9) -> None:
        """One log call: `text` may hold several physical lines; only the first gets the prefix."""
        self.tick(step)
        head, *rest = text.split("\n")
        if self.prefix:
            head = f"{rel_stamp(self.us)} {level} {head}"
        for physical in [head, *rest]:
            self.lines.append(self._transport() + physical)

    def raw(self, text: str) -> None:
        """An un-prefixed line (LOG() / core output)."""
        self.tick(7)
        self.lines.append(self._transport() + text)

    def _transport(self) -> str:
        """journalctl's short format: `May 23 00:31:18 host unit[pid]: `."""
        if self.journald is None:
            return ""
        start, ident = self.journald
        wall = start + timedelta(microseconds=self.us)
        return f"{wall.strftime('%b %d %H:%M:%S')} {ident}"

    def text(self) -> str:
        """The file's contents."""
        return "\n".join(self.lines) + "\n"


@dataclass
class Record:
    """What kvwatch should make of one request (for the README and the check)."""

    sample: str
    slot: int
    task: int
    prompt: int
    reused: int
    selection: str
    sim: float | None = None
    keep: float | None = None
    note: str = ""

    def row(self) -> str:
        """One table row."""
        sim = "" if self.sim is None else f"{self.sim:.3f}"
        keep = "" if self.keep is None else f"{self.keep:.3f}"
        return (
            f"| {self.slot} | {self.task} | {self.prompt} | {self.reused} | {self.prompt - self.reused} "
            f"| {self.selection} | {sim} | {keep} | {self.note} |"
        )


def pointer(rng: random.Random) -> str:
    """A heap address as `%p` prints it."""
    return f"0x55{rng.randrange(16**9) * 16:010x}"


def table(name: str, text: str, records: list[Record]) -> str:
    """What the maker prints: the sample's size and one row per request, as the README's tables have them."""
    prompt = sum(r.prompt for r in records)
    reused = sum(r.reused for r in records)
    return "\n".join(
        [
            f"{name}: {text.count(chr(10))} lines, {len(records)} requests",
            "| slot | task | prompt | reused | new | selection | sim_best | f_keep | note |",
            *(record.row() for record in records),
            f"reuse {reused}/{prompt} = {reused / prompt:.3f}",
        ]
    )
