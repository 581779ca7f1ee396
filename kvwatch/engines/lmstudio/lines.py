"""The shapes of LM Studio's server log: its record framing, and the cache lines of its two runtimes.

LM Studio itself is closed source: its framing is read from public pastes (samples/README.lmstudio.md):
- 0.3.x (0.3.15, 0.3.18): one line `[YYYY-MM-DD HH:MM:SS][LEVEL] message`, a message of several lines
  going on in untimestamped continuation lines;
- 0.3.31 (2025-11), 0.4.x and the 2025-09 pastes: two-line records, `YYYY-MM-DD HH:MM:SS [LEVEL]`
  with the level right-aligned in 7 characters (`  [INFO]`, ` [DEBUG]`), then ` message` (one space);
  LM Studio's own messages carry ` [model-id] ` (or `[LM STUDIO SERVER] `, `[Client=...]`).
Times are local, without a zone. Engine output is shown as LM Studio DEBUG records.

mlx-engine (lmstudio-ai/mlx-engine, open source): mlx_engine/utils/logger.py formats
`[%(module)s][%(levelname)s]: %(message)s` since 2025-08-19 (2a4108f); before, mlx_engine/logging.py
printed `[CacheWrapper][INFO] message`. mlx_engine/cache_wrapper.py: `Prompt cache: using %d/%d tokens
from cache` since 2026-04-10 (ef77245); `Trimmed {n} tokens from the prompt cache`, `Tried to trim '{n}'
tokens ... Cache is not trimmable. Clearing the cache instead.` and the other clears from 2024-10 to
then. mlx_engine/model_kit/batched_vision/prompt_cache/coordinator.py (since 2026-05-28, e2f0e89):
`Prompt cache restore: cached_tokens=%s uncached_tokens=%s lifetime_efficiency=%.2f%%`, where
uncached = prompt - 1 - cached; cache_store.py: `VLM prompt cache disk usage: used_mib=%.1f cap_mib=%.1f
lifetime_evicted_mib=%.1f records=%s lifetime=model_load`.

The llama.cpp runtime (closed source, LM Studio 0.3.18 paste): at DEBUG `Looking for non-prefix
contiguous prompt sequences of size >= 256 to reuse from cache`, then continuation lines `Cache reuse
summary: 939/939 of prompt (100%), 939 prefix, 0 non-prefix`, `Total prompt tokens: 939`, `Prompt tokens
to decode: 1`.
"""

from __future__ import annotations

import re
from typing import Literal

from kvwatch.parsers.drift import Shapes

#: The versions whose framing the parser knows (from the pastes cited in samples/README.lmstudio.md).
KNOWN_VERSIONS = ("0.3.15", "0.3.18", "0.3.31", "0.4.5", "0.4.12", "0.4.14")
LEVELS = frozenset({"DEBUG", "INFO", "WARN", "WARNING", "ERROR"})
#: `2025-11-09 12:35:14  [INFO]` (two-line records: the message follows on the next line).
HEADER = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) +\[([A-Z]+)\]\s*$")
#: `[2025-07-19 20:33:33][DEBUG] message` (0.3.x: one line, continuation lines after it).
ONE_LINE = re.compile(r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\]\[([A-Z]+)\] ?")
#: `[2025-07-24 18:18:21.836] [error] message` (the app's main.log, electron-log; levels error, warn, info,
#: verbose, debug, silly), a JavaScript stack going on in untimestamped lines (lifecycle.py cites the pastes).
MAIN = re.compile(r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.\d{1,6}\] \[([A-Za-z]+)\] *")
#: main.log's levels as the server log's (only errors and warnings matter: none of them is DEBUG, which
#: would say the runtime's DEBUG records are written).
MAIN_LEVELS = {"error": "ERROR", "warn": "WARN", "warning": "WARN"}
#: The bracketed tags in front of a message: `[cache_wrapper][INFO]: `, `[qwen/qwen3-8b] `, ...
TAGS = re.compile(r"((?:\[[^\[\]]{1,200}\])+):? ?")

