"""Generate an SGLang 0.5.23 server log with `--log-requests`: SGLang's real line mix, seeded.

Line shapes from the sglang 0.5.23 wheel (`pip download sglang==0.5.23 --no-deps`):
`srt/utils/common.py` configure_logger (`[%Y-%m-%d %H:%M:%S] `, no ranks with TP=1),
`srt/managers/scheduler_components/metrics_reporter.py:753` (one `Prefill batch` line per prefill
batch, one or two new sequences) and `:963` (a `Decode batch` line every 40 decode iterations,
`--decode-log-interval`), `srt/utils/request_logger.py:197` (`Finish: obj=..., out=...` per request,
level 2: each text cut to its first and last 1024 characters, lists to 2048 items), and uvicorn's
access line per request. Multi-turn sessions sharing a system prompt, so `#cached-token` is large.
`--totals` prints what was written (JSON, on stderr) for the bench to check kvwatch and mtail against.

    python bench/gen_sglang.py --mb 50 -o sglang.log
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import asdict, dataclass
from typing import TextIO

START = 1775419200.0  # 2026-04-05T20:00:00Z
WORDS = ["the", "model", "reads", "a", "long", "system", "prompt", "then", "the", "user", "asks", "about",
         "kv", "cache", "reuse", "and", "tools"]  # fmt: skip


@dataclass
class Totals:
    """What the generator wrote."""

    lines: int = 0
    bytes: int = 0
    prefill_batches: int = 0
    prefill_seqs: int = 0
    computed_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    request_cached_tokens: int = 0


def truncated(value: str, max_length: int = 2048) -> str:
    """`_dataclass_to_string_truncated` of a string (srt/utils/request_logger.py:278, level 2: 2048)."""
    if len(value) > max_length:
        half = max_length // 2
        return f"{value[:half]!r} ... {value[-half:]!r}"
    return repr(value)


def stamp(t: float) -> str:
    """configure_logger's asctime (UTC)."""
    return time.strftime("[%Y-%m-%d %H:%M:%S] ", time.gmtime(t))


def generate(out: TextIO, target_bytes: int, target_lines: int, seed: int = 523) -> Totals:
    """Write lines until the size is reached; return the totals."""
    rng = random.Random(seed)
    totals = Totals()
    text = " ".join(rng.choice(WORDS) for _ in range(1500))  # a long prompt

    def emit(t: float, message: str) -> None:
        line = stamp(t) + message + "\n"
        out.write(line)
        totals.lines += 1
        totals.bytes += len(line.encode())

    emit(START, "server_args=ServerArgs(model_path='Qwen/Qwen3-32B', tp_size=1, dp_size=1, "
         "chunked_prefill_size=8192, page_size=1, disable_radix_cache=False, log_requests=True, "
         "log_requests_level=2, decode_log_interval=40)")  # fmt: skip
    sessions = [1500] * 32
    t = START + 5
    iteration = 0
    while totals.bytes < target_bytes and totals.lines < target_lines:
        t += rng.uniform(0.01, 0.1)  # a loaded server: ~18 prefill batches a second
        batch = []
        for _ in range(1 if rng.random() < 0.8 else 2):
            s = rng.randrange(len(sessions))
            cached = sessions[s]
            prompt = cached + rng.randint(80, 700)
            sessions[s] = prompt + rng.randint(40, 300)
            if sessions[s] > 60000:  # the session ends; a new one starts from the system prompt
                sessions[s] = 1500
            batch.append((prompt, cached))
        new = sum(p - c for p, c in batch)
        hit = sum(c for _, c in batch)
        running = rng.randint(4, 40)
        emit(t, f"Prefill batch, #new-seq: {len(batch)}, #new-token: {new}, #cached-token: {hit}, "
             f"token usage: {rng.uniform(0.1, 0.6):.2f}, #running-req: {running}, "
             f"#queue-req: {rng.randint(0, 3)}, "
             f"#pending-token: {rng.randint(0, 2000)}, cuda graph: False, "
             f"input throughput (token/s): {rng.uniform(1000, 20000):.2f}")  # fmt: skip
        totals.prefill_batches += 1
        totals.prefill_seqs += len(batch)
        totals.computed_tokens += new
        totals.cached_tokens += hit
        for _ in range(rng.randint(2, 12)):  # decode iterations until the next prefill
            iteration += 1
            if iteration % 40 == 0:
                emit(t, f"Decode batch, #running-req: {running}, #token: {rng.randint(20000, 90000)}, "
                     f"token usage: {rng.uniform(0.1, 0.6):.2f}, cuda graph: True, "
                     f"gen throughput (token/s): {rng.uniform(300, 1500):.2f}, #queue-req: 0")  # fmt: skip
        for prompt, cached in batch:
            rid = f"{rng.getrandbits(64):016x}"
            latency = rng.uniform(0.5, 9.0)
            completion = rng.randint(20, 600)
            reply = " ".join(rng.choice(WORDS) for _ in range(completion))
            ids = [rng.randrange(151000) for _ in range(completion)]
            meta = (
                f"{{'id': '{rid}', 'finish_reason': {{'type': 'stop', 'matched': 151645}}, "
                f"'prompt_tokens': {prompt}, 'weight_version': 'default', 'total_retractions': 0, "
                f"'completion_tokens': {completion}, 'cached_tokens': {cached}, "
                f"'e2e_latency': {latency}, 'response_sent_to_client_ts': {t + latency}}}"
            )
            emit(t + latency, f"Finish: obj=GenerateReqInput(rid='{rid}', text={truncated(text)}, "
                 f"sampling_params={{'max_new_tokens': 1024, 'temperature': 0.7}}, stream=False), "
                 f"out={{'text': {truncated(reply)}, 'output_ids': {ids}, 'meta_info': {meta}}}")  # fmt: skip
            port = rng.randint(30000, 60000)
            emit(t + latency, f'INFO:     127.0.0.1:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
            totals.requests += 1
            totals.prompt_tokens += prompt
            totals.request_cached_tokens += cached
    return totals


def main() -> None:
    """Write the log; with --totals print what was written as JSON on stderr."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--mb", type=float, help="size in MB")
    ap.add_argument("--lines", type=int, help="size in lines")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--totals", action="store_true")
    args = ap.parse_args()
    target_bytes = int(args.mb * 1e6) if args.mb else 1 << 62
    target_lines = args.lines or (1 << 62 if args.mb else 100_000)
    with open(args.output, "w", encoding="utf-8") as out:
        totals = generate(out, target_bytes, target_lines)
    if args.totals:
        print(json.dumps(asdict(totals)), file=sys.stderr)


if __name__ == "__main__":
    main()
