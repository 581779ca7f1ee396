"""The healthy --kv-offloading-size server (two bursts, read-back) that readback and docker both log."""

from __future__ import annotations

import random

from scripts.samples.vllm.jsonfile import docker_json
from scripts.samples.vllm.lines import NS
from scripts.samples.vllm.messages import Stat, offload_kv, stats_msg, walk
from scripts.samples.vllm.readme import Tally, readme_section, remember
from scripts.samples.vllm.server import Server, at, plain
from scripts.samples.vllm.startup import Setup, scrapes, startup, traffic, vllm_config


def offload_sample(
    name: str, version: str, seed: int, start: str, *, docker: bool, maker: str
) -> tuple[bytes, str]:
    """A healthy --kv-offloading-size server (two bursts, read-back), plain or docker json-file."""
    rng = random.Random(seed)
    s = Server(version, rng)
    tally = Tally()
    model = "Qwen/Qwen3-32B"
    template = ""
    if docker:
        # A long inline chat template (with CJK text) makes the non-default args record > 16 KiB:
        # kv_offloading_size lands in a later 16384-byte docker entry, and the padding is chosen
        # so that the first split falls inside a 3-byte UTF-8 character.
        para = (
            "{%- if message.role == \"system\" %}{{- '<|im_start|>system\\n' + message.content "
            "+ '<|im_end|>\\n' }}{%- endif %}{#- 系统提示\uff1a请使用中文回答\uff0c保持简洁。 #}"
        )
        head = len(b"(APIServer pid=1) INFO 08-19 06:40:00 [api_utils.py:273] non-default args: ")
        for pad in range(200):
            text = "{#" + "-" * pad + "#}" + para * 190
            template = f"'chat_template': {text!r}, "
            probe = f"{{'model_tag': '{model}', {template}".encode()
            if 0x80 <= probe[16384 - head] < 0xC0:
                break
    args = (
        f"{{'model_tag': '{model}', {template}'enable_log_requests': True, "
        f"'model': '{model}', 'trust_remote_code': True, 'max_model_len': 131072, "
        "'served_model_name': ['qwen3-32b'], 'gpu_memory_utilization': 0.92, "
        "'kv_offloading_size': 64.0}"
    )
    api = ("APIServer", 1)
    eng = ("EngineCore", 213)
    cfg = Setup(
        model=model,
        served="qwen3-32b",
        args=args,
        config=vllm_config(model, "qwen3-32b", max_len=131072, tp=1, dp=1),
        kv_tokens=237_536,
        max_len=131072,
        conc=1.81,
        kv_gib="57.99",
        engines=[eng],
        workers=[[eng]],
        connector="OffloadingConnector",
        shards=17,
    )
    t = at(start) + 120_503_000
    if docker:
        s.raw(
            t - 2 * NS,
            None,
            "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:63: "
            "FutureWarning: The pynvml package is deprecated. Please install nvidia-ml-py "
            "instead. If you did not install pynvml directly, please report this to the "
            "maintainers of the package that installed pynvml for you.\n",
            "stderr",
        )
        s.raw(t - 2 * NS + 1000, None, "  import pynvml  # type: ignore[import]\n", "stderr")
    t = startup(s, t, cfg, tally)
    size = len(f"non-default args: {args}".encode())
    tally.facts.insert(
        0,
        "non-default args: 'kv_offloading_size': 64.0 (no kv_transfer_config)"
        + (f", record of {size} bytes" if docker else ""),
    )
    t += 37 * NS
    block = 16 * 262144  # Qwen3-32B: 64 layers x 8 KV heads x 128 x 2 (K,V) x bf16, 16-token blocks
    prefix, kvu, ext = 62.0, 18.0, 0.0
    tick = 0
    for burst, n_int, ext_hi in ((0, 24, 31.0), (1, 18, 58.0)):
        for k in range(n_int):
            t_stat = t + 10 * NS
            traffic(s, t, 10, 0.45, log_requests=True)
            prefix = walk(rng, prefix + 0.4, 55.0, 92.0, 1.2)
            kvu = walk(rng, kvu, 8.0, 78.0, 6.0)
            if k or burst:
                ext = walk(rng, ext + (1.5 if ext < ext_hi else -1.0), 0.0, 70.0, 2.5)
            st = Stat(
                prompt=rng.uniform(1800, 9500),
                gen=rng.uniform(300, 1400),
                running=rng.randint(4, 24),
                waiting=rng.choice([0, 0, 0, 1, 2, 3]),
                kv=kvu,
                prefix=prefix,
                external=ext,
                preempt=rng.choice([0] * 9 + [2]),
            )
            s.log(t_stat, api, "stats", stats_msg(version, "Engine 000: ", st))
            remember(tally, "0", st)
            loads = 0 if (burst == 0 and k < 4) else rng.randint(30, 900 if burst else 400)
            stores = rng.randint(150, 2400)
            text, sb, lb = offload_kv(rng, stores, loads, block, lookups=rng.randint(12, 70), order=tick)
            s.log(t_stat + 1_000_000, api, "kvxfer", f"KV Transfer metrics: {text}")
            tally.kv("0", sb, lb)
            t = t_stat
            tick += 1
        st = Stat(prompt=0.0, gen=0.0, running=0, waiting=0, kv=0.0, prefix=prefix, external=ext)
        t += 10 * NS
        s.log(t, api, "stats", stats_msg(version, "Engine 000: ", st))
        remember(tally, "0", st)
        gap = 240 if burst == 0 else 30
        scrapes(s, t, gap)
        t += gap * NS + 417_000_000
    data = docker_json(s.render()) if docker else plain(s.render())
    if docker:
        entries = data.split(b"\n")[:-1]
        partial = sum(1 for e in entries if not e.split(b'","stream"')[0].endswith(b"\\n"))
        stderr = sum(1 for e in entries if b'"stream":"stderr"' in e)
        bad = data.count(b"\\ufffd")
        tally.facts.append(
            f"docker: {len(entries)} json-file entries, {partial} partial (no trailing newline), "
            f"{stderr} on stderr, {bad} `\\ufffd` escapes (the split inside a CJK character)"
        )
    body = [
        f"vLLM **{version}**, V1, one engine (`EngineCore`, TP=1), `Qwen/Qwen3-32B`, "
        "OffloadingConnector enabled with `--kv-offloading-size 64` (the connector name shows only in "
        "`Creating v1 connector with name: OffloadingConnector ...`). A healthy offload: two bursts "
        "of traffic (24 and 18 intervals of 10 s), each followed by exactly one `0.0 tokens/s` "
        "line; a 4-minute silence between them. Every busy interval has a `KV Transfer metrics:` line "
        "with the 0.24+ flat `vllm:kv_offload_*` keys (group order rotates between intervals; "
        "load keys missing in the first 4 intervals); `External prefix cache hit rate` climbs from "
        "0.0% to well above 0. Request logging is on (`Received request ...`), uvicorn access lines, "
        "Prometheus `/metrics` scrapes, startup logo as a `\\r\\n` multi-line record, tqdm bar "
        "with lone `\\r` after the `(EngineCore pid=213) ` prefix.",
    ]
    if docker:
        body.append(
            "Docker json-file form (moby `jsonlog` escaping written by hand; time = RFC3339Nano with "
            "trailing zeros trimmed). The `non-default args` line carries a long `chat_template` "
            "with CJK text; it is longer than 16 KiB and is split into 16384-byte entries (all but "
            "the last without `\\n`); one split falls inside a 3-byte UTF-8 character, which moby "
            "stores as `\\ufffd` (one per invalid byte) on both sides of the split, exactly as the "
            "real driver does. `kv_offloading_size` sits after the split. stderr entries: a Python "
            "FutureWarning, the tqdm bar and uvicorn's startup lines."
        )
    return data, readme_section(name, body, tally, maker=maker)
