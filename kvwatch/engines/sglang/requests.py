"""Per-request numbers from `--log-requests` lines: only numbers are read, never a prompt or output.

Text (`Finish: obj=..., out={... 'meta_info': {... 'prompt_tokens': N, ..., 'cached_tokens': N}}`,
sglang 0.4.1+ srt/managers/tokenizer_manager.py, 0.5.8+ srt/utils/request_logger.py) and JSON
(`{"timestamp": ..., "event": "request.finished", ..., "out": {"meta_info": {...}}}`, 0.5.8+
srt/utils/log_utils.py `log_json`). `meta_info` is the last part of `out`, after any text, so its keys
are looked up from the end: a prompt quoting `'cached_tokens': 5` sits earlier in the line. A real
0.5.23 server prints `'cached_tokens_details': {'device': N, 'host': 0}` whenever `cached_tokens` > 0,
HiCache or not (and no details when it is 0), and logs its own warm-up and each `/health` check as
requests too (`rid='HEALTH_CHECK_...'`, a 1-token prompt: not recorded).
"""

from __future__ import annotations

import re

_TEXT_KEYS = ("'prompt_tokens': ", "'cached_tokens': ")
_JSON_KEYS = ('"prompt_tokens": ', '"cached_tokens": ')
_DIGITS = re.compile(r"\d+")
_TIERS = ("device", "host", "storage")


def health_check(line: str) -> bool:
    """Whether a finished request is SGLang's own `/health` probe (`rid='HEALTH_CHECK_<hex>'`, 0.5.x)."""
    return "rid='HEALTH_CHECK_" in line or '"rid": "HEALTH_CHECK_' in line


def _after(line: str, key: str, start: int) -> tuple[int, int] | None:
    at = line.rfind(key, start)
    if at < 0:
        return None
    digits = _DIGITS.match(line, at + len(key))
    return None if digits is None else (int(digits.group()), at)


def numbers(line: str, json_line: bool) -> tuple[int, int, tuple[tuple[str, int], ...]] | None:
    """(prompt tokens, cached tokens, cached by tier) of a finished request, None when unreadable."""
    prompt_key, cached_key = _JSON_KEYS if json_line else _TEXT_KEYS
    meta = line.rfind('"meta_info": ' if json_line else "'meta_info': ")
    if meta < 0:
        return None
    prompt = _after(line, prompt_key, meta)
    cached = _after(line, cached_key, meta)
    if prompt is None or cached is None:
        return None
    quote = '"' if json_line else "'"
    tiers: list[tuple[str, int]] = []
    details = line.find(f"{quote}cached_tokens_details{quote}: {{", meta)
    if details >= 0:
        close = line.find("}", details)
        for tier in _TIERS:
            value = _after(line[:close], f"{quote}{tier}{quote}: ", details)
            if value is not None:
                tiers.append((tier, value[0]))
    return prompt[0], cached[0], tuple(tiers)
