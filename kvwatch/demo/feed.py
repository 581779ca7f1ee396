"""`kvwatch demo`'s feed: the bundled samples rewritten onto the demo's clock and written at its pace.

Event time drives the detectors, so the demo rewrites every line's own time as it writes the line: a
line logged at sample time `t` (first line `t0`) is written `(t - t0) * pace / speed` seconds after
the demo started and carries that moment as its time. Event time then runs with the wall clock, at
`speed` times the logs' pace: the daemon's ticks and its 15-minute first-start suppression behave as
on a live host, and an alert that took 4 minutes of log fires after 4 min / speed. Time thresholds
(the 120 s hysteresis, hit_rate_gap's 60 min, no_signal's 300 s) count demo seconds, so they span
`speed` times more of the samples; none of the samples' alerts depends on them.

Each engine's `clock` (kvwatch.parsers.clock.LineClock, declared by its package) says where its
lines carry their time: vLLM's `MM-DD HH:MM:SS` headers (UTC; the source says `tz = "UTC"` and this
year), llama.cpp's relative `M.SS.mmm.uuu` clock (the daemon anchors it on when it read the first
line, the demo's start), new-api's `created_at`. Lines without a time of their own keep the time of
the line before them. The llama.cpp captures come from a tiny CPU model that answers in milliseconds; `pace`
plays them as if each second took LLAMACPP_PACE seconds (a turn every few seconds at the default
speed).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from kvwatch.engines import ENGINES, layers_of

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

#: Real seconds per sample second of the llama.cpp captures (see the module docstring).
LLAMACPP_PACE = 400.0


@dataclass(frozen=True)
class Expected:
    """An alert a sample fires, and when: `at` seconds of sample time after the sample's first line."""

    alert: str
    at: float
    what: str


@dataclass(frozen=True)
class Sample:
    """One bundled sample the demo plays: its file (also the source name), engine, pace and alerts."""

    name: str
    engine: str
    pace: float = 1.0
    expected: tuple[Expected, ...] = ()

    def delay(self, at: float, speed: float) -> float:
        """Demo seconds after the start at which sample time `at` (from the first line) is reached."""
        return at * self.pace / speed


#: The samples `kvwatch demo` plays; `at` is when replay first sees each alert (golden / first tick).
SAMPLES = (
    Sample(
        "vllm-write-only-offload",
        "vllm",
        expected=(Expected("write_only_offload", 440.0, "the KV offload tier stores and never loads"),),
    ),
    Sample("vllm-offload-readback", "vllm"),
    Sample(
        "lmcache-0.3.12-write-only",
        "vllm",
        expected=(
            Expected("write_only_offload", 140.0, "LMCache stores every turn, no lookup finds a token"),
        ),
    ),
    Sample(
        "llamacpp-varying-header-chat",
        "llamacpp",
        pace=LLAMACPP_PACE,
        expected=(
            Expected("pinned_cache_length", 1.0, "a changing header pins reuse at 51 tokens"),
            Expected("prefix_reuse_broken", 0.45, "prompts reuse almost nothing"),
        ),
    ),
    Sample("llamacpp-healthy-two-slots", "llamacpp", pace=LLAMACPP_PACE),
    Sample(
        "sglang-v0-5-23-hicache-unused",
        "sglang",
        expected=(
            Expected("hicache_storage_unused", 40.0, "HiCache storage written, every prefetch dropped"),
        ),
    ),
    Sample(
        "usage-newapi",
        "usage",
        expected=(
            Expected("pinned_cache_length", 230.0, "the gateway's /v1/messages pinned at 17920 tokens"),
            Expected("hit_rate_gap", 1140.0, "/v1/messages hits 15% vs 86% on chat completions"),
        ),
    ),
    Sample(
        "ollama-mlx-stuck",
        "ollama",
        expected=(Expected("pinned_cache_length", 609.75, "Ollama's MLX cache restores only 24575 tokens"),),
    ),
)


