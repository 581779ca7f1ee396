"""Each engine's sniff hint (capabilities.Hints) is a cheaper test that every head its looks_like takes
passes: auto-detection skips importing a parser only where that parser could not have said yes."""

from __future__ import annotations

import importlib
import random
import subprocess
import sys
from pathlib import Path

import pytest
from corpora import SAMPLES, sample_logs

from kvwatch.engines import ENGINES, detect_engine
from kvwatch.engines.capabilities import Hints
from kvwatch.replay.files import sniff_file

LOGS = sample_logs(rotated=False)
HINTED = [engine for engine in ENGINES.values() if isinstance(engine, Hints)]


def _heads() -> list[str]:
    """Every sample's head as a replay reads it, each line alone, and random runs of its lines, in
    their order and shuffled (looks_like asks two lines of a kind, or a line after a header)."""
    rng = random.Random(9)
    heads = []
    for path in LOGS:
        _, head = sniff_file(str(path))
        lines = head.splitlines(keepends=True)
        heads += [head, *lines]
        for _ in range(20):
            start = rng.randrange(len(lines))
            window = lines[start : start + rng.randrange(1, 40)]
            heads += ["".join(window), "".join(rng.sample(window, len(window)))]
    return heads


HEADS = _heads()


def test_every_engine_but_vllm_has_a_hint() -> None:
    """Every engine but vLLM has one (a vLLM log's detection, which asks every sniff of its first lines,
    imports no other parser)."""
    assert set(ENGINES) - {"vllm"} <= {engine.name for engine in HINTED}


@pytest.mark.parametrize("name", [engine.name for engine in HINTED])
def test_a_hint_passes_every_head_its_parser_takes(name: str) -> None:
    """On the samples of every engine, whole and cut up: where looks_like says yes, so does the hint;
    and the hint says no somewhere (it spares an import)."""
    engine = ENGINES[name]
    assert isinstance(engine, Hints)
    looks_like = importlib.import_module(engine.home).looks_like
    taken = [head for head in HEADS if looks_like(head)]
    assert taken, "no sample head is this engine's"
    assert all(engine.hint(head) for head in taken)
    assert not all(engine.hint(head) for head in HEADS)


@pytest.mark.parametrize("path", LOGS, ids=lambda path: path.name)
def test_detection_is_what_the_parsers_alone_say(path: Path) -> None:
    """The engine detected with the hints is the first whose looks_like says yes, as before them."""
    _, head = sniff_file(str(path))
    ranked = sorted(ENGINES.values(), key=lambda engine: engine.sniff_rank)
    alone = next((e.name for e in ranked if importlib.import_module(e.home).looks_like(head)), None)
    assert detect_engine(head) == alone
    assert alone is not None


def test_the_llamacpp_hint_holds_the_parser_s_markers() -> None:
    """llama.cpp's hint is its parser's markers, written where the registry can read them cheaply."""
    from kvwatch.engines.llamacpp import SNIFF_MARKERS
    from kvwatch.engines.llamacpp.parser import MARKERS

    assert SNIFF_MARKERS == MARKERS


def test_detecting_a_vllm_log_imports_no_other_parser() -> None:
    """A replay's start (serial, before its children read) loads only the parser it uses."""
    code = (
        "import sys\n"
        "from kvwatch.replay import plan\n"
        f"print(plan([{str(SAMPLES / 'vllm-docker.log')!r}], 'auto', None)[0].engine)\n"
        "print(sorted(m for m in sys.modules if m.startswith('kvwatch.engines.') and m.endswith('parser')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["vllm", "['kvwatch.engines.vllm.parser']"]
