"""Makes samples/vllm-rotated.log.1.gz (+ .golden): vLLM 0.33.0, gzip-rotated, KV fetch."""

from __future__ import annotations

import gzip
import random

from scripts.samples.made import Made
from scripts.samples.vllm.lines import NS
from scripts.samples.vllm.messages import Stat, offload_kv, stats_msg, walk
from scripts.samples.vllm.readme import Tally, readme_section, remember
from scripts.samples.vllm.server import Server, at, plain
from scripts.samples.vllm.startup import Setup, startup, traffic, vllm_config


def rotated_sample() -> tuple[bytes, str]:
    """A 0.33.0 plain log, gzip-rotated (prefix in the formatter, KV fetch field)."""
    version = "0.33.0"
    rng = random.Random(7007)
    s = Server(version, rng)
    tally = Tally()
    model = "openai/gpt-oss-120b"
    api = ("APIServer", 1)
    eng = ("EngineCore", 96)
    args = (
        f"{{'model_tag': '{model}', 'model': '{model}', 'max_model_len': 131072, "
        "'served_model_name': ['gpt-oss-120b'], 'kv_offloading_size': 128.0}"
    )
    cfg = Setup(
        model=model,
        served="gpt-oss-120b",
        args=args,
        config=vllm_config(model, "gpt-oss-120b", max_len=131072, tp=1, dp=1),
        kv_tokens=4_260_416,
        max_len=131072,
        conc=32.50,
        kv_gib="64.91",
        engines=[eng],
        workers=[[eng]],
        connector="OffloadingConnector",
        shards=15,
        arch="GptOssForCausalLM",
    )
    t = startup(s, at("2026-11-02T09:00:00"), cfg, tally)
    t += 48 * NS
    prefix, kvu, ext = 55.0, 5.0, 0.0
    for k in range(45):
        t_stat = t + 10 * NS
        traffic(s, t, 10, 0.7, log_requests=False)
        prefix = walk(rng, prefix + 0.5, 40.0, 91.0, 1.0)
        kvu = walk(rng, kvu + 0.6, 2.0, 60.0, 3.0)
        ext = walk(rng, ext + 0.6, 0.0, 25.0, 1.0) if k else 0.0
        fetch = (
            (rng.randint(0, 3), rng.randint(1, 6), rng.randint(0, 2))
            if (k > 5 and rng.random() < 0.35)
            else (0, 0, 0)
        )
        st = Stat(
            prompt=rng.uniform(3000, 18000),
            gen=rng.uniform(1500, 6000),
            running=rng.randint(10, 70),
            waiting=rng.choice([0, 0, 1, 2]) + sum(fetch),
            kv=kvu,
            prefix=prefix,
            external=ext,
            fetch=fetch,
        )
        s.log(t_stat, api, "stats", stats_msg(version, "Engine 000: ", st))
        remember(tally, "0", st)
        loads = rng.randint(40, 700) if sum(fetch) or (k > 8 and rng.random() < 0.5) else 0
        text, sb, lb = offload_kv(
            rng, rng.randint(100, 1500), loads, 16 * 73728, lookups=rng.randint(15, 90), order=k
        )
        s.log(t_stat + 700_000, api, "kvxfer", f"KV Transfer metrics: {text}")
        tally.kv("0", sb, lb)
        t = t_stat
    data = plain(s.render())
    body = [
        f"vLLM **{version}**, plain log rotated and gzip-compressed (`gzip` with mtime 0). The "
        "0.31+ formatter puts `(APIServer pid=1) ` / `(EngineCore pid=96) ` in every vLLM record "
        "(`(APIServer pid=1) INFO 11-02 09:02:21 [loggers.py:335] Engine 000: ...`), while uvicorn "
        "lines and the tqdm bar carry **no** prefix. Startup has the 0.33 merged "
        "`GPU KV cache size: 4,260,416 tokens, Maximum concurrency for 131,072 tokens per request: "
        "32.50x` line and the logo. `--kv-offloading-size 128`, 45 busy intervals with KV Transfer "
        "lines (0.24+ keys) and `KV fetch: a waiting to start, b in progress, c completed waiting` "
        "on some lines (Waiting includes them). The file ends mid-traffic (rotation point): no "
        "idle line. Prefix is printed on every line because a request is always observed before "
        "the first INFO stats line (see vllm-multiconnector.log for the omitted form).",
    ]
    return gzip.compress(data, mtime=0), readme_section("vllm-rotated.log.1.gz", body, tally, maker=__name__)


def make() -> list[Made]:
    """The sample and its README section."""
    data, section = rotated_sample()
    return [Made("vllm-rotated.log.1.gz", data, section)]
