"""Parsers read by key and keep what they know: every engine's key lists (vLLM's stats lines, Ollama's
slog records, llama.cpp's `new prompt` / `stop processing` messages, LM Studio's mlx-engine `key=value`
lines, LMCache's lookup and retrieve lines, SGLang's batch lines, gateway usage JSON) give the same
figures when their sample lines gain a key kvwatch does not know, have their keys reordered or lose a
trailing separator; a key kvwatch does not know is counted (`kvwatch_unknown_fields_total`), never
dropped silently. (Gateway rows carry any keys a gateway logs: an unknown one there is no drift.
SGLang's new keys and shapes are also in tests/test_format_drift.py.)"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from corpora import SAMPLES

from kvwatch.cli import main

Figures = dict[str, list[tuple[tuple[tuple[str, str], ...], float]]]


def replayed(path: Path) -> tuple[Figures, float]:
    """Every counter family but kvwatch's own line counts, from `kvwatch replay --format json`, and the
    unknown fields counted."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["replay", "--format", "json", "--year", "2026", str(path)])
    metrics = json.loads(out.getvalue())["metrics"]
    own = ("kvwatch_lines", "kvwatch_unknown", "kvwatch_parse")
    figures = {
        name: sorted((tuple(sorted(s["labels"].items())), s["value"]) for s in samples)
        for name, samples in metrics.items()
        if name.endswith("_total") and not name.startswith(own)
    }
    return figures, sum(s["value"] for s in metrics.get("kvwatch_unknown_fields_total", []))


# --- vLLM: `Avg prompt throughput: ..., Running: N reqs, ...` -------------------------------------

_RUNNING = re.compile(r"(Running: \d+ reqs, )")


def vllm_extra_key(line: str) -> str:
    """A stats line with keys of no release after `Running:` (spelt with a hyphen and a digit, and one
    piece with no `: ` at all) and one at its end (before V0's `.`)."""
    if "Avg prompt throughput" not in line or "Running:" not in line:
        return line
    extra = r"\1Mystery gauge: 3.5%, KV-tier2 share: 7%, warmup done, "
    body = _RUNNING.sub(extra, line.rstrip("\n"), count=1)
    end = "." if body.endswith(".") else ""
    return body.removesuffix(".") + ", Mystery counter: 12 widgets" + end + "\n"


def vllm_reordered(line: str) -> str:
    """A stats line whose `Running:` and `Waiting:` (V0: `Swapped:`) fields swap places."""
    return re.sub(r"(Running: \d+ reqs), ((?:Waiting|Swapped): \d+ reqs)", r"\2, \1", line)


def vllm_stripped(line: str) -> str:
    """A V0 stats line without its trailing `.`."""
    if "Avg prompt throughput" in line and line.rstrip("\n").endswith("%."):
        return line.rstrip("\n")[:-1] + "\n"
    return line


# --- Ollama: slog `k=v` records ----------------------------------------------------------------------

_REQUEST_RECORD = re.compile(r'(msg="(?:cache hit|cache miss|loading cache slot)") (.*?)(\r?\n?)$')


def ollama_extra_key(line: str) -> str:
    """A request's slog record with an attribute of no release in the middle and at its end."""
    match = _REQUEST_RECORD.search(line)
    if match is None:
        return line
    first, _, rest = match[2].partition(" ")
    return line[: match.start(2)] + f'{first} mystery=7 {rest} other="a b"' + match[3]


def ollama_reordered(line: str) -> str:
    """A request's slog record with its attributes in reverse order."""
    match = _REQUEST_RECORD.search(line)
    if match is None:
        return line
    return line[: match.start(2)] + " ".join(reversed(match[2].split())) + match[3]


# --- llama.cpp: `new prompt, n_ctx_slot = N, ...`, `stop processing: n_tokens = N, truncated = N` -----

_NEW_PROMPT = re.compile(
    r"new prompt, (n_ctx_slot = \d+), (n_keep = \d+), ((?:task\.n_tokens|n_prompt_tokens) = \d+)"
)
_STOP = re.compile(r"(stop processing: (?:n_tokens|n_past) = \d+), (truncated = \d+)")


def llamacpp_extra_key(line: str) -> str:
    """`new prompt` and `stop processing` with a key of no build in the middle and at the end."""
    line = _NEW_PROMPT.sub(r"new prompt, \1, n_mystery = 3, \2, \3, n_other = 4", line)
    return _STOP.sub(r"\1, n_mystery = 5, \2", line)


def llamacpp_reordered(line: str) -> str:
    """`new prompt` with the prompt's size first, `stop processing` with `truncated` first."""
    line = _NEW_PROMPT.sub(r"new prompt, \3, \2, \1", line)
    return _STOP.sub(
        lambda m: m[0].replace(m[1] + ", " + m[2], f"stop processing: {m[2]}, {m[1][17:]}"), line
    )


# --- LM Studio: mlx-engine's `Prompt cache restore: k=v ...`, `... disk usage: k=v ...` ---------------

