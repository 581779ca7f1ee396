"""Generate an Ollama >= 0.30 log under journald, with the line mix Ollama writes per request.

The shape follows Ollama 0.30 (llm/llama_server.go: each loaded model's llama-server started with
`--log-verbosity 4 --no-log-prefix --no-log-timestamps`, its output copied into Ollama's stderr;
server/routes.go: gin's access line; logutil: slog records) and its bundled llama.cpp b9452's
`tools/server/server-context.cpp` strings. Two models: their runners start, then serve conversations
turn by turn (one runner at a time: the order Ollama's scheduler gives a single user). Per request:
the slot pick, `processing task`, `new prompt ... task.n_tokens = N`, `cached n_tokens = P,
memory_seq_rm [P, end)` per 2048-token batch, `prompt processing` progress, `init sampler`, `n_gen`
lines, the timing lines, `stop processing`, `done request`, then `[GIN]`. Every line carries journald's
`Mon DD HH:MM:SS host ollama[PID]: `. Deterministic for a seed.

    python bench/gen_ollama.py --mb 50 -o ollama.log
"""

# Log lines are built whole from their format strings, however long.
# ruff: noqa: E501

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from typing import TextIO

BLOBS = ("sha256-a3de86cd1c132c822487ededd47a324c50491393e6565cd14bafa40d0b8e686f",
         "sha256-dde5aa3fc5ffc17176b5e8bdc82f587b24b2678c6c66101bf7da77af9f7ccdff")  # fmt: skip
N_BATCH = 2048


def generate(out: TextIO, mb: float, seed: int = 30) -> dict[str, int]:
    """Write about `mb` MB; the totals kvwatch and mtail must both find."""
    rng = random.Random(seed)
    t = datetime(2026, 6, 10, 9, 0, 0, tzinfo=timezone.utc)
    totals = {"lines": 0, "requests": 0, "prompt": 0, "cached": 0, "bytes": 0}
    limit = int(mb * 1e6)

    def put(text: str) -> None:
        line = f"{t.strftime('%b %d %H:%M:%S')} gpu-ws ollama[2231]: {text}\n"
        out.write(line)
        totals["lines"] += 1
        totals["bytes"] += len(line)

    def slog(level: str, source: str, msg: str, attrs: str = "") -> None:
        stamp = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
        put(f"time={stamp} level={level} source={source} msg={json.dumps(msg)}{attrs}")

    slog("INFO", "routes.go:2008", "Listening on 127.0.0.1:11434 (version 0.30.2)")
    runner = 0
    while totals["bytes"] < limit:
        port = 39000 + runner
        model = BLOBS[runner % 2]
        runner += 1
        cmd = (f"/usr/local/lib/ollama/llama-server --model /usr/share/ollama/.ollama/models/blobs/{model}"
               f" --port {port} --host 127.0.0.1 --no-webui --offline -c 32768 -np 1 --log-verbosity 4"
               " --no-log-prefix --no-log-timestamps")  # fmt: skip
        slog("INFO", "llama_server.go:433", "starting llama-server", f" cmd={json.dumps(cmd)}")
        put("srv    load_model: initializing, n_slots = 1, n_ctx_slot = 32768, kv_unified = 'false'")
        put("slot   load_model: id  0 | task -1 | new slot, n_ctx = 32768")
        put(f"srv  llama_server: server is listening on http://127.0.0.1:{port}")
        slog("INFO", "llama_server.go:1362", "llama-server started in 2.00 seconds")
        held, prompt = 0, rng.randint(800, 3000)
        for task in range(rng.randint(20, 60)):
            t += timedelta(seconds=rng.uniform(5, 40))
            cached = min(held, prompt - 1)
            tag = f"id  0 | task {task} |"
            pick = ("selected slot by LRU, t_last = -1" if task == 0 else
                    f"selected slot by LCP similarity, sim_best = {cached / prompt:.3f} (> 0.100 thold), f_keep = 1.000")  # fmt: skip
            put(f"slot get_availabl: id  0 | task -1 | {pick}")
            put(f"slot launch_slot_: {tag} processing task, is_child = 0")
            put(
                f"slot   operator(): {tag} new prompt, n_ctx_slot = 32768, n_keep = 0, task.n_tokens = {prompt}"
            )
            done = cached
            while True:
                put(f"slot   operator(): {tag} cached n_tokens = {done}, memory_seq_rm [{done}, end)")
                done = min(prompt, done + N_BATCH)
                if done >= prompt:
                    break
                put(
                    f"slot print_timing: {tag} prompt processing, n_tokens = {done - cached:6d}, progress = {done / prompt:.2f}, t = {1.0:6.2f} s / {2400.0:.2f} tokens per second"
                )
            put(
                f"slot   operator(): {tag} init sampler, took 0.05 ms, tokens: text = {prompt}, total = {prompt}"
            )
            gen = rng.randint(30, 600)
            for n in range(100, gen, 110):
                put(f"slot print_timing: {tag} n_gen = {n}, t_gen = {n / 38:.2f} s, {38.0:.2f} t/s")
            new = prompt - cached
            put(
                f"slot print_timing: {tag} prompt eval time = {new * 0.4:10.2f} ms / {new:5d} tokens ({0.4:8.2f} ms per token, {2500.0:8.2f} tokens per second)"
            )
            put(
                f"slot print_timing: {tag}        eval time = {gen * 26.3:10.2f} ms / {gen:5d} tokens ({26.3:8.2f} ms per token, {38.02:8.2f} tokens per second)"
            )
            put(
                f"slot print_timing: {tag}       total time = {new * 0.4 + gen * 26.3:10.2f} ms / {prompt + gen:5d} tokens"
            )
            put(f"slot      release: {tag} stop processing: n_tokens = {prompt + gen - 1}, truncated = 0")
            put("srv  update_slots: all slots are idle")
            put("srv  log_server_r: done request: POST /v1/chat/completions 127.0.0.1 200")
            seconds = new * 0.0004 + gen * 0.0263
            put(
                f'[GIN] {t.strftime("%Y/%m/%d - %H:%M:%S")} | 200 | {seconds:12.6f}s |       127.0.0.1 | POST     "/api/chat"'
            )
            totals["requests"] += 1
            totals["prompt"] += prompt
            totals["cached"] += cached
            held = prompt + gen
            prompt = held + rng.randint(50, 1500)
            if prompt > 30000:
                break
    return totals


def main() -> None:
    """CLI: write the log, print its totals as JSON on stderr."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("-o", "--out", required=True)
    args = parser.parse_args()
    with open(args.out, "w", encoding="utf-8") as out:
        totals = generate(out, args.mb, args.seed)
    print(json.dumps(totals), file=sys.stderr)


if __name__ == "__main__":
    main()
