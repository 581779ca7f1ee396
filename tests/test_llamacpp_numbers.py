"""llama.cpp's numbers: what its printf writes is read, and nothing else."""

from __future__ import annotations

import random
import re

from kvwatch.engines.llamacpp import lines as ln


def test_to_float_reads_what_printf_writes_and_nothing_else() -> None:
    """to_float accepts exactly the texts `\\d+(?:\\.\\d+)?` matches whole (any Unicode digits)."""
    number = re.compile(r"\d+(?:\.\d+)?")
    rng = random.Random(5)
    alphabet = "0123456789..-+e \u0663\u00b2x\n"
    accepted = 0
    for _ in range(50000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        try:
            ln.to_float(text)
            got = True
        except ln.GarbledError:
            got = False
        assert (number.fullmatch(text) is not None) == got, repr(text)
        accepted += got
    assert accepted > 1000