_PAIRS = re.compile(r"((?:Prompt cache restore|VLM prompt cache disk usage): )((?:\w+=\S+ ?)+)")


def lmstudio_extra_key(line: str) -> str:
    """A `key=value` line with a key of no release first and last."""
    return _PAIRS.sub(lambda m: f"{m[1]}mystery_mib=1.5 {m[2].rstrip()} other_count=3", line)


def lmstudio_reordered(line: str) -> str:
    """A `key=value` line with its pairs reversed, the efficiency without its `%`."""
    return _PAIRS.sub(lambda m: m[1] + " ".join(reversed(m[2].replace("%", "").split())), line)


# --- LMCache: `Reqid: R, Total tokens N, ...` and `Retrieved ... throughput: X GB/s;` ----------------

_LOOKUP = re.compile(
    r"(Reqid: \S+?), (Total tokens \d+), (.*?)(LMCache hit tokens: \d+), (need to load: -?\d+)"
)


def lmcache_extra_key(line: str) -> str:
    """A lookup line with a part of no release in the middle and at its end."""
    return _LOOKUP.sub(r"\1, \2, Mystery tokens: 9, \3\4, \5, Other: 1", line)


def lmcache_reordered(line: str) -> str:
    """A lookup line with its parts after the request id reversed; a retrieve line without its `;`."""
    line = _LOOKUP.sub(
        lambda m: ", ".join([m[1], m[5], m[4], *(m[3].rstrip(", ").split(", ") if m[3] else []), m[2]]), line
    )
    return line.replace(" GB/s; ", " GB/s ") if "Retrieved " in line else line


# --- SGLang: `Prefill batch, #new-seq: N, #new-token: N, #cached-token: N, ...` ----------------------

_SGLANG = re.compile(r"(#new-token: \d+), (#cached-token: \d+)")


def sglang_reordered(line: str) -> str:
    """A prefill line with `#cached-token` before `#new-token`."""
    return _SGLANG.sub(r"\2, \1", line)


# --- gateway usage rows (JSON) -----------------------------------------------------------------------


def usage_reordered(line: str) -> str:
    """A usage JSON line with its keys reversed and an unknown key first."""
    text = line.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return line
    try:
        record = json.loads(text)
    except ValueError:
        return line
    return json.dumps({"zz_mystery": {"n": 1}, **dict(reversed(list(record.items())))}) + "\n"


#: (the samples, a mutation, whether it adds a key kvwatch must count)
MUTATIONS: list[tuple[str, Callable[[str], str], bool]] = [
    ("vllm-*.log", vllm_extra_key, True),
    ("vllm-*.log", vllm_reordered, False),
    ("vllm-*.log", vllm_stripped, False),
    ("ollama-*.log", ollama_extra_key, True),
    ("ollama-*.log", ollama_reordered, False),
    ("llamacpp-*.log", llamacpp_extra_key, True),
    ("llamacpp-*.log", llamacpp_reordered, False),
    ("lmstudio-*.log", lmstudio_extra_key, True),
    ("lmstudio-*.log", lmstudio_reordered, False),
    ("lmcache-*.log", lmcache_extra_key, True),
    ("lmcache-*.log", lmcache_reordered, False),
    ("sglang-*.log", sglang_reordered, False),
    ("usage-*.log", usage_reordered, False),
]


def mutated(path: Path, mutate: Callable[[str], str]) -> str:
    return "".join(mutate(line) for line in path.read_text(encoding="utf-8").splitlines(keepends=True))


def cases() -> list[tuple[Path, Callable[[str], str], bool]]:
    """Each sample a mutation changes (docker json-file logs hold their lines in JSON strings: left out)."""
    found = []
    for pattern, mutate, counted in MUTATIONS:
        for path in sorted(SAMPLES.glob(pattern)):
            if path.read_text(encoding="utf-8").startswith('{"log"'):
                continue
            if mutated(path, mutate) != path.read_text(encoding="utf-8"):
                found.append((path, mutate, counted))
    return found


def test_every_engine_with_key_lists_is_mutated() -> None:
    """Each mutation changes at least one sample: no engine's key lines are left untested."""
    assert {mutate for _, mutate, _ in cases()} == {mutate for _, mutate, _ in MUTATIONS}


@pytest.mark.parametrize(
    ("sample", "mutate", "counted"), cases(), ids=lambda v: getattr(v, "__name__", getattr(v, "stem", str(v)))
)
def test_unknown_and_reordered_keys_leave_the_figures_unchanged(
    sample: Path, mutate: Callable[[str], str], counted: bool, tmp_path: Path
) -> None:
    """The mutated sample gives exactly the original's figures; a key kvwatch does not know is counted."""
    path = tmp_path / sample.name
    path.write_text(mutated(sample, mutate), encoding="utf-8")
    (want, unknown_before), (got, unknown_after) = replayed(sample), replayed(path)
    assert want == got
    assert unknown_before == 0
    assert (unknown_after > 0) == counted