USING = re.compile(r"Prompt cache: using (\d+)/(\d+) tokens from cache\s*$")
#: mlx-engine's `key=value` lines, read by key (coordinator.py's restore line, cache_store.py's disk line):
#: each one's keys, and those it must have.
RESTORE_KEYS = frozenset({"cached_tokens", "uncached_tokens", "lifetime_efficiency"})
DISK_KEYS = frozenset({"used_mib", "cap_mib", "lifetime_evicted_mib", "records", "lifetime"})
DISK_REQUIRED = ("used_mib", "cap_mib", "records")
_PAIR = re.compile(r"(\w+)=([^\s,]*)")
TRIMMED = re.compile(r"Trimmed (\d+) tokens from the prompt cache\s*$")
REUSE = re.compile(
    r"Cache reuse summary: (\d+)/(\d+) of prompt \((\d+(?:\.\d+)?)%\), (\d+) prefix, (\d+) non-prefix"
)
#: The runtime's two lines after the summary (continuation lines, or a record's message and its
#: continuation): the prompt's tokens, and those it decodes. A record without the summary (mlx-lm#480's
#: GGUF paste, 2025-09) is read from them: cached = total - to decode, as every summary in the pastes
#: has it (`1022/1261` then `239`; a whole-prompt `939/939` then `1`).
TOTAL = re.compile(r"Total prompt tokens: (\d+)\s*$")
TO_DECODE = re.compile(r"Prompt tokens to decode: (\d+)\s*$")
MIB = 1024 * 1024
#: mlx-engine's per-request lines, unambiguous alone (a paste without LM Studio's framing, lmstudio#2419).
STANDALONE = re.compile(
    r"(?:\[[a-z_]+\]\[[A-Z]+\]: )?"
    r"(?:Prompt cache restore: cached_tokens=\d|Prompt cache: using \d+/\d+ tokens)"
)
#: Full-width brackets, as a paste from a CJK locale shows them: `2025-09-18 07:03:24 【DEBUG】`.
_FULL_WIDTH = str.maketrans({"【": "[", "】": "]"})


def ascii_brackets(text: str) -> str:
    """The text with LM Studio's full-width brackets as ASCII ones (its framing is read in ASCII)."""
    return text.translate(_FULL_WIDTH) if "【" in text else text


ClearReason = Literal["not_trimmable", "short_trim", "unknown_length", "inconsistent", "draft_model"]
#: mlx-engine's messages that drop its whole prompt cache (cache_wrapper.py), by what starts them.
CLEARS: tuple[tuple[str, ClearReason], ...] = (
    ("Tried to trim '", "not_trimmable"),
    ("Tokens trimmed from cache (", "short_trim"),
    ("Could not determine the number of tokens in the", "unknown_length"),
    ("The live cache is longer than the tracked token history", "inconsistent"),
    ("The number of tokens in the cache is greater than the number of prompt tokens", "inconsistent"),
    ("Clearing current prompt cache and adding draft model", "draft_model"),
)
GENERATION = "Running chat completion on conversation with "
#: Tags that name no model: LM Studio's server, its clients and endpoints.
NOT_MODELS = ("LM STUDIO SERVER", "Client=", "Endpoint=", "LMSInternal", "Plugin(")


#: LM Studio's lines of the kinds kvwatch reads (kvwatch.parsers.drift): mlx-engine's prompt cache lines
#: and the llama.cpp runtime's reuse summary, by their words; one that reads as none of their shapes
#: is a reworded line.
SHAPES = Shapes(
    (
        "Prompt cache",
        "cached_tokens",
        "tokens from cache",
        "Cache reuse",
        "Total prompt tokens",
        "tokens to decode",
    )
)


class GarbledError(ValueError):
    """A known line whose numbers cannot be read."""


def pairs(text: str) -> dict[str, str]:
    """A line's `key=value` pairs, in any order (a value ends at a space or a comma)."""
    return dict(_PAIR.findall(text))


def integer(values: dict[str, str], key: str, signed: bool = False) -> int:
    """An integer value, else GarbledError."""
    value = values[key]
    digits = value[1:] if signed and value[:1] == "-" else value
    if not digits.isdecimal():
        raise GarbledError(f"{key}={value[:20]!r} is not an integer")
    return int(value)


def decimal(values: dict[str, str], key: str, unit: str = "") -> float:
    """A non-negative decimal value (its `unit` suffix optional), else GarbledError."""
    value = values[key].removesuffix(unit) if unit else values[key]
    whole, _, fraction = value.partition(".")
    if not whole.isdecimal() or (fraction and not fraction.isdecimal()):
        raise GarbledError(f"{key}={values[key][:20]!r} is not a number")
    return float(value)


def split_tags(message: str) -> tuple[list[str], str]:
    """The bracketed tags in front of a message, and the message after them (and any `: `)."""
    if not message.startswith("["):
        return [], message
    match = TAGS.match(message)
    if match is None:
        return [], message
    return match[1][1:-1].split("]["), message[match.end() :]


def model_of(tags: list[str]) -> str:
    """The model id a message of LM Studio's own names (` [model-id] `), else ""."""
    if len(tags) != 1:
        return ""
    tag = tags[0]
    if tag in LEVELS or tag.startswith(NOT_MODELS) or "=" in tag or " " in tag:
        return ""
    return tag[:80]
