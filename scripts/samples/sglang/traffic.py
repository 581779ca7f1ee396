"""Traffic for the SGLang samples: requests of multi-turn sessions, as prefill batches would see them."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from scripts.samples.sglang.lines import Batch


@dataclass
class Request:
    """One request: when it arrives, its prompt and what of it the radix cache holds."""

    time: float
    prompt: int
    cached: int
    rid: str


def sessions(seed: int, start: float, count: int, system: int = 1200, broken: bool = False) -> list[Request]:
    """`count` requests of 6 sessions sharing a system prompt; each turn reuses the previous one.

    `broken`: something at the top of the prompt changes every turn, so nothing is ever reused.
    """
    rng = random.Random(seed)
    lengths = [system] * 6
    out = []
    t = start
    for i in range(count):
        t += rng.uniform(2.0, 9.0)
        s = rng.randrange(6)
        previous = lengths[s]
        lengths[s] = previous + rng.randint(150, 900)
        cached = 0 if broken else (previous if previous > system else system)
        cached = min(cached, lengths[s] - 1)
        out.append(Request(t, lengths[s], cached, f"{rng.getrandbits(64):016x}"))
        del i
    return out


def prefill_lines(  # noqa: PLR0917
    reqs: list[Request],
    chunk: int,
    fmt: Callable[[Batch, float], str],
    own_chunks: bool,
    decode: Callable[[float, int], str] | None = None,
    decode_every: float = 15.0,
) -> list[tuple[float, str]]:
    """(time, message) of every prefill batch (a long prompt in chunks) and decode line of the requests.

    `own_chunks`: a continuation prints its own earlier chunks as `#cached-token` (<= 0.4.1), else 0.
    """
    out: list[tuple[float, str]] = []
    total = 0
    hits = 0
    next_decode = reqs[0].time if reqs else 0.0
    for r in reqs:
        done = r.cached
        first = True
        t = r.time
        while done < r.prompt:
            new = min(chunk, r.prompt - done) if chunk > 0 else r.prompt - done
            cached = r.cached if first else (done if own_chunks else 0)
            total += new + cached
            hits += cached
            b = Batch(
                1, new, cached, running=2, queued=0, usage=min(0.95, r.prompt / 60000), rate=hits / total
            )
            out.append((t, fmt(b, t)))
            done += new
            first = False
            t += 0.4
        while decode is not None and next_decode <= t:
            out.append((next_decode, decode(next_decode, r.prompt)))
            next_decode += decode_every
    return out
