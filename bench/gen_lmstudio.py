"""Generate an LM Studio 0.4.x server log with the line mix it writes per request (Verbose Logging on).

The shape: LM Studio's two-line records (`YYYY-MM-DD HH:MM:SS  [INFO]` / ` [model-id] message`, from the
0.3.31 and 0.4.12 pastes cited in samples/README.lmstudio.md) and mlx-engine's
`[cache_wrapper][INFO]: Prompt cache: using N/M tokens from cache` (mlx_engine/cache_wrapper.py, since
ef77245). Per request: `Running chat completion on conversation with N messages.`, `Streaming
response...`, the client's `[Client=...]` SDK records, the cache line, `Prompt processing progress`
every 2048 new tokens, `Finished streaming response`. One user's agent conversations, turn by turn, a
request every 5-60 s of event time; each turn reuses the last (a new conversation starts from 0).
Deterministic for a seed.

    python bench/gen_lmstudio.py --mb 50 -o lmstudio.log
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import datetime, timedelta
from typing import TextIO

MODELS = ("qwen/qwen3-coder-30b", "openai/gpt-oss-20b")
CHUNK = 2048


def generate(out: TextIO, mb: float, seed: int = 31) -> dict[str, int]:
    """Write about `mb` MB; the totals kvwatch and mtail must both find."""
    rng = random.Random(seed)
    t = datetime(2026, 6, 10, 9, 0, 0)
    totals = {"lines": 0, "requests": 0, "prompt": 0, "cached": 0, "completions": 0, "bytes": 0}
    limit = int(mb * 1e6)

    def record(level: str, message: str) -> None:
        text = f"{t:%Y-%m-%d %H:%M:%S} {'[' + level + ']':>7}\n {message}\n"
        out.write(text)
        totals["lines"] += 2
        totals["bytes"] += len(text)

    conversation = 0
    while totals["bytes"] < limit:
        model = MODELS[conversation % 2]
        client = f"{rng.getrandbits(128):032x}"[:24]
        conversation += 1
        prompt, cached, messages = rng.randint(9000, 14000), 0, 1
        while prompt < 60000 and totals["bytes"] < limit:
            record("INFO", f"[{model}] Running chat completion on conversation with {messages} messages.")
            record("INFO", f"[{model}] Streaming response...")
            record("DEBUG", f"[Client={client}] Client created.")
            record("INFO", f"[Client={client}][Endpoint=listLoaded] Listing loaded models")
            record("DEBUG", f"[cache_wrapper][INFO]: Prompt cache: using {cached}/{prompt} tokens from cache")
            new = prompt - cached
            for done in range(0, new, CHUNK):
                record("INFO", f"[{model}] Prompt processing progress: {100 * done / new:.1f}%")
            record("INFO", f"[{model}] Prompt processing progress: 100.0%")
            t += timedelta(seconds=rng.randint(5, 60))
            record("INFO", "Finished streaming response")
            totals["completions"] += 1
            totals["requests"] += 1
            totals["prompt"] += prompt
            totals["cached"] += cached
            generated = rng.randint(30, 600)
            cached = prompt + generated - 1
            prompt += generated + rng.randint(50, 1500)
            messages += 2
    return totals


def main() -> None:
    """CLI: write the log, print its totals as JSON on stderr."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("-o", "--out", required=True)
    args = parser.parse_args()
    with open(args.out, "w", encoding="utf-8") as out:
        totals = generate(out, args.mb, args.seed)
    print(json.dumps(totals), file=sys.stderr)


if __name__ == "__main__":
    main()
