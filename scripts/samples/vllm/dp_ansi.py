"""Makes samples/vllm-dp-ansi.log (+ .golden): vLLM 0.11.2, two DP engines, ANSI prefixes."""

from __future__ import annotations

import random

from scripts.samples.made import Made
from scripts.samples.vllm.lines import NS
from scripts.samples.vllm.messages import Stat, spec_msg, stats_msg, walk
from scripts.samples.vllm.readme import Tally, readme_section, remember
from scripts.samples.vllm.server import Server, at, plain
from scripts.samples.vllm.startup import Setup, startup, traffic, vllm_config


def dp_ansi_sample() -> tuple[bytes, str]:
    """Two DP engines on 0.11.2, colour prefix on every physical line."""
    version = "0.11.2"
    rng = random.Random(3003)
    s = Server(version, rng)
    tally = Tally()
    model = "Qwen/Qwen3-30B-A3B-Instruct-2507"
    api = ("APIServer", 1)
    engs = [("EngineCore_DP0", 187), ("EngineCore_DP1", 188)]
    spec_cfg = "SpeculativeConfig(method='eagle3', model='Tengyunw/qwen3_30b_moe_eagle3', num_spec_tokens=3)"
    args = (
        f"{{'model_tag': '{model}', 'enable_log_requests': True, 'model': '{model}', "
        "'max_model_len': 65536, 'served_model_name': ['qwen3-30b'], 'data_parallel_size': 2, "
        "'speculative_config': {'method': 'eagle3', 'model': 'Tengyunw/qwen3_30b_moe_eagle3', "
        "'num_speculative_tokens': 3}}"
    )
    cfg = Setup(
        model=model,
        served="qwen3-30b",
        args=args,
        config=vllm_config(model, "qwen3-30b", max_len=65536, tp=1, dp=2, spec=spec_cfg),
        kv_tokens=1_102_400,
        max_len=65536,
        conc=16.82,
        kv_gib="100.93",
        engines=engs,
        workers=[[e] for e in engs],
        shards=16,
        arch="Qwen3MoeForCausalLM",
    )
    t = startup(s, at("2026-03-07T16:40:11") + 5_000_000, cfg, tally)
    t += 15 * NS
    state = {0: [70.0, 20.0], 1: [68.0, 25.0]}
    idle = {0: 36, 1: 30}  # interval at which each engine's traffic stops
    for k in range(38):
        t_stat = t + 10 * NS
        if k < idle[0]:
            traffic(s, t, 10, 0.6 if k < idle[1] else 0.3, log_requests=True)
        for e in (0, 1):
            label = f"Engine {e:03d}: "
            if k > idle[e]:
                continue
            if k == idle[e]:
                st = Stat(0.0, 0.0, 0, 0, 0.0, state[e][0])
            else:
                state[e][0] = walk(rng, state[e][0] + 0.3, 50.0, 88.0, 1.5)
                state[e][1] = walk(rng, state[e][1], 5.0, 96.0, 9.0)
                st = Stat(
                    prompt=rng.uniform(2500, 14000),
                    gen=rng.uniform(400, 2200),
                    running=rng.randint(8, 64),
                    waiting=rng.choice([0, 0, 1, 3, 7]),
                    kv=state[e][1],
                    prefix=state[e][0],
                    preempt=rng.choice([0, 0, 0, 0, 0, 1, 4]) if state[e][1] > 45 else 0,
                )
            s.log(t_stat + e * 900_000, api, "stats", stats_msg(version, label, st))
            remember(tally, str(e), st)
            if k < idle[e] and rng.random() < 0.6:
                s.log(
                    t_stat + e * 900_000 + 300_000,
                    api,
                    "specdec",
                    spec_msg(rng, 3, 10.0, rng.randint(600, 2600)),
                )
                tally.spec_lines[str(e)] = tally.spec_lines.get(str(e), 0) + 1
        t = t_stat
    body = [
        f"vLLM **{version}** (0.11.0 lacks the Preemptions field; 0.11.1+ has it), V1, "
        "`--data-parallel-size 2` (one API server), EAGLE3 speculative decoding. Every physical "
        "line, uvicorn and tqdm included, starts with the always-on colour prefix "
        "`\\x1b[1;36m(APIServer pid=1)\\x1b[0;0m ` (or `EngineCore_DP0/1`). Each interval prints "
        "`Engine 000:` then `Engine 001:`; a `SpecDecoding metrics:` line follows some of them (it "
        "belongs to the engine just above). `Preemptions: N` appears on some lines (high KV usage). "
        "Engine 001 goes idle first (one `0.0 tokens/s` line, then silence) while Engine 000 keeps "
        "logging, then Engine 000 goes idle too. No KV connector, so no External field. Banner "
        "`vLLM API server version 0.11.2` (pre-0.15 form).",
    ]
    return plain(s.render()), readme_section("vllm-dp-ansi.log", body, tally, maker=__name__)


def make() -> list[Made]:
    """The sample and its README section."""
    data, section = dp_ansi_sample()
    return [Made("vllm-dp-ansi.log", data, section)]
