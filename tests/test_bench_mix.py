"""The llama.cpp bench log has the line mix of a real llama-server capture (bench/llamacpp-mix.json)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import gen_llamacpp  # noqa: E402 - bench/gen_llamacpp.py
import mix_llamacpp  # noqa: E402 - bench/mix_llamacpp.py

REFERENCE = json.loads((BENCH / "llamacpp-mix.json").read_text(encoding="utf-8"))


def test_reference_counts_are_the_captured_logs() -> None:
    """bench/llamacpp-mix.json is what bench/mix_llamacpp.py measures on the committed capture."""
    log = BENCH / REFERENCE["log"]
    counts = mix_llamacpp.measure(mix_llamacpp.serving(log.read_text(encoding="utf-8").splitlines()))
    assert dict(counts) == REFERENCE["counts"]
    assert REFERENCE["requests"] == 42 and REFERENCE["lines"] == sum(counts.values())


def test_kind_reads_numbers_as_n() -> None:
    """Kinds ignore numbers, pointers, the slot id and the function column's padding."""
    a = "0.00.376.485 I srv        update:    - prompt 0x55ba05b3ed70:     595 tokens, checkpoints:  0"
    b = "1.02.000.001 I srv        update:    - prompt 0x1:   12 tokens, checkpoints:  3"
    assert mix_llamacpp.kind(a) == mix_llamacpp.kind(b) == "srv update: - prompt N: N"
    pick = "0.00.411.607 I slot process_sing: id  1 | task -1 | saving idle slot to prompt cache"
    assert mix_llamacpp.kind(pick) == "slot process_sing: -1 | saving idle slot to"


def test_generator_reproduces_the_captured_shares() -> None:
    """Every kind of the capture is in the generated log at its share (within a fifth, or 0.4 points),
    and the generator writes no kind the capture lacks but its few start-up lines."""
    out = io.StringIO()
    gen_llamacpp.generate(out, 40_000, None, 8)
    lines = out.getvalue().splitlines()
    generated = mix_llamacpp.shares(mix_llamacpp.measure(mix_llamacpp.serving(lines)))
    reference = {k: n / REFERENCE["lines"] for k, n in REFERENCE["counts"].items()}
    far = {
        kind: (round(generated.get(kind, 0.0), 4), round(share, 4))
        for kind, share in reference.items()
        if abs(generated.get(kind, 0.0) - share) > max(0.004, share / 5)
    }
    assert not far, far
    assert set(generated) <= set(reference), set(generated) - set(reference)
