"""Generate a vLLM 0.26 docker json-file log: access and request-log lines, stats + KV lines every 10 s.

The shape follows the vLLM 0.26.0 wheel's `vllm/logger.py` (header), `vllm/utils/system_utils.py`
(process prefix), `vllm/v1/metrics/loggers.py` (stats), `vllm/distributed/kv_transfer/kv_connector/v1/`
`metrics.py` and `offloading/metrics.py` (KV Transfer keys) and `entrypoints/.../request_logger.py`
(request lines): `(APIServer pid=1) ` on every physical line
(0.10.1-0.30 wrap stdout), V1 stats lines per engine (`Engine 000: ...`, two engines, DP with
`--api-server-count 1`) each followed by its `KV Transfer metrics: vllm:kv_offload_...` line (key
order varying), idle suppression (one `0.0 tokens/s` line, then silence), uvicorn access lines
(`INFO:     ip:port - "GET /health HTTP/1.1" 200 OK`) and `--enable-log-requests` lines with a
`SamplingParams(...)` repr. Entries are exact moby json-file lines (RFC3339Nano, trailing zeros
trimmed). Deterministic for a seed; the output is written in ~4 MiB blocks.

    python bench/gen_vllm.py --lines 1500000 -o vllm.log     # ~366 MB, the issue's size
    python bench/gen_vllm.py --mb 50 -o vllm-50.log
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

START = 1787015520  # 2026-08-18T01:12:00Z
INTERVAL = 10
ENGINES = 2
PROXIES = ("10.0.3.17", "10.0.3.18", "10.0.3.19", "10.0.4.2", "10.0.4.3")  # load balancers probing /health
SCRAPER = "10.0.9.5"
MODEL = "Qwen/Qwen3-32B"
_SAMPLING = (
    "SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
    "temperature={temp}, top_p={top_p}, top_k=0, min_p=0.0, seed=None, stop=[], "
    "stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, ignore_eos=False, "
    "max_tokens={max_tokens}, min_tokens=0, logprobs=None, prompt_logprobs=None, "
    "skip_special_tokens=True, spaces_between_special_tokens=True, truncate_prompt_tokens=None, "
    "structured_outputs=None, extra_args=None)"
)


def moby_escape(text: str) -> str:
    """Escape a log value the way moby's jsonlog does (`<>&` as \\u00XX, control bytes as \\u00XX)."""
    out = json.dumps(text, ensure_ascii=False)[1:-1]
    out = out.replace("\\t", "\\u0009").replace("\\b", "\\u0008").replace("\\f", "\\u000c")
    return out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_BASES: dict[int, str] = {}


def stamp(ns_total: int) -> str:
    """Go RFC3339Nano in UTC: 1-9 fraction digits with trailing zeros trimmed, or none."""
    secs, ns = divmod(ns_total, 1_000_000_000)
    base = _BASES.get(secs)
    if base is None:
        if len(_BASES) > 4096:
            _BASES.clear()
        base = _BASES[secs] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs))
    frac = f"{ns:09d}".rstrip("0")
    return f"{base}.{frac}Z" if frac else f"{base}Z"


def entry(log: str, when_ns: int, stream: str = "stdout") -> str:
    """One json-file line for one physical log line (without its newline)."""
    return f'{{"log":"{moby_escape(log)}\\n","stream":"{stream}","time":"{stamp(when_ns)}"}}\n'


def header(secs: int) -> str:
    """vLLM's `%m-%d %H:%M:%S` (no year, no milliseconds)."""
    return time.strftime("%m-%d %H:%M:%S", time.gmtime(secs))


@dataclass
class Totals:
    """What the generator wrote, for cross-checking the bench (kvwatch and mtail must agree)."""

    lines: int = 0
    bytes: int = 0
    stats_lines: dict[str, int] = field(default_factory=dict)
    kv_lines: int = 0
    store_bytes: int = 0
    load_bytes: int = 0
    # With --lmcache: LMCache's lookups, and the tokens stored and retrieved summed over the workers.
    lmcache_lookups: int = 0
    lmcache_stored_tokens: int = 0
    lmcache_retrieved_tokens: int = 0