def sample_dir() -> Traversable:
    """The bundled samples: the `kvwatch.samples` package (the repository's samples/ directory)."""
    try:
        return resources.files("kvwatch.samples")
    except ModuleNotFoundError:  # an editable install made before samples/ was mapped: the checkout
        return Path(__file__).resolve().parent.parent / "samples"


@dataclass(frozen=True)
class Timed:
    """One line to write: `delay` seconds after the demo's start, with its time rewritten."""

    delay: float
    sample: str
    text: str


def schedule(sample: Sample, lines: Iterable[str], start: float, speed: float) -> Iterator[Timed]:
    """The sample's lines with their times moved onto the demo's clock (`start`, epoch seconds)."""
    clock = ENGINES[sample.engine].clock
    if clock is None:
        raise ValueError(f"{sample.name}: engine {sample.engine} declares no clock for its lines")
    base = 0.0 if clock.relative else start
    # The clocks of the cache layers its log carries first (their records hold the engine's pattern too).
    clocks = [c for c in (ENGINES[n].clock for n in layers_of(sample.engine) if n in ENGINES) if c] + [clock]

    def convert(when: float, first: float, floor: float) -> float:
        return base + max(floor, sample.delay(when - first, speed))  # never backwards (a restart)

    t0: float | None = None
    delay = 0.0
    for line in lines:
        when, own = None, clock
        for own in clocks:
            when = own.read(line)
            if when is not None:
                break
        if when is None:
            yield Timed(delay, sample.name, line)
            continue
        t0 = when if t0 is None else t0
        delay = max(delay, sample.delay(when - t0, speed))
        yield Timed(delay, sample.name, own.write(line, partial(convert, first=t0, floor=delay)))


def lines_of(text: str) -> list[str]:
    """`text` cut after each newline only (a carriage return stays inside its line, as tailed)."""
    parts = [part + "\n" for part in text.split("\n")]
    parts[-1] = parts[-1][:-1]
    return parts if parts[-1] else parts[:-1]


def plan(samples: Iterable[Sample], start: float, speed: float, root: Traversable) -> list[Timed]:
    """Every sample's lines, merged in the order they are due."""
    timed: list[Timed] = []
    for sample in samples:
        text = root.joinpath(f"{sample.name}.log").read_bytes().decode("utf-8", "surrogateescape")
        timed += schedule(sample, lines_of(text), start, speed)
    return sorted(timed, key=lambda t: t.delay)  # stable: each file keeps its order


class Writer:
    """A thread that appends each planned line to `<logs>/<sample>.log` when it is due."""

    def __init__(self, timed: list[Timed], logs: Path, start: float, stop: threading.Event) -> None:
        """Ready to write `timed` (from `plan`) into the directory `logs` from `start` (epoch) on."""
        self.timed, self.logs, self.start, self.stop = timed, logs, start, stop
        self.done = threading.Event()
        self.error: OSError | None = None
        self.thread = threading.Thread(target=self._run, name="demo-writer", daemon=True)

    def _run(self) -> None:
        handles = {}
        try:
            for name in sorted({t.sample for t in self.timed}):
                path = self.logs / f"{name}.log"
                handles[name] = path.open("a", encoding="utf-8", errors="surrogateescape", newline="")
            i = 0
            while i < len(self.timed) and not self.stop.is_set():
                wait = self.start + self.timed[i].delay - time.time()
                if wait > 0 and self.stop.wait(wait):
                    break
                now = time.time() - self.start
                touched = set()
                while i < len(self.timed) and self.timed[i].delay <= now:
                    handles[self.timed[i].sample].write(self.timed[i].text)
                    touched.add(self.timed[i].sample)
                    i += 1
                for name in touched:
                    handles[name].flush()
        except OSError as exc:
            self.error = exc
        finally:
            for handle in handles.values():
                handle.close()
            self.done.set()
