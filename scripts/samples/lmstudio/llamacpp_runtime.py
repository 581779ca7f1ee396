"""Makes samples/lmstudio-v0-3-18-llamacpp.log (+ .golden): one-line records, the llama.cpp runtime's `Cache reuse summary`."""

# Log lines are built whole from their format strings, however long.
# ruff: noqa: E501

from __future__ import annotations

from datetime import datetime, timedelta

from scripts.samples.lmstudio.lines import one_line, turns
from scripts.samples.made import Made

# LM Studio 0.3.18 (lmstudio-bug-tracker#778, Windows, 2025-07-19): `[2025-07-19 20:33:33][DEBUG] Looking
# for non-prefix contiguous prompt sequences of size >= 256 to reuse from cache` then the untimestamped
# `Cache reuse summary: 939/939 of prompt (100%), 939 prefix, 0 non-prefix`, `Total prompt tokens: 939`,
# `Prompt tokens to decode: 1`; the request body redacted as `{ <REDACTED>`; `Sampling params:` with
# tab-indented continuation lines. Only the 100% form of the percentage is attested: others are written
# here as whole percents.
SAMPLING = (
    "Sampling params:\trepeat_last_n = 64, repeat_penalty = 1.100, frequency_penalty = 0.000, presence_penalty = 0.000\n"
    "\tdry_multiplier = 0.000, dry_base = 1.750, dry_allowed_length = 2, dry_penalty_last_n = -1\n"
    "\ttop_k = 40, top_p = 1.000, min_p = 0.050, xtc_probability = 0.000, xtc_threshold = 0.100, typical_p = 1.000, top_n_sigma = -1.000, temp = 0.500\n"
    "\tmirostat = 0, mirostat_lr = 0.100, mirostat_ent = 5.000"
)


def make_log() -> str:
    """Eight turns of one chat: the previous turn's prompt and reply are reused from the cache."""
    t = datetime(2025, 7, 19, 20, 33, 33)
    out = []
    previous = 0
    for i, (prompt, generated) in enumerate(turns(939, 8, seed=778, grow=(60, 400))):
        reused = min(previous, prompt - 1) if i else 0
        share = round(100 * reused / prompt)
        out.append(
            one_line(t, "DEBUG", "Received request: POST to /v1/chat/completions with body { <REDACTED>")
        )
        out.append(
            one_line(
                t,
                "INFO",
                f"[LM STUDIO SERVER] Running chat completion on conversation with {1 + 2 * i} messages.",
            )
        )
        out.append(one_line(t, "DEBUG", SAMPLING))
        out.append(
            one_line(
                t,
                "DEBUG",
                "Looking for non-prefix contiguous prompt sequences of size >= 256 to reuse from cache",
            )
            + f"\nCache reuse summary: {reused}/{prompt} of prompt ({share}%), {reused} prefix, 0 non-prefix"
            + f"\nTotal prompt tokens: {prompt}\nPrompt tokens to decode: {max(prompt - reused, 1)}"
        )
        t += timedelta(seconds=1 + (prompt - reused) / 600)
        out.append(
            one_line(t, "INFO", "[LM STUDIO SERVER] First token generated. Continuing to stream response..")
        )
        t += timedelta(seconds=generated / 40)
        out.append(one_line(t, "INFO", "Finished streaming response"))
        t += timedelta(seconds=25)
        previous = prompt + generated
    return "\n".join(out) + "\n"


def make() -> list[Made]:
    """The sample."""
    return [Made("lmstudio-v0-3-18-llamacpp.log", make_log().encode())]