def startup(when: int, totals: Totals) -> list[str]:
    """The start of a 0.26 DP=2 server with the OffloadingConnector (a few records, both streams)."""
    api = "(APIServer pid=1) "
    hdr = header(when)
    ns = when * 1_000_000_000
    recs = [
        (f"{api}INFO {hdr} [api_server.py:1869] vLLM server version 0.26.0, serving model {MODEL}", "stdout"),
        (
            f"{api}INFO {hdr} [api_utils.py:273] non-default args: {{'model_tag': '{MODEL}', "
            "'host': '0.0.0.0', 'enable_log_requests': True, 'model': "
            f"'{MODEL}', 'max_model_len': 131072, 'data_parallel_size': 2, 'api_server_count': 1, "
            "'kv_transfer_config': KVTransferConfig(kv_connector='OffloadingConnector', "
            "engine_id='5b0f2b8e-2f43-4c57-9a51-2a0e1f3c9d77', kv_buffer_device='cuda', "
            "kv_buffer_size=1000000000.0, kv_role='kv_both', kv_rank=None, kv_parallel_size=1, "
            "kv_ip='127.0.0.1', kv_port=14579, kv_connector_extra_config={'cpu_bytes_to_use': "
            "960000000000}, kv_connector_module_path=None, enable_permute_local_kv=False, "
            "kv_load_failure_policy='fail')}",
            "stdout",
        ),
    ]
    for dp in range(ENGINES):
        core = f"(EngineCore_DP{dp} pid={80 + dp}) "
        recs += [
            (
                f"{core}WARNING {hdr} [base.py:190] Initializing KVConnectorBase_V1. This API is "
                "experimental and subject to change in the future as we iterate the design.",
                "stdout",
            ),
            (
                f"{core}INFO {hdr} [factory.py:62] Creating v1 connector with name: "
                "OffloadingConnector and engine_id: 5b0f2b8e-2f43-4c57-9a51-2a0e1f3c9d77",
                "stdout",
            ),
            (
                f"{core}INFO {hdr} [factory.py:47] Creating offloading spec with name: CPUOffloadingSpec",
                "stdout",
            ),
            (f"{core}INFO {hdr} [kv_cache_utils.py:1291] GPU KV cache size: 1,591,312 tokens", "stdout"),
            (
                f"{core}INFO {hdr} [kv_cache_utils.py:1296] Maximum concurrency for 131,072 tokens "
                "per request: 12.14x",
                "stdout",
            ),
        ]
    recs += [
        (f"{api}INFO {hdr} [api_server.py:1610] Starting vLLM server on http://0.0.0.0:8000", "stdout"),
        ("(APIServer pid=1) INFO:     Started server process [1]", "stderr"),
        ("(APIServer pid=1) INFO:     Waiting for application startup.", "stderr"),
        ("(APIServer pid=1) INFO:     Application startup complete.", "stderr"),
    ]
    out = []
    for i, (text, stream) in enumerate(recs):
        out.append(entry(text, ns + 1000 * i + 17, stream))
    totals.lines += len(out)
    return out


class Generator:
    """Writes intervals of 10 s until the target size is reached."""

    def __init__(self, seed: int, lmcache: bool = False) -> None:
        self.rng = random.Random(seed)
        # LMCache's lines draw from their own generator: the rest of the log is the same with or without.
        self.lmcache = random.Random(seed + 1) if lmcache else None
        self.totals = Totals()
        self.prev_active = [False] * ENGINES
        self.sampling = [
            moby_escape(_SAMPLING.format(temp=temp, top_p=top_p, max_tokens=mt))
            for temp in ("0.0", "0.6", "0.7", "1.0")
            for top_p in ("0.95", "1.0")
            for mt in ("256", "1024", "4096", "8192", "None")
        ]
        tail = '\\n","stream":"stdout","time":"'
        self.access_fmt = (
            '{{"log":"(APIServer pid=1) INFO:     {ip}:{port} - \\"{req} HTTP/1.1\\" 200 OK'
            + tail
            + '{ts}"}}\n'
        )
        self.reqlog_fmt = (
            '{{"log":"(APIServer pid=1) INFO {hdr} [request_logger.py:63] Received request '
            "chatcmpl-{rid:032x}: params: {params}, lora_request: None." + tail + '{ts}"}}\n'
        )
        self.stats_fmt = (
            '{{"log":"(APIServer pid=1) INFO {hdr} [loggers.py:310] Engine {eng:03d}: '
            "Avg prompt throughput: {ptp:.1f} tokens/s, Avg generation throughput: {gtp:.1f} "
            "tokens/s, Running: {run} reqs, Waiting: {wait} reqs{pre}, GPU KV cache usage: "
            "{kv:.1f}%, Prefix cache hit rate: {hit:.1f}%, External prefix cache hit rate: "
            "{ext:.1f}%" + tail + '{ts}"}}\n'
        )
        self.kv_fmt = (
            '{{"log":"(APIServer pid=1) INFO {hdr} [metrics.py:103] KV Transfer metrics: '
            "{payload}" + tail + '{ts}"}}\n'
        )

    def rate(self, when: int) -> float:
        """Chat requests per second: a daily curve, and an idle hour every night (03:00 UTC)."""
        hour = (when % 86400) / 3600
        if 3.0 <= hour < 4.0:
            return 0.0
        return 1.1 + 0.9 * math.sin((hour - 9.0) / 24.0 * 2 * math.pi)

    def interval(self, t0: int) -> list[str]:
        """The lines of one 10 s interval, in time order."""
        rng = self.rng
        rnd = rng.random
        timed: list[tuple[int, str]] = []
        base_ns = t0 * 1_000_000_000
        span = INTERVAL * 1_000_000_000
        probes = [f"{ip}|GET /health" for ip in PROXIES] * INTERVAL  # one a second per proxy
        timed.extend((base_ns + int(rnd() * span), probe) for probe in probes)
        timed.append((base_ns + int(rnd() * span), f"{SCRAPER}|GET /metrics"))
        mean = self.rate(t0) * INTERVAL
        n_chat = max(0, round(rng.gauss(mean, math.sqrt(mean)))) if mean else 0
        per_engine = [0] * ENGINES
        for _ in range(n_chat):
            timed.append((base_ns + int(rnd() * (span - 5_000_000)), "C"))
            per_engine[int(rnd() * ENGINES)] += 1
        timed.sort()
        out: list[str] = []
        access, reqlog, sampling = self.access_fmt, self.reqlog_fmt, self.sampling
        hdrs = {t0 + i: header(t0 + i) for i in range(INTERVAL + 1)}
        for at, what in timed:
            ts = stamp(at)
            port = 32768 + int(rnd() * 28232)
            if what == "C":
                ip = "10.0.2." + str(10 + int(rnd() * 50))
                endpoint = "POST /v1/chat/completions"
                rid = rng.getrandbits(128)
                params = sampling[int(rnd() * len(sampling))]
                out.append(reqlog.format(hdr=hdrs[at // 1_000_000_000], rid=rid, params=params, ts=ts))
                if self.lmcache is not None:
                    out.extend(self.lmcache_lines(at, f"chatcmpl-{rid:032x}"))
                ts = stamp(at + 200_000 + int(rnd() * 3_800_000))
            else:
                ip, endpoint = what.split("|")
            out.append(access.format(ip=ip, port=port, req=endpoint, ts=ts))
        out.extend(self.stats(t0 + INTERVAL, per_engine))
        self.totals.lines += len(out)
        return out

    def lmcache_lines(self, at: int, rid: str) -> list[str]:
        """LMCache 0.5.6's lines for one request (lmcache/logging.py's colours, vllm_v1_adapter.py:1476,
        cache_engine.py:588 and :985): the scheduler's lookup, then each of the engine's 2 TP workers'
        retrieve (when the lookup hit) and store, on stderr behind vLLM's process tags."""
        rng = self.lmcache
        assert rng is not None
        eng = int(rng.random() * ENGINES)
        total = rng.randrange(2_000, 60_000)
        hit = rng.randrange(0, total // 256) * 256 if rng.random() < 0.6 else 0
        computed = hit if hit and rng.random() < 0.3 else 0
        need = hit - computed
        offered = total - hit
        lines = [
            (
                f"(EngineCore_DP{eng} pid={80 + eng}) ",
                "vllm_v1_adapter.py:1476:lmcache.integration.vllm.vllm_v1_adapter",
                f"Reqid: {rid}, Total tokens {total}, Inference Engine computed tokens: {computed}, "
                f"LMCache hit tokens: {hit}, need to load: {need}",
            )
        ]
        self.totals.lmcache_lookups += 1
        for tp in range(2):
            worker = f"(Worker_DP{eng}_TP{tp} pid={120 + 2 * eng + tp}) "
            where = "cache_engine.py:985:lmcache.v1.cache_engine"
            if need > 0:
                gib, ms = need * 73728 / 2**30, rng.uniform(1, 40)
                lines.append((worker, where, (
                    f"[req_id={rid}] Retrieved {need} out of {need} required tokens (from {total} total "
                    f"tokens). size: {gib:.4f} gb, cost {ms:.4f} ms, throughput: {gib / ms * 1000:.4f} GB/s;"
                )))  # fmt: skip
                self.totals.lmcache_retrieved_tokens += need
            gib, ms = offered * 73728 / 2**30, rng.uniform(1, 60)
            lines.append((worker, "cache_engine.py:588:lmcache.v1.cache_engine", (
                f"[req_id={rid}] Stored {offered} out of total {offered} tokens. size: {gib:.4f} GB, "
                f"cost {ms:.4f} ms, throughput: {gib / ms * 1000:.4f} GB/s; offload_time: {ms / 3:.4f} ms, "
                f"put_time: {ms * 2 / 3:.4f} ms"
            )))  # fmt: skip
            self.totals.lmcache_stored_tokens += offered
        out = []
        for k, (tag, where, message) in enumerate(lines):
            when = at + 1_000_000 + k * 150_000
            secs, ns = divmod(when, 1_000_000_000)
            asctime = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(secs)) + f",{ns // 1_000_000:03d}"
            text = f"{tag}\x1b[32;20m[{asctime}] LMCache INFO:\x1b[0m {message} \x1b[3m({where})\x1b[0m"
            out.append(entry(text, when, "stderr"))
        return out

    def stats(self, when: int, per_engine: list[int]) -> list[str]:
        """Each engine's stats line (unless idle twice running) and its KV Transfer line."""
        rng = self.rng
        out = []
        hdr = header(when)
        ns = when * 1_000_000_000 + rng.randrange(1_000_000, 40_000_000)
        for eng, n in enumerate(per_engine):
            active = n > 0
            if not active and not self.prev_active[eng]:
                continue  # vLLM demotes a second idle interval to DEBUG
            self.prev_active[eng] = active
            prompt_tp = n * rng.uniform(900, 3200) / INTERVAL if active else 0.0
            gen_tp = n * rng.uniform(150, 400) / INTERVAL if active else 0.0
            load = active and rng.random() < 0.3
            pre = f", Preemptions: {rng.randrange(1, 4)}" if active and rng.random() < 0.02 else ""
            out.append(
                self.stats_fmt.format(
                    hdr=hdr,
                    eng=eng,
                    ptp=prompt_tp,
                    gtp=gen_tp,
                    run=min(n, 64),
                    wait=rng.randrange(0, 3) if n > 20 else 0,
                    pre=pre,
                    kv=rng.uniform(2, 60),
                    hit=rng.uniform(60, 95),
                    ext=rng.uniform(1, 30) if load else 0.0,
                    ts=stamp(ns),
                )
            )
            key = f"Engine {eng:03d}"
            self.totals.stats_lines[key] = self.totals.stats_lines.get(key, 0) + 1
            ns += rng.randrange(5_000, 90_000)
            if active:
                out.append(self.kv_fmt.format(hdr=hdr, payload=self.kv_payload(n, load), ts=stamp(ns)))
                self.totals.kv_lines += 1
                ns += rng.randrange(5_000, 90_000)
        return out

    def kv_payload(self, n: int, load: bool) -> str:
        """A 0.26 OffloadingConnector payload: store keys, sometimes load keys, varying order."""
        rng = self.rng
        store = n * rng.randrange(40, 900) * 2_097_152
        lookups = n + rng.randrange(0, 8)
        groups = [
            [
                f"vllm:kv_offload_lookup_sync_delay_seconds_count={lookups}",
                f"vllm:kv_offload_lookup_sync_delay_seconds_sum={rng.uniform(1e-4, 9e-3)!r}",
            ],
            [
                f"vllm:kv_offload_store_bytes={store}",
                f"vllm:kv_offload_store_time={rng.uniform(0.01, 2.0)!r}",
                f"vllm:kv_offload_store_size_count={store // 16_777_216}",
                f"vllm:kv_offload_store_size_sum={store}",
            ],
            [
                f"vllm:kv_offload_cpu_cache_usage_perc={rng.uniform(0, 0.02)!r}",
                f"vllm:kv_offload_cpu_allocation_size_count={n * 3}",
                f"vllm:kv_offload_cpu_allocation_size_sum={n * rng.randrange(10, 40)}",
                f"vllm:kv_offload_cpu_cache_write_usage_perc={rng.uniform(0, 0.02)!r}",
                f"vllm:kv_offload_cpu_cache_read_usage_perc={rng.uniform(0, 0.01) if load else 0.0!r}",
            ],
        ]
        self.totals.store_bytes += store
        if load:
            loaded = rng.randrange(1, 1 + n * 200) * 2_097_152
            self.totals.load_bytes += loaded
            groups.append(
                [
                    f"vllm:kv_offload_load_bytes={loaded}",
                    f"vllm:kv_offload_load_time={rng.uniform(0.005, 0.9)!r}",
                    f"vllm:kv_offload_load_size_count={max(1, loaded // 16_777_216)}",
                    f"vllm:kv_offload_load_size_sum={loaded}",
                ]
            )
        rng.shuffle(groups)  # the first payload of the interval decides the key order
        return ", ".join(item for group in groups for item in group)


def generate(out: TextIO, lines: int | None, size: int | None, seed: int, lmcache: bool = False) -> Totals:
    """Write the log; stops at the first interval boundary past the target lines or bytes."""
    gen = Generator(seed, lmcache)
    totals = gen.totals
    block = startup(START - 60, totals)
    written = sum(map(len, block))  # ASCII only: characters are bytes
    t0 = START
    while True:
        lines_now = gen.interval(t0)
        t0 += INTERVAL
        block.extend(lines_now)
        written += sum(map(len, lines_now))
        if len(block) >= 20_000:
            out.write("".join(block))
            block = []
        if (lines is not None and totals.lines >= lines) or (size is not None and written >= size):
            break
    out.write("".join(block))
    totals.bytes = written
    return totals


def main(argv: list[str] | None = None) -> int:
    """Command line: `--lines N` or `--mb M` (default 1.5M lines), `-o FILE` (default stdout)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--lines", type=int, help="at least this many lines (default 1500000)")
    group.add_argument("--mb", type=float, help="at least this many MB (10^6 bytes)")
    ap.add_argument("--seed", type=int, default=8)
    ap.add_argument("-o", "--output", help="output file (default stdout)")
    ap.add_argument("--totals", action="store_true", help="print what was written as JSON on stderr")
    ap.add_argument(
        "--lmcache", action="store_true", help="LMCache's lines too (a lookup, 2 workers' loads and stores)"
    )
    args = ap.parse_args(argv)
    lines = args.lines if args.lines is not None or args.mb is not None else 1_500_000
    size = int(args.mb * 1_000_000) if args.mb is not None else None
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="") as handle:
            totals = generate(handle, lines, size, args.seed, args.lmcache)
    else:
        totals = generate(sys.stdout, lines, size, args.seed, args.lmcache)
    if args.totals:
        print(json.dumps(totals.__dict__, sort_keys=True), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
