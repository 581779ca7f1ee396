"""Write deterministic, version-exact synthetic vLLM sample logs (and their README) into samples/.

Every format string, `file:line`, process prefix and colour rule below was read from the PyPI wheel of
the version a sample claims (see samples/README.vllm.md). No wall clock, no network: a seeded RNG and
fixed start times, so two runs give byte-identical files.
"""

from __future__ import annotations

import gzip
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
NS = 1_000_000_000
COLOR_PREFIX = ("\x1b[1;36m", "\x1b[0;0m")  # 0.8-0.11.x: painted even off a TTY

# `file:line` of every logging call used, per version (verified in the wheels, see README).
LINES: dict[str, dict[str, str]] = {
    "0.6.6": {
        "banner": "api_server.py:712",
        "args": "api_server.py:713",
        "engine_pid": "api_server.py:199",
        "init": "llm_engine.py:234",
        "load_start": "model_runner.py:1094",
        "weights": "model_runner.py:1099",
        "profile": "worker.py:241",
        "blocks": "gpu_executor.py:76",
        "maxconc": "gpu_executor.py:80",
        "capture": "model_runner.py:1415",
        "graphs": "model_runner.py:1535",
        "initeng": "llm_engine.py:431",
        "routes": "launcher.py:19",
        "route": "launcher.py:27",
        "received": "logger.py:37",
        "added": "engine.py:267",
        "stats": "metrics.py:467",
        "prefix": "metrics.py:483",
    },
    "0.11.2": {
        "banner": "api_server.py:1977",
        "args": "utils.py:253",
        "arch": "model.py:631",
        "maxlen": "model.py:1745",
        "chunked": "scheduler.py:216",
        "init": "core.py:93",
        "weights": "default_loader.py:314",
        "modelload": "gpu_model_runner.py:3338",
        "kvmem": "gpu_worker.py:359",
        "kvsize": "kv_cache_utils.py:1229",
        "maxconc": "kv_cache_utils.py:1234",
        "graphs": "gpu_model_runner.py:4244",
        "initeng": "core.py:250",
        "tasks": "api_server.py:1725",
        "starting": "api_server.py:2052",
        "routes": "launcher.py:38",
        "route": "launcher.py:46",
        "received": "logger.py:47",
        "stats": "loggers.py:236",
        "specdec": "metrics.py:100",
    },
    "0.20.2": {
        "logo": "utils.py:299",
        "args": "utils.py:233",
        "arch": "model.py:555",
        "maxlen": "model.py:1680",
        "chunked": "scheduler.py:239",
        "init": "core.py:109",
        "kvbase": "base.py:189",
        "connector": "factory.py:64",
        "offspec": "factory.py:51",
        "offspec_warn": "spec.py:75",
        "weights": "default_loader.py:384",
        "modelload": "gpu_model_runner.py:4879",
        "kvmem": "gpu_worker.py:440",
        "kvsize": "kv_cache_utils.py:1708",
        "maxconc": "kv_cache_utils.py:1709",
        "graphs": "gpu_model_runner.py:6133",
        "initeng": "core.py:299",
        "cputensors": "cpu_gpu.py:380",
        "cacheinfo": "loggers.py:356",
        "tasks": "api_server.py:598",
        "starting": "api_server.py:602",
        "routes": "launcher.py:37",
        "route": "launcher.py:46",
        "stats": "loggers.py:271",
        "kvxfer": "metrics.py:103",
    },
    "0.26.0": {
        "logo": "api_utils.py:345",
        "args": "api_utils.py:273",
        "arch": "model.py:623",
        "maxlen": "model.py:1788",
        "chunked": "scheduler.py:252",
        "init": "core.py:116",
        "kvbase": "base.py:190",
        "connector": "factory.py:62",
        "offspec": "factory.py:47",
        "offspec_warn": "base.py:493",
        "weights": "default_loader.py:430",
        "modelload": "gpu_model_runner.py:5347",
        "kvmem": "gpu_worker.py:560",
        "kvsize": "kv_cache_utils.py:2177",
        "maxconc": "kv_cache_utils.py:2178",
        "graphs": "gpu_model_runner.py:6844",
        "initeng": "core.py:340",
        "cputensors": "gpu_worker.py:480",
        "eagle": "scheduler.py:194",
        "tasks": "api_server.py:673",
        "starting": "api_server.py:677",
        "routes": "launcher.py:37",
        "route": "launcher.py:46",
        "received": "request_logger.py:63",
        "stats": "loggers.py:310",
        "specdec": "metrics.py:120",
        "kvxfer": "metrics.py:103",
    },
    "0.33.0": {
        "logo": "startup.py:38",
        "args": "startup.py:96",
        "arch": "model.py:744",
        "maxlen": "model.py:2170",
        "chunked": "scheduler.py:310",
        "init": "core.py:139",
        "kvbase": "base.py:220",
        "connector": "factory.py:62",
        "offspec": "factory.py:57",
        "weights": "default_loader.py:506",
        "modelload": "gpu_model_runner.py:5088",
        "kvmem": "gpu_worker.py:772",
        "kvsize": "kv_cache_utils.py:1147",
        "graphs": "gpu_model_runner.py:6516",
        "initeng": "core.py:405",
        "cputensors": "gpu_worker.py:815",
        "tasks": "entry.py:135",
        "starting": "entry.py:139",
        "routes": "launcher.py:188",
        "route": "launcher.py:197",
        "stats": "loggers.py:335",
        "kvxfer": "metrics.py:108",
    },
}

ROUTES = [
    ("/openapi.json", "GET, HEAD"),
    ("/docs", "GET, HEAD"),
    ("/docs/oauth2-redirect", "GET, HEAD"),
    ("/redoc", "GET, HEAD"),
    ("/health", "GET"),
    ("/load", "GET"),
    ("/tokenize", "POST"),
    ("/detokenize", "POST"),
    ("/v1/models", "GET"),
    ("/version", "GET"),
    ("/v1/chat/completions", "POST"),
    ("/v1/completions", "POST"),
    ("/metrics", "GET"),
]
LOGO = (
    "\n       █     █     █▄   ▄█\n"
    " ▄▄ ▄█ █     █     █ ▀▄▀ █  version %s\n"
    "  █▄█▀ █     █     █     █  model   %s\n"
    "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀\n"
)
BAR = "Loading safetensors checkpoint shards"


def vtuple(version: str) -> tuple[int, ...]:
    """'0.26.0' -> (0, 26, 0)."""
    return tuple(int(p) for p in version.split("."))


@dataclass
class Chunk:
    """One write to a stream: a time, the stream and the (already decorated) text."""

    t: int
    stream: str
    text: str


@dataclass
class Server:
    """Collects the records of one simulated vLLM server and renders them exactly as `version` would."""

    version: str
    rng: random.Random
    events: list[tuple[int, int, Callable[[], Chunk]]] = field(default_factory=list)

    @property
    def v(self) -> tuple[int, ...]:
        """The version as a tuple."""
        return vtuple(self.version)

    def where(self, key: str) -> str:
        """`file:line` of a logging call in this version."""
        return LINES[self.version][key]

    def _prefix(self, proc: tuple[str, int] | None) -> str:
        """The decorate_logs() prefix (0.10.1-0.30) of a process, or ''."""
        if proc is None or self.v < (0, 10, 1) or self.v >= (0, 31):
            return ""
        name = f"({proc[0]} pid={proc[1]})"
        if self.v < (0, 12):
            return f"{COLOR_PREFIX[0]}{name}{COLOR_PREFIX[1]} "
        return f"{name} "

    def _decorate(self, proc: tuple[str, int] | None, text: str) -> str:
        """Prefix every physical line, as decorate_logs' write wrapper does (text ends in a newline)."""
        prefix = self._prefix(proc)
        if not prefix:
            return text
        return prefix + text[:-1].replace("\n", "\n" + prefix) + "\n"

    def _add(self, t: int, make: Callable[[], Chunk]) -> None:
        """Queue a chunk; chunks render in (time, insertion) order."""
        self.events.append((t, len(self.events), make))

    def log(
        self,
        t: int,
        proc: tuple[str, int] | None,
        key: str,
        msg: str,
        *,
        level: str = "INFO",
        where: str | None = None,
    ) -> None:
        """A vLLM logger record: header, NewLineFormatter continuation, process prefix."""
        loc = where or self.where(key)

        def make() -> Chunk:
            stamp = datetime.fromtimestamp(t // NS, tz=timezone.utc).strftime("%m-%d %H:%M:%S")
            head = f"{level} {stamp} " + (f"[{loc}] " if self.v >= (0, 8) else f"{loc}] ")
            if self.v >= (0, 31) and proc is not None:
                head = f"({proc[0]} pid={proc[1]}) " + head
            text = head + msg.replace("\n", "\r\n" + head) + "\n"
            return Chunk(t, "stdout", self._decorate(proc, text))

        self._add(t, make)

    def raw(self, t: int, proc: tuple[str, int] | None, text: str, stream: str = "stdout") -> None:
        """Bytes a process writes itself (uvicorn, tqdm, warnings): prefixed only by decorate_logs."""
        self._add(t, lambda: Chunk(t, stream, self._decorate(proc, text)))

    def render(self) -> list[Chunk]:
        """All chunks in time order."""
        return [make() for _, _, make in sorted(self.events, key=lambda e: (e[0], e[1]))]


def plain(chunks: list[Chunk]) -> bytes:
    """What `2>&1 > file` captures."""
    return "".join(c.text for c in chunks).encode("utf-8")


def go_rfc3339nano(t: int) -> str:
    """Go time.RFC3339Nano in UTC: trailing zeros of the fraction trimmed, none if zero."""
    base = datetime.fromtimestamp(t // NS, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    frac = f"{t % NS:09d}".rstrip("0")
    return f"{base}.{frac}Z" if frac else f"{base}Z"


def moby_escape(data: bytes) -> str:
    """moby jsonlog ffjsonWriteJSONBytesAsString: \\" \\\\ \\n \\r, <>& and other C0 as \\u00XX."""
    out: list[str] = []
    i = 0
    while i < len(data):
        b = data[i]
        if b < 0x80:
            if b >= 0x20 and b not in b'\\"<>&':
                out.append(chr(b))
            elif b in b'\\"':
                out.append("\\" + chr(b))
            elif b == 0x0A:
                out.append("\\n")
            elif b == 0x0D:
                out.append("\\r")
            else:
                out.append(f"\\u00{b:02x}")
            i += 1
            continue
        for size in (2, 3, 4):  # decode one rune; an invalid byte becomes \ufffd
            try:
                ch = data[i : i + size].decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(ch) == 1:
                out.append(f"\\u{ord(ch):04x}" if ch in "\u2028\u2029" else ch)
                i += size
                break
        else:
            out.append("\\ufffd")
            i += 1
    return "".join(out)


def docker_json(chunks: list[Chunk]) -> bytes:
    """The json-file driver: one entry per line, lines over 16 KiB split into 16384-byte entries."""
    lines: list[str] = []
    for c in chunks:
        data = c.text.encode("utf-8")
        t = c.t
        pieces = data.split(b"\n")  # json-file splits on \n only; \r stays inside the entry
        physical = [p + b"\n" for p in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
        for k, line in enumerate(physical):
            parts = [line[j : j + 16384] for j in range(0, len(line), 16384)]
            for m, part in enumerate(parts):
                when = t + 7_000 * k + 1_000 * m + (len(lines) * 7919) % 1000
                lines.append(
                    f'{{"log":"{moby_escape(part)}","stream":"{c.stream}","time":"{go_rfc3339nano(when)}"}}\n'
                )
    return "".join(lines).encode("utf-8")


# --------------------------------------------------------------------------- shared content


def at(day: str, rng: random.Random | None = None) -> int:
    """Nanoseconds since the epoch of 'YYYY-mm-ddTHH:MM:SS' UTC, plus optional sub-second jitter."""
    base = int(datetime.strptime(day, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp())
    return base * NS + (rng.randrange(NS) if rng else 0)


def fuuid(rng: random.Random) -> str:
    """A deterministic uuid4 string."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def params_repr(version: str, rng: random.Random) -> str:
    """SamplingParams.__repr__ of the version (fields read from sampling_params.py)."""
    temp = rng.choice([0.6, 0.7, 1.0, 0.0])
    top_p = 0.95 if temp else 1.0
    top_k = 20 if temp == 0.6 else 0 if vtuple(version) >= (0, 9) else -1
    max_tokens = rng.choice([4096, 8192, 16384, 32000])
    head = (
        f"SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
        f"temperature={temp}, top_p={top_p}, top_k={top_k}, min_p=0.0, seed=None, stop=[], "
        f"stop_token_ids=[], bad_words=[], "
    )
    if vtuple(version) >= (0, 26):
        head += "thinking_token_budget=None, "
    tail = (
        f"include_stop_str_in_output=False, ignore_eos=False, max_tokens={max_tokens}, "
        "min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, "
        "spaces_between_special_tokens=True, "
    )
    if vtuple(version) < (0, 7):
        return head + tail + "truncate_prompt_tokens=None, guided_decoding=None)"
    if vtuple(version) < (0, 26):
        return head + tail + "truncate_prompt_tokens=None, structured_outputs=None, extra_args=None)"
    return head + tail + "structured_outputs=None, extra_args=None)"


def access(
    rng: random.Random, path: str = "/v1/chat/completions", method: str = "POST", client: str | None = None
) -> str:
    """A default-config uvicorn access line."""
    addr = client or f"172.17.0.{rng.choice([4, 4, 4, 5, 7])}:{rng.randrange(32768, 61000)}"
    return f'INFO:     {addr} - "{method} {path} HTTP/1.1" 200 OK\n'


def tqdm_bar(n_shards: int, secs: float) -> list[tuple[float, str]]:
    """tqdm with vLLM's _BAR_FORMAT (which ends in \\n): '\\r'+bar per update, a repeat, then '\\n'."""
    rate = secs / n_shards
    out: list[tuple[float, str]] = [(0.0, f"\r{BAR}:   0% Completed | 0/{n_shards} [00:00<?, ?it/s]\n")]
    for k in range(1, n_shards + 1):
        el = rate * k
        rem = rate * (n_shards - k)
        rfmt = f"{rate:5.2f}s/it" if rate >= 1 else f"{1 / rate:5.2f}it/s"
        bar = (
            f"{BAR}: {round(100 * k / n_shards):3d}% Completed | {k}/{n_shards} "
            f"[{int(el) // 60:02d}:{int(el) % 60:02d}<{int(rem) // 60:02d}:{int(rem) % 60:02d}, "
            f"{rfmt}]\n"
        )
        out.append((el, "\r" + bar))
    out.append((secs, "\r" + out[-1][1][1:] + "\n"))
    return out


@dataclass
class Tally:
    """What a correct parser must find: per engine counts, sums and last values."""

    lines: dict[str, int] = field(default_factory=dict)
    store: dict[str, int] = field(default_factory=dict)
    load: dict[str, int] = field(default_factory=dict)
    last: dict[str, dict[str, str]] = field(default_factory=dict)
    kv_lines: dict[str, int] = field(default_factory=dict)
    spec_lines: dict[str, int] = field(default_factory=dict)
    facts: list[str] = field(default_factory=list)

    def stat(self, engine: str, values: dict[str, str]) -> None:
        """Count one stats line and remember its ratios."""
        self.lines[engine] = self.lines.get(engine, 0) + 1
        self.last[engine] = values

    def kv(self, engine: str, store: int, load: int) -> None:
        """Count one KV Transfer line."""
        self.kv_lines[engine] = self.kv_lines.get(engine, 0) + 1
        self.store[engine] = self.store.get(engine, 0) + store
        self.load[engine] = self.load.get(engine, 0) + load


@dataclass
class Stat:
    """One interval of one engine, as the LoggingStatLogger sees it."""

    prompt: float
    gen: float
    running: int
    waiting: int
    kv: float
    prefix: float | None
    external: float | None = None
    deferred: int = 0
    preempt: int = 0
    fetch: tuple[int, int, int] = (0, 0, 0)


def stats_msg(version: str, label: str, s: Stat) -> str:
    """The V1 stats line exactly as loggers.py builds it for `version`."""
    v = vtuple(version)
    parts = [
        f"Avg prompt throughput: {s.prompt:.1f} tokens/s",
        f"Avg generation throughput: {s.gen:.1f} tokens/s",
        f"Running: {s.running} reqs",
        f"Waiting: {s.waiting + s.deferred} reqs",
    ]
    if v >= (0, 20, 2) and s.deferred:
        parts.append(f"Deferred: {s.deferred} reqs")
    if v >= (0, 32) and any(s.fetch):
        a, b, c = s.fetch
        parts.append(f"KV fetch: {a} waiting to start, {b} in progress, {c} completed waiting")
    if v >= (0, 11, 1) and s.preempt:
        parts.append(f"Preemptions: {s.preempt}")
    parts.append(f"GPU KV cache usage: {s.kv:.1f}%")
    if s.prefix is not None:
        parts.append(f"Prefix cache hit rate: {s.prefix:.1f}%")
    if s.external is not None and v >= (0, 11, 1):
        parts.append(f"External prefix cache hit rate: {s.external:.1f}%")
    return label + ", ".join(parts)


def remember(tally: Tally, engine: str, s: Stat) -> None:
    """Record the printed values of a stats line."""
    vals = {"kv_usage": f"{s.kv:.1f}%"}
    if s.prefix is not None:
        vals["prefix"] = f"{s.prefix:.1f}%"
    if s.external is not None:
        vals["external"] = f"{s.external:.1f}%"
    tally.stat(engine, vals)


def spec_msg(rng: random.Random, positions: int, secs: float, drafts: int) -> str:
    """SpecDecoding line, 0.10.2+ form."""
    rates = sorted((rng.uniform(0.25, 0.92) for _ in range(positions)), reverse=True)
    accepted = int(sum(r * drafts for r in rates))
    drafted = drafts * positions
    return (
        f"SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
        f"Accepted throughput: {accepted / secs:.2f} tokens/s, "
        f"Drafted throughput: {drafted / secs:.2f} tokens/s, Accepted: {accepted} tokens, "
        f"Drafted: {drafted} tokens, Per-position acceptance rate: "
        + ", ".join(f"{r:.3f}" for r in rates)
        + f", Avg Draft acceptance rate: {100 * accepted / drafted:.1f}%"
    )


def walk(rng: random.Random, x: float, lo: float, hi: float, step: float) -> float:
    """A bounded random walk."""
    return min(hi, max(lo, x + rng.uniform(-step, step)))


# --------------------------------------------------------------------------- KV Transfer payloads


def ops_alloc(blocks: int, rng: random.Random) -> int:
    """prepare_store calls in an interval: ~14 CPU blocks per allocation."""
    return blocks // rng.randint(10, 18)


def offload_kv(
    rng: random.Random,
    store_blocks: int,
    load_blocks: int,
    block: int,
    *,
    lookups: int,
    order: int,
    cpu_block: int = 0,
) -> tuple[str, int, int]:
    """A 0.26 OffloadingConnectorStats.reduce() line (CPU backend); returns text, store, load."""
    groups: dict[str, list[tuple[str, object]]] = {}
    if lookups:
        groups["lookup"] = [
            ("vllm:kv_offload_lookup_sync_delay_seconds_count", lookups),
            ("vllm:kv_offload_lookup_sync_delay_seconds_sum", lookups * rng.uniform(3e-5, 8e-5)),
        ]
    store = store_blocks * block
    load = load_blocks * block
    if store:
        ops = max(1, store // rng.randint(12_000_000, 20_000_000))  # ~16 MB per transfer op
        groups["store"] = [
            ("vllm:kv_offload_store_bytes", store),
            ("vllm:kv_offload_store_time", store / rng.uniform(17e9, 24e9)),
            ("vllm:kv_offload_store_size_count", ops),
            ("vllm:kv_offload_store_size_sum", store),
        ]
    if load:
        ops = max(1, load // rng.randint(20_000_000, 40_000_000))
        groups["load"] = [
            ("vllm:kv_offload_load_bytes", load),
            ("vllm:kv_offload_load_time", load / rng.uniform(19e9, 25e9)),
            ("vllm:kv_offload_load_size_count", ops),
            ("vllm:kv_offload_load_size_sum", load),
        ]
    w = rng.uniform(0.0004, 0.02) if store else 0.0
    r = rng.uniform(0.0002, 0.01) if load else 0.0
    cpu_blocks = store // (cpu_block or block)
    allocs = max(1, ops_alloc(cpu_blocks, rng)) if store else 0
    groups["cpu"] = [("vllm:kv_offload_cpu_cache_usage_perc", w + r)]
    if allocs:
        groups["cpu"] += [
            ("vllm:kv_offload_cpu_allocation_size_count", allocs),
            ("vllm:kv_offload_cpu_allocation_size_sum", cpu_blocks),
        ]
    groups["cpu"] += [
        ("vllm:kv_offload_cpu_cache_write_usage_perc", w),
        ("vllm:kv_offload_cpu_cache_read_usage_perc", r),
    ]
    orders = [
        ["lookup", "store", "load", "cpu"],
        ["store", "load", "cpu", "lookup"],
        ["cpu", "lookup", "store", "load"],
        ["load", "store", "lookup", "cpu"],
    ]
    pairs = [kv for g in orders[order % 4] if g in groups for kv in groups[g]]
    return ", ".join(f"{k}={v}" for k, v in pairs), store, load


# --------------------------------------------------------------------------- V1 startup


@dataclass
class Setup:
    """What a V1 server was started with and where its processes live."""

    model: str
    served: str
    args: str
    config: str
    kv_tokens: int
    max_len: int
    conc: float
    kv_gib: str
    engines: list[tuple[str, int]]
    workers: list[list[tuple[str, int]]]
    connector: str | None = None
    eagle: str | None = None
    shards: int = 4
    arch: str = "Qwen3ForCausalLM"
    engine_id: str = ""


def startup(s: Server, t: int, cfg: Setup, tally: Tally) -> int:
    """The startup records of a V1 server from the API server's first line to 'startup complete'."""
    api = ("APIServer", 1)
    sec = NS
    if s.v < (0, 15):
        s.log(t, api, "banner", f"vLLM API server version {s.version}")
    else:
        s.log(t, api, "logo", LOGO % (s.version, cfg.model))  # args.model, not the served name
    s.log(t, api, "args", f"non-default args: {cfg.args}")
    t += 6 * sec + 412_000_000
    s.log(t, api, "arch", f"Resolved architecture: {cfg.arch}")
    s.log(t, api, "maxlen", f"Using max model len {cfg.max_len}")
    s.log(t, api, "chunked", "Chunked prefill is enabled with max_num_batched_tokens=8192.")
    t += 2 * sec
    for k, eng in enumerate(cfg.engines):
        if k == 0:
            s.log(t, eng, "init", f"Initializing a V1 LLM engine (v{s.version}) with config: {cfg.config}")
    t += 9 * sec
    engine_id = cfg.engine_id or fuuid(s.rng)
    if cfg.connector:
        for workers in cfg.workers:
            for w in workers:
                s.log(
                    t,
                    w,
                    "kvbase",
                    "Initializing KVConnectorBase_V1. This API is experimental and "
                    "subject to change in the future as we iterate the design.",
                    level="WARNING",
                )
                s.log(
                    t,
                    w,
                    "connector",
                    f"Creating v1 connector with name: {cfg.connector} and engine_id: {engine_id}",
                )
                if cfg.connector == "OffloadingConnector":
                    s.log(t, w, "offspec", "Creating offloading spec with name: CPUOffloadingSpec")
                    if "offspec_warn" in LINES[s.version]:
                        s.log(
                            t,
                            w,
                            "offspec_warn",
                            "Initializing OffloadingSpec. This API is "
                            "experimental and subject to change in the future as we iterate the "
                            "design.",
                            level="WARNING",
                        )
        tally.facts.append(f"connector {cfg.connector}, engine_id {engine_id}")
    t += 3 * sec
    for workers in cfg.workers[:1]:  # tqdm only on global rank 0
        w0 = workers[0]
        for off, text in tqdm_bar(cfg.shards, cfg.shards * 1.83):
            s.raw(t + int(off * sec), w0, text, stream="stderr")
    t += int(cfg.shards * 1.83 * sec) + sec
    for workers in cfg.workers:
        w0 = workers[0]
        s.log(t, w0, "weights", f"Loading weights took {cfg.shards * 1.83 + 0.41:.2f} seconds")
        gib = cfg.shards * 7.61
        size = str(round(gib, 2)) if s.v >= (0, 20) else f"{gib:.4f}"  # format_gib() from 0.20
        s.log(
            t,
            w0,
            "modelload",
            f"Model loading took {size} GiB memory and {cfg.shards * 1.83 + 3.2:.6f} seconds",
        )
    t += 41 * sec
    for workers in cfg.workers:
        s.log(t, workers[0], "kvmem", f"Available KV cache memory: {cfg.kv_gib} GiB")
    for eng in cfg.engines:
        if s.v >= (0, 33):
            s.log(
                t,
                eng,
                "kvsize",
                f"GPU KV cache size: {cfg.kv_tokens:,} tokens, Maximum "
                f"concurrency for {cfg.max_len:,} tokens per request: {cfg.conc:.2f}x",
            )
        else:
            s.log(t, eng, "kvsize", f"GPU KV cache size: {cfg.kv_tokens:,} tokens")
            s.log(
                t,
                eng,
                "maxconc",
                f"Maximum concurrency for {cfg.max_len:,} tokens per request: {cfg.conc:.2f}x",
            )
    tally.facts.append(
        f"GPU KV cache size {cfg.kv_tokens:,} tokens per engine "
        f"({len(cfg.engines)} engine(s)), max concurrency {cfg.conc:.2f}x"
    )
    if cfg.connector == "OffloadingConnector":
        for workers in cfg.workers:
            for w in workers:
                s.log(t + sec // 3, w, "cputensors", f"Allocating {2 * 64} CPU tensors...")
    t += 18 * sec
    for workers in cfg.workers:
        s.log(t, workers[0], "graphs", "Graph capturing finished in 11 secs, took 0.74 GiB")
    t += sec
    for eng in cfg.engines:
        if s.v >= (0, 20):
            s.log(
                t,
                eng,
                "initeng",
                "init engine (profile, create kv cache, warmup model) took 96.41 s (compilation: 31.87 s)",
            )
        else:
            s.log(
                t, eng, "initeng", "init engine (profile, create kv cache, warmup model) took 96.41 seconds"
            )
        if cfg.connector:
            s.log(
                t,
                eng,
                "kvbase",
                "Initializing KVConnectorBase_V1. This API is experimental and "
                "subject to change in the future as we iterate the design.",
                level="WARNING",
            )
            s.log(
                t,
                eng,
                "connector",
                f"Creating v1 connector with name: {cfg.connector} and engine_id: {engine_id}",
            )
        if cfg.eagle:
            s.log(
                t,
                eng,
                "eagle",
                f"KV offloading: EAGLE/MTP draft attention groups {cfg.eagle} "
                "detected. The trailing chunk of these groups will be excluded from offloading "
                "due to volatility.",
            )
            tally.facts.append(f"EAGLE/MTP draft attention groups {cfg.eagle} startup line")
    t += 2 * sec
    if "cacheinfo" in LINES[s.version]:
        s.log(
            t,
            api,
            "cacheinfo",
            f"{len(cfg.engines)} Engines: vllm cache_config_info with "
            f"initialization after num_gpu_blocks is: {cfg.kv_tokens // 16}",
        )
    s.log(t, api, "tasks", "Supported tasks: ['generate']")
    if s.v < (0, 18):
        s.log(t, api, "starting", "Starting vLLM API server 0 on http://0.0.0.0:8000")
    else:
        s.log(t, api, "starting", "Starting vLLM server on http://0.0.0.0:8000")
    s.log(t, api, "routes", "Available routes are:")
    for path, methods in ROUTES:
        s.log(t, api, "route", f"Route: {path}, Methods: {methods}")
    up = api if s.v < (0, 31) else None
    t += 80_000_000
    s.raw(t, up, "INFO:     Started server process [1]\n", "stderr")
    s.raw(t, up, "INFO:     Waiting for application startup.\n", "stderr")
    s.raw(t + 2_000_000, up, "INFO:     Application startup complete.\n", "stderr")
    return t + 5 * sec


def traffic(
    s: Server, t0: int, secs: int, rate: float, *, log_requests: bool, chat_share: float = 0.9
) -> None:
    """Access lines (and request-log lines) spread over [t0, t0+secs)."""
    api = ("APIServer", 1)
    up = api if s.v < (0, 31) else None
    n = max(1, int(secs * rate * s.rng.uniform(0.7, 1.3)))
    for _ in range(n):
        t = t0 + s.rng.randrange(secs * NS)
        if log_requests:
            rid = f"chatcmpl-{s.rng.getrandbits(64):016x}"
            where = s.where("received")
            s.log(
                t,
                api,
                "received",
                f"Received request {rid}: params: {params_repr(s.version, s.rng)}, lora_request: None.",
                where=where,
            )
        path = "/v1/chat/completions" if s.rng.random() < chat_share else "/v1/completions"
        s.raw(t + s.rng.randrange(40_000_000, 900_000_000), up, access(s.rng, path))
    scrapes(s, t0, secs)


def scrapes(s: Server, t0: int, secs: int) -> None:
    """Prometheus keeps scraping /metrics while the engine is idle."""
    up = ("APIServer", 1) if s.v < (0, 31) else None
    for k in range(0, secs, 15):
        s.raw(t0 + k * NS + 313_000_000, up, access(s.rng, "/metrics", "GET", "172.17.0.9:46210"))


def readme_section(title: str, body: list[str], tally: Tally, total_note: str = "") -> str:
    """One sample's README section with the expected totals."""
    out = [f"## `{title}`", "", *body, "", "Expected (what a correct parser extracts):", ""]
    for eng in sorted(tally.lines):
        last = ", ".join(f"{k} {v}" for k, v in tally.last[eng].items())
        line = f"- engine {eng}: {tally.lines[eng]} stats lines; last: {last}"
        if eng in tally.kv_lines:
            line += (
                f"; {tally.kv_lines[eng]} KV Transfer lines, store bytes sum "
                f"{tally.store.get(eng, 0)}, load bytes sum {tally.load.get(eng, 0)}"
            )
        if eng in tally.spec_lines:
            line += f"; {tally.spec_lines[eng]} SpecDecoding lines"
        out.append(line)
    for fact in tally.facts:
        out.append(f"- startup/other: {fact}")
    if total_note:
        out.append(f"- {total_note}")
    out += ["", "Synthetic, generated by `python scripts/make_vllm_samples.py`.", ""]
    return "\n".join(out)


# --------------------------------------------------------------------------- samples


def kvtc(engine_id: str, extra: str) -> str:
    """KVTransferConfig repr of 0.26 (fields in dataclass order)."""
    return (
        f"KVTransferConfig(kv_connector='OffloadingConnector', engine_id='{engine_id}', "
        "kv_buffer_device='cuda', kv_buffer_size=1000000000.0, kv_role='kv_both', kv_rank=None, "
        f"kv_parallel_size=1, kv_ip='127.0.0.1', kv_port=14579, kv_connector_extra_config={extra}, "
        "kv_connector_module_path=None, enable_permute_local_kv=False, kv_load_failure_policy='fail')"
    )


def vllm_config(model: str, served: str, *, max_len: int, tp: int, dp: int, spec: str = "None") -> str:
    """VllmConfig.__str__ (abridged to the fields every version prints, in its order)."""
    return (
        f"model='{model}', speculative_config={spec}, tokenizer='{model}', "
        "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, "
        f"trust_remote_code=True, dtype=torch.bfloat16, max_seq_len={max_len}, "
        "download_dir=None, load_format=auto, "
        f"tensor_parallel_size={tp}, pipeline_parallel_size=1, data_parallel_size={dp}, "
        "disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
        "kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig("
        "backend='auto', disable_fallback=False, disable_any_whitespace=False, "
        "disable_additional_properties=False, reasoning_parser=''), observability_config="
        "ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, "
        f"collect_detailed_traces=None), seed=0, served_model_name={served}, "
        f"enable_prefix_caching=True, enable_chunked_prefill=True, pooler_config=None, "
        "compilation_config={'level': None, 'mode': 3, 'debug_dump_path': None, 'cache_dir': '', "
        "'backend': 'inductor', 'custom_ops': ['none'], 'splitting_ops': "
        "['vllm::unified_attention', 'vllm::unified_attention_with_output', "
        "'vllm::unified_mla_attention', 'vllm::unified_mla_attention_with_output', "
        "'vllm::mamba_mixer2', 'vllm::mamba_mixer', 'vllm::short_conv', 'vllm::linear_attention', "
        "'vllm::plamo2_mamba_mixer', 'vllm::gdn_attention_core', 'vllm::kda_attention', "
        "'vllm::sparse_attn_indexer'], 'use_inductor_graph_partition': False, "
        "'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, "
        "'cudagraph_capture_sizes': [512, 496, 480, 464, 448, 432, 416, 400, 384, 368, 352, 336, "
        "320, 304, 288, 272, 256, 240, 224, 208, 192, 176, 160, 144, 128, 112, 96, 80, 64, 56, 48, "
        "40, 32, 24, 16, 8, 4, 2, 1], 'max_cudagraph_capture_size': 512, 'pass_config': "
        "{'fuse_norm_quant': False, 'fuse_act_quant': False, 'fuse_attn_quant': False, "
        "'eliminate_noops': True, 'enable_sp': False, 'fuse_gemm_comms': False, "
        "'fuse_allreduce_rms': False}, 'local_cache_dir': None}"
    )


def offload_sample(name: str, version: str, seed: int, start: str, docker: bool) -> tuple[bytes, str]:
    """Samples 1 and 6: a healthy --kv-offloading-size server (two bursts, read-back)."""
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
    return data, readme_section(name, body, tally)


def write_only_sample() -> tuple[bytes, str]:
    """Sample 2: the incident-2 shape (MTP draft groups make every lookup miss)."""
    version = "0.26.0"
    rng = random.Random(2002)
    s = Server(version, rng)
    tally = Tally()
    model = "deepseek-ai/DeepSeek-V4-Flash"
    api = ("APIServer", 1)
    eng = ("EngineCore", 288)
    workers = [(f"Worker_TP{k}", 420 + k) for k in range(8)]
    eid = fuuid(rng)
    spec = "{'method': 'mtp', 'num_speculative_tokens': 7}"
    args = (
        f"{{'model_tag': '{model}', 'model': '{model}', 'trust_remote_code': True, "
        "'max_model_len': 163840, 'served_model_name': ['deepseek-v4-flash'], "
        "'tensor_parallel_size': 8, 'block_size': 256, 'gpu_memory_utilization': 0.9, "
        f"'kv_transfer_config': {kvtc(eid, repr({'cpu_bytes_to_use': 960000000000}))}, "
        f"'speculative_config': {spec}}}"
    )
    spec_cfg = "SpeculativeConfig(method='mtp', model='deepseek-ai/DeepSeek-V4-Flash', num_spec_tokens=7)"
    cfg = Setup(
        model=model,
        served="deepseek-v4-flash",
        args=args,
        config=vllm_config(model, "deepseek-v4-flash", max_len=163840, tp=8, dp=1, spec=spec_cfg),
        kv_tokens=1_591_312,
        max_len=163840,
        conc=9.71,
        kv_gib="61.38",
        engines=[eng],
        workers=[workers],
        connector="OffloadingConnector",
        eagle="[2]",
        engine_id=eid,
        shards=46,
        arch="DeepseekV4ForCausalLM",
    )
    t = startup(s, at("2026-08-18T01:19:40") + 88_000_000, cfg, tally)
    tally.facts.insert(
        0,
        "non-default args: kv_transfer_config KVTransferConfig(kv_connector="
        "'OffloadingConnector', kv_role='kv_both', cpu_bytes_to_use=960000000000), "
        "block_size 256, speculative_config mtp x7",
    )
    t += 22 * NS
    prefix, kvu = 86.0, 2.0
    for k in range(40):
        t_stat = t + 10 * NS
        traffic(s, t, 10, 0.8, log_requests=False)
        incident = k == 23
        prefix = 88.3 if incident else walk(rng, prefix, 84.5, 90.5, 0.9)
        kvu = 0.5 if incident else walk(rng, kvu, 0.3, 7.5, 1.2)
        st = Stat(
            prompt=34844.3 if incident else rng.uniform(15000, 31000),
            gen=rng.uniform(800, 2400),
            running=rng.randint(18, 60),
            waiting=rng.choice([0, 0, 1, 2, 4]),
            kv=kvu,
            prefix=prefix,
            external=0.0,
        )
        s.log(t_stat, api, "stats", stats_msg(version, "Engine 000: ", st))
        remember(tally, "0", st)
        s.log(t_stat + 400_000, api, "specdec", spec_msg(rng, 7, 10.0, rng.randint(9000, 16000)))
        tally.spec_lines["0"] = tally.spec_lines.get("0", 0) + 1
        store = 20646236160 if incident else rng.randint(240_000, 560_000) * 4096
        lookups = 40 + k * 3 + rng.randint(0, 9)
        text, sb, _ = offload_kv(
            rng, store // 4096, 0, 4096, lookups=lookups, order=k + 1, cpu_block=8_355_840
        )
        s.log(t_stat + 800_000, api, "kvxfer", f"KV Transfer metrics: {text}")
        tally.kv("0", sb, 0)
        tally.facts.append(f"interval {k + 1}: lookup_sync_delay_seconds_count={lookups}") if k in (
            0,
            39,
        ) else None
        t = t_stat
    st = Stat(prompt=0.0, gen=0.0, running=0, waiting=0, kv=0.0, prefix=prefix, external=0.0)
    t += 10 * NS
    s.log(t, api, "stats", stats_msg(version, "Engine 000: ", st))
    remember(tally, "0", st)
    body = [
        f"vLLM **{version}**, V1, `deepseek-ai/DeepSeek-V4-Flash` on TP=8 (`Worker_TP0..7`), "
        "OffloadingConnector via `--kv-transfer-config` with `cpu_bytes_to_use=960000000000`, "
        "`block_size` 256, MTP speculative decoding with 7 tokens. Startup has the INFO "
        "`[scheduler.py:194] KV offloading: EAGLE/MTP draft attention groups [2] detected. ...` line. "
        "Then 40 intervals of 10 s (6 min 40 s) of heavy prefill, each with an `Engine 000:` line, a "
        "`SpecDecoding metrics:` line and a `KV Transfer metrics:` line that has store keys, "
        "`lookup_sync_delay_seconds_count` (growing 40 -> ~160 per interval), "
        "`cpu_cache_read_usage_perc=0.0` and never a load key. `External prefix cache hit rate: "
        "0.0%` on every line. Interval 24 is the incident's moment: prompt 34844.3 tokens/s, GPU KV "
        "0.5%, Prefix 88.3%, External 0.0%, `vllm:kv_offload_store_bytes=20646236160`. Ends with "
        "one `0.0 tokens/s` line.",
    ]
    return plain(s.render()), readme_section(
        "vllm-write-only-offload.log", body, tally, "load bytes: 0 (no load key anywhere)"
    )


def dp_ansi_sample() -> tuple[bytes, str]:
    """Sample 3: two DP engines on 0.11.2, colour prefix on every physical line."""
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
    return plain(s.render()), readme_section("vllm-dp-ansi.log", body, tally)


def aggregated_sample() -> tuple[bytes, str]:
    """Sample 4: --aggregate-engine-logging on 0.20.2 with the 0.16-0.23 GPU_to_CPU keys."""
    version = "0.20.2"
    rng = random.Random(4004)
    s = Server(version, rng)
    tally = Tally()
    model = "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8"
    api = ("APIServer", 1)
    engs = [(f"EngineCore_DP{k}", 301 + k) for k in range(4)]
    workers = [[(f"Worker_DP{d}_TP{k}", 520 + 2 * d + k) for k in range(2)] for d in range(4)]
    eid = fuuid(rng)
    ktc = (
        f"KVTransferConfig(kv_connector='OffloadingConnector', engine_id='{eid}', "
        "kv_buffer_device='cuda', kv_buffer_size=1000000000.0, kv_role='kv_both', "
        "kv_rank=None, kv_parallel_size=1, kv_ip='127.0.0.1', kv_port=14579, "
        "kv_connector_extra_config={'cpu_bytes_to_use': 214748364800}, "
        "kv_connector_module_path=None, enable_permute_local_kv=False, "
        "kv_load_failure_policy='fail')"
    )
    args = (
        f"{{'model_tag': '{model}', 'api_server_count': 1, 'model': '{model}', "
        "'max_model_len': 131072, 'served_model_name': ['qwen3-235b'], "
        "'tensor_parallel_size': 2, 'data_parallel_size': 4, 'aggregate_engine_logging': True, "
        f"'kv_transfer_config': {ktc}}}"
    )
    cfg = Setup(
        model=model,
        served="qwen3-235b",
        args=args,
        config=vllm_config(model, "qwen3-235b", max_len=131072, tp=2, dp=4),
        kv_tokens=812_864,
        max_len=131072,
        conc=6.20,
        kv_gib="73.42",
        engines=engs,
        workers=workers,
        connector="OffloadingConnector",
        shards=24,
        arch="Qwen3MoeForCausalLM",
        engine_id=eid,
    )
    t = startup(s, at("2026-05-12T07:58:02") + 771_000_000, cfg, tally)
    t += 11 * NS
    prefix, kvu, ext = 71.0, 22.0, 0.0
    block = 16 * 4 * 94 * 128 * 2  # per 16-token block per TP rank pair (fp8 KV), summed
    for k in range(32):
        t_stat = t + 10 * NS
        traffic(s, t, 10, 1.2, log_requests=False)
        prefix = walk(rng, prefix + 0.2, 60.0, 90.0, 1.0)
        kvu = walk(rng, kvu, 10.0, 85.0, 5.0)
        ext = walk(rng, ext + 0.8, 0.0, 35.0, 1.5) if k else 0.0
        st = Stat(
            prompt=rng.uniform(9000, 42000),
            gen=rng.uniform(2000, 7000),
            running=rng.randint(40, 160),
            waiting=rng.choice([0, 0, 2, 5, 11]),
            kv=kvu,
            prefix=prefix,
            external=ext,
            deferred=rng.choice([0, 0, 0, 1, 3]),
            preempt=rng.choice([0] * 7 + [3]),
        )
        s.log(t_stat, api, "stats", stats_msg(version, "4 Engines Aggregated: ", st))
        remember(tally, "aggregated", st)
        pairs: list[tuple[str, object]] = []
        store = rng.randint(300, 5000) * block if rng.random() < 0.9 else 0
        load = rng.randint(20, 1200) * block if (k > 3 and rng.random() < 0.7) else 0
        dirs = [("GPU_to_CPU", store), ("CPU_to_GPU", load)]
        if rng.random() < 0.4:
            dirs.reverse()
        for d, nbytes in dirs:
            if nbytes:
                pairs += [(f"{d}_total_bytes", nbytes), (f"{d}_total_time", nbytes / rng.uniform(15e9, 24e9))]
        if pairs:
            s.log(
                t_stat + 500_000,
                api,
                "kvxfer",
                "KV Transfer metrics: " + ", ".join(f"{a}={b}" for a, b in pairs),
            )
            tally.kv("aggregated", store, load)
        t = t_stat
    st = Stat(0.0, 0.0, 0, 0, 0.0, prefix, ext)
    t += 10 * NS
    s.log(t, api, "stats", stats_msg(version, "4 Engines Aggregated: ", st))
    remember(tally, "aggregated", st)
    body = [
        f"vLLM **{version}**, V1, `--data-parallel-size 4 --tensor-parallel-size 2 "
        "--api-server-count 1 --aggregate-engine-logging` (0.15.1+ would otherwise default "
        "api_server_count to 4 and print no stats at all). One `4 Engines Aggregated: ` line per "
        "interval (32 busy intervals + one `0.0 tokens/s` line): running/waiting summed, KV usage "
        "averaged, `Deferred: N reqs` on some lines (0.20.2+), `Preemptions` on some. "
        "OffloadingConnector via `--kv-transfer-config` (`cpu_bytes_to_use=214748364800`), so "
        "`KV Transfer metrics:` uses the 0.16-0.23 keys `GPU_to_CPU_total_bytes`, "
        "`GPU_to_CPU_total_time`, `CPU_to_GPU_total_bytes`, `CPU_to_GPU_total_time`, first-seen "
        "order (the CPU_to_GPU pair comes first in some intervals), a direction with no transfer is "
        "missing, and intervals with neither have no KV line at all. Startup has the aggregated "
        "`4 Engines: vllm cache_config_info ...` INFO line and the logo.",
    ]
    return plain(s.render()), readme_section(
        "vllm-aggregated.log", body, tally, "engine label: the whole `4 Engines Aggregated` group"
    )


def v0_sample() -> tuple[bytes, str]:
    """Sample 5: the V0 engine of 0.6.6 with the two-record stats and irregular spacing."""
    version = "0.6.6"
    rng = random.Random(5005)
    s = Server(version, rng)
    tally = Tally()
    model = "meta-llama/Llama-3.1-8B-Instruct"
    t = at("2026-12-20T23:51:02") + 331_000_000
    s.log(t, None, "banner", f"vLLM API server version {version}")
    s.log(
        t,
        None,
        "args",
        "args: Namespace(subparser='serve', model_tag='" + model + "', "
        "config='', host=None, port=8000, uvicorn_log_level='info', allow_credentials=False, "
        "allowed_origins=['*'], allowed_methods=['*'], allowed_headers=['*'], api_key=None, "
        "lora_modules=None, prompt_adapters=None, chat_template=None, chat_template_content_format"
        "='auto', response_role='assistant', ssl_keyfile=None, ssl_certfile=None, "
        "ssl_ca_certs=None, ssl_cert_reqs=0, root_path=None, middleware=[], return_tokens_as_"
        "token_ids=False, disable_frontend_multiprocessing=False, enable_request_id_headers="
        "False, enable_auto_tool_choice=False, tool_call_parser=None, tool_parser_plugin='', "
        f"model='{model}', task='auto', tokenizer=None, skip_tokenizer_init=False, revision=None, "
        "code_revision=None, tokenizer_revision=None, tokenizer_mode='auto', trust_remote_code="
        "False, allowed_local_media_path=None, download_dir=None, load_format='auto', "
        "config_format=<ConfigFormat.AUTO: 'auto'>, dtype='auto', kv_cache_dtype='auto', "
        "quantization_param_path=None, max_model_len=32768, guided_decoding_backend='xgrammar', "
        "distributed_executor_backend=None, worker_use_ray=False, pipeline_parallel_size=1, "
        "tensor_parallel_size=1, max_parallel_loading_workers=None, ray_workers_use_nsight=False, "
        "block_size=None, enable_prefix_caching=True, disable_sliding_window=False, "
        "use_v2_block_manager=True, num_lookahead_slots=0, seed=0, swap_space=4, "
        "cpu_offload_gb=0, gpu_memory_utilization=0.9, num_gpu_blocks_override=None, "
        "max_num_batched_tokens=None, max_num_seqs=None, max_logprobs=20, disable_log_stats="
        "False, quantization=None, rope_scaling=None, rope_theta=None, hf_overrides=None, "
        "enforce_eager=False, max_seq_len_to_capture=8192, disable_custom_all_reduce=False, "
        "served_model_name=['llama-3.1-8b'], disable_log_requests=False, max_log_len=32, "
        "disable_fastapi_docs=False, enable_prompt_tokens_details=False, "
        "dispatch_function=<function serve at 0x7f3b2c1a5e40>)",
    )
    s.log(t + 2 * NS, None, "engine_pid", "Started engine process with PID 77")
    t += 9 * NS
    s.log(
        t,
        None,
        "init",
        f"Initializing an LLM engine (v{version}) with config: model='{model}', "
        "speculative_config=None, tokenizer='" + model + "', skip_tokenizer_init=False, "
        "tokenizer_mode=auto, revision=None, override_neuron_config=None, tokenizer_revision=None, "
        "trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=32768, download_dir=None, "
        "load_format=LoadFormat.AUTO, tensor_parallel_size=1, pipeline_parallel_size=1, "
        "disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
        "kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, "
        "decoding_config=DecodingConfig(guided_decoding_backend='xgrammar'), observability_config="
        "ObservabilityConfig(otlp_traces_endpoint=None, collect_model_forward_time=False, "
        "collect_model_execute_time=False), seed=0, served_model_name=llama-3.1-8b, "
        "num_scheduler_steps=1, multi_step_stream_outputs=True, enable_prefix_caching=True, "
        "chunked_prefill_enabled=False, use_async_output_proc=True, disable_mm_preprocessor_cache="
        'False, mm_processor_kwargs=None, pooler_config=None, compilation_config={"splitting_ops'
        '":["vllm.unified_attention","vllm.unified_attention_with_output"],"candidate_'
        'compile_sizes":[],"compile_sizes":[],"capture_sizes":[256,248,240,232,224,216,208,'
        "200,192,184,176,168,160,152,144,136,128,120,112,104,96,88,80,72,64,56,48,40,32,24,16,8,4,"
        '2,1],"max_capture_size":256}, use_cached_outputs=True, ',
    )
    t += 3 * NS
    s.log(t, None, "load_start", f"Starting to load model {model}...")
    for off, text in tqdm_bar(4, 5.2):
        s.raw(t + int(off * NS), None, text, "stderr")
    t += 6 * NS
    s.log(t, None, "weights", "Loading model weights took 14.9889 GB")
    t += 2 * NS
    s.log(
        t,
        None,
        "profile",
        "Memory profiling takes 1.83 seconds\nthe current vLLM instance can "
        "use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB\nmodel "
        "weights take 14.99GiB; non_torch_memory takes 0.21GiB; PyTorch activation peak memory "
        "takes 1.22GiB; the rest of the memory reserved for KV Cache is 55.05GiB.",
    )
    s.log(t, None, "blocks", "# GPU blocks: 28185, # CPU blocks: 2048")
    s.log(t, None, "maxconc", "Maximum concurrency for 32768 tokens per request: 13.76x")
    tally.facts.append(
        "# GPU blocks: 28185 (16-token blocks = 450,960 tokens), max concurrency 13.76x, prefix caching on"
    )
    t += NS
    s.log(
        t,
        None,
        "capture",
        "Capturing cudagraphs for decoding. This may lead to unexpected "
        "consequences if the model is not static. To run the model in eager mode, set "
        "'enforce_eager=True' or use '--enforce-eager' in the CLI. If out-of-memory error occurs "
        "during cudagraph capture, consider decreasing `gpu_memory_utilization` or switching to "
        "eager mode. You can also reduce the `max_num_seqs` as needed to decrease memory usage.",
    )
    t += 14 * NS
    s.log(t, None, "graphs", "Graph capturing finished in 14 secs, took 0.85 GiB")
    s.log(t, None, "initeng", "init engine (profile, create kv cache, warmup model) took 17.82 seconds")
    t += NS
    s.log(t, None, "routes", "Available routes are:")
    for path, methods in ROUTES[:12]:
        s.log(t, None, "route", f"Route: {path}, Methods: {methods}")
    s.raw(t, None, "INFO:     Started server process [1]\n", "stderr")
    s.raw(t, None, "INFO:     Waiting for application startup.\n", "stderr")
    s.raw(t, None, "INFO:     Application startup complete.\n", "stderr")
    s.raw(t, None, "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n", "stderr")
    t += 95 * NS
    gpu_hit, kvu, last = 0.0, 3.0, t
    prompts = [
        "You are a helpful assistant. Summarize the following support ticket in two se",
        "Translate to German: The quarterly report shows a steady increase in recurr",
        'def parse_config(path: str) -> dict:\n    """Load the YAML file at path and',
    ]
    for k in range(120):
        t_step = last + int(rng.uniform(5.0, 9.8) * NS)
        for _ in range(rng.choice([0, 1, 1, 2])):
            tr = last + rng.randrange(t_step - last)
            rid = f"chatcmpl-{rng.getrandbits(128):032x}"
            prompt = rng.choice(prompts)[:32]
            s.log(
                tr,
                None,
                "received",
                f"Received request {rid}: prompt: {prompt!r}, params: "
                f"{params_repr(version, rng)}, prompt_token_ids: "
                f"{[128000, 128006, 9125, 128007, 271] + [rng.randrange(200, 90000) for _ in range(27)]}"
                ", lora_request: None, prompt_adapter_request: None.",
            )
            s.raw(tr + 3_000_000, None, access(rng))
            s.log(tr + 4_000_000, None, "added", f"Added request {rid}.")
        gpu_hit = walk(rng, gpu_hit + 0.9 if k < 30 else gpu_hit + 0.05, 0.0, 83.0, 1.2)
        kvu = walk(rng, kvu, 1.0, 64.0, 4.0)
        s.log(
            t_step,
            None,
            "stats",
            f"Avg prompt throughput: {rng.uniform(300, 4200):.1f} tokens/s, "
            f"Avg generation throughput: {rng.uniform(60, 900):.1f} tokens/s, Running: "
            f"{rng.randint(1, 22)} reqs, Swapped: 0 reqs, Pending: {rng.choice([0, 0, 0, 1, 2])} "
            f"reqs, GPU KV cache usage: {kvu:.1f}%, CPU KV cache usage: 0.0%.",
        )
        s.log(t_step, None, "prefix", f"Prefix cache hit rate: GPU: {gpu_hit:.2f}%, CPU: 0.00%")
        tally.stat("0", {"kv_usage": f"{kvu:.1f}%", "prefix(GPU)": f"{gpu_hit:.2f}%", "cpu_prefix": "0.00%"})
        last = t_step
    t_idle = last + 10 * NS + 2_000_000
    s.log(
        t_idle,
        None,
        "stats",
        "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
        "0.0 tokens/s, Running: 0 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: "
        "0.0%, CPU KV cache usage: 0.0%.",
    )
    s.log(t_idle, None, "prefix", f"Prefix cache hit rate: GPU: {gpu_hit:.2f}%, CPU: 0.00%")
    tally.stat("0", {"kv_usage": "0.0%", "prefix(GPU)": f"{gpu_hit:.2f}%", "cpu_prefix": "0.00%"})
    body = [
        f"vLLM **{version}**, V0 engine (multiprocessing front end; no process prefix, old header "
        "`INFO 12-20 23:51:02 api_server.py:712] ` without `[`). Each stats interval is two "
        "records: `metrics.py:467] Avg prompt throughput: ... Swapped: ... Pending: ..., GPU KV "
        "cache usage: x%, CPU KV cache usage: 0.0%.` and `metrics.py:483] Prefix cache hit rate: "
        "GPU: x%, CPU: 0.00%` (two decimals). Spacing is irregular, 5.0-9.8 s (the V0 engine logs "
        "from its step loop, at most every 5 s). Traffic starts 12-20 23:53 and crosses midnight to "
        "12-21 00:08; one `0.0 tokens/s` pair closes it (10 s later, from the idle poll loop). "
        "Request logging is V0's default: `Received request ...: prompt: '...', params: "
        "SamplingParams(...), prompt_token_ids: [...]` (`--max-log-len 32`) and `Added request`. "
        "The `Memory profiling takes ...` startup record is a `\\r\\n` multi-line record; the "
        "tqdm bar lines begin with a lone `\\r`; uvicorn prints `Uvicorn running on ...`.",
    ]
    return plain(s.render()), readme_section(
        "vllm-v0.log", body, tally, "stats records: 121 pairs (120 busy + 1 idle)"
    )


def rotated_sample() -> tuple[bytes, str]:
    """Sample 7: 0.33.0 plain log, gzip-rotated (prefix in the formatter, KV fetch field)."""
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
    return gzip.compress(data, mtime=0), readme_section("vllm-rotated.log.1.gz", body, tally)


def multiconnector_sample() -> tuple[bytes, str]:
    """Extra: MultiConnector (OffloadingConnector with fs tier + NixlConnector) on 0.33.0."""
    version = "0.33.0"
    rng = random.Random(8008)
    s = Server(version, rng)
    tally = Tally()
    model = "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8"
    api = ("APIServer", 1)
    eid = fuuid(rng)
    t = at("2026-11-04T13:30:00") + 250_000_000
    s.log(t, api, "logo", LOGO % (version, "qwen3-coder"))
    s.log(
        t,
        api,
        "args",
        f"non-default args: {{'model_tag': '{model}', 'model': '{model}', "
        "'served_model_name': ['qwen3-coder'], 'tensor_parallel_size': 8, "
        "'enable_prefix_caching': False, 'kv_transfer_config': KVTransferConfig(kv_connector="
        f"'MultiConnector', engine_id='{eid}', kv_buffer_device='cuda', kv_buffer_size="
        "1000000000.0, kv_role='kv_consumer', kv_rank=None, kv_parallel_size=1, kv_ip="
        "'127.0.0.1', kv_port=14579, kv_connector_extra_config={'connectors': [{'kv_connector': "
        "'NixlConnector', 'kv_role': 'kv_consumer'}, {'kv_connector': 'OffloadingConnector', "
        "'kv_role': 'kv_both', 'kv_connector_extra_config': {'cpu_bytes_to_use': 137438953472, "
        "'secondary_tiers': [{'type': 'fs', 'path': '/mnt/kvcache'}]}}]}, "
        "kv_connector_module_path=None, enable_permute_local_kv=False, "
        "kv_load_failure_policy='fail')}",
    )
    s.log(
        t + 40 * NS,
        ("EngineCore", 91),
        "connector",
        f"Creating v1 connector with name: MultiConnector and engine_id: {eid}",
    )
    s.log(
        t + 95 * NS,
        ("EngineCore", 91),
        "kvsize",
        "GPU KV cache size: 2,093,056 tokens, Maximum concurrency for 262,144 tokens per request: 7.98x",
    )
    tally.facts.append(
        "connector MultiConnector (NixlConnector + OffloadingConnector), GPU KV cache size 2,093,056 tokens"
    )
    t += 130 * NS
    ext = 20.0
    for _ in range(8):
        t_stat = t + 10 * NS
        traffic(s, t, 10, 0.5, log_requests=False)
        ext = walk(rng, ext + 2.0, 0.0, 60.0, 4.0)
        fetch = (rng.randint(0, 4), rng.randint(1, 5), rng.randint(0, 2))
        st = Stat(
            prompt=rng.uniform(50, 400),
            gen=rng.uniform(900, 3000),
            running=rng.randint(10, 40),
            waiting=sum(fetch),
            kv=rng.uniform(20, 50),
            prefix=None,
            external=ext,
            fetch=fetch,
        )
        s.log(t_stat, api, "stats", stats_msg(version, "Engine 000: ", st))
        remember(tally, "0", st)
        store = rng.randint(50, 400) * 1179648
        read = rng.randint(10, 300) * 1179648
        n = rng.randint(2, 9)
        xfer = [rng.uniform(0.004, 0.03) for _ in range(n)]
        mb = sum(rng.randint(200, 900) for _ in range(n)) * 1.0
        off = {
            "vllm:kv_offload_store_bytes": store,
            "vllm:kv_offload_store_time": store / rng.uniform(18e9, 23e9),
            "vllm:kv_offload_tiering_read_bytes:('1:fs',)": read,
            "vllm:kv_offload_tiering_read_time:('1:fs',)": read / rng.uniform(2e9, 6e9),
            "vllm:kv_offload_tiering_promotion_latency_seconds:('1:fs', 'success')_count": 3,
            "vllm:kv_offload_tiering_promotion_latency_seconds:('1:fs', 'success')_sum": rng.uniform(
                0.05, 0.4
            ),
            "vllm:kv_offload_cpu_cache_usage_perc": rng.uniform(0.001, 0.02),
        }
        nixl = (
            f"{{'Num successful transfers': {n}, "
            f"'Avg xfer time (ms)': np.float64({round(sum(xfer) / n * 1e3, 3)}), "
            f"'P90 xfer time (ms)': {round(max(xfer) * 1e3, 3)}, "
            f"'Avg post time (ms)': np.float64({round(rng.uniform(0.05, 0.4), 3)}), "
            f"'P90 post time (ms)': {round(rng.uniform(0.4, 0.9), 3)}, "
            f"'Avg MB per transfer': np.float64({round(mb / n, 3)}), "
            f"'Throughput (MB/s)': np.float64({round(mb / sum(xfer), 3)}), "
            f"'Avg number of descriptors': np.float64({round(rng.uniform(300, 2000), 1)})}}"
        )
        s.log(
            t_stat + 600_000,
            api,
            "kvxfer",
            f"KV Transfer metrics: NixlConnector={nixl}, OffloadingConnector={off!r}",
        )
        tally.kv("0", store, 0)
        t = t_stat
    body = [
        f"vLLM **{version}**, a P/D decode instance: `MultiConnector` = NixlConnector "
        "(`kv_consumer`) + OffloadingConnector with an `fs` secondary tier, "
        "`--no-enable-prefix-caching` (connectors still hash blocks), so the 0.31+ stats line "
        "**leaves Prefix out** and carries `KV fetch: ...` and `External prefix cache hit rate`. "
        "8 busy intervals, each with `KV Transfer metrics: NixlConnector={...}, "
        "OffloadingConnector={...}` (MultiConnector's nested `reduce()`; connector order = "
        "first-seen). Nixl's averages are numpy scalars and print as `np.float64(...)` "
        "(numpy 2 repr; the P90 values are plain floats via `.item()`). The Offloading dict holds "
        "labelled 0.33 tiering keys `vllm:kv_offload_tiering_read_bytes:('1:fs',)` (the tier label "
        'is `f"{idx + 1}:{type}"`, see `tiering/metrics.py`) and a two-label histogram key '
        "containing `', '`. Abridged startup (logo, non-default args, connector, KV size). "
        "The line ends where the traffic ends (no idle line).",
    ]
    return plain(s.render()), readme_section(
        "vllm-multiconnector.log",
        body,
        tally,
        "store bytes are `vllm:kv_offload_store_bytes` inside OffloadingConnector={...}; "
        "no `vllm:kv_offload_load_bytes` (reads come from the fs tier: tiering_read_bytes)",
    )


HEADER = """# vLLM sample logs (synthetic, version-exact)

Written by `python scripts/make_vllm_samples.py` (stdlib only, seeded, no wall clock: two runs give
byte-identical files). Each sample imitates one vLLM release exactly: the header form
(`INFO 12-20 14:00:52 metrics.py:467] ` up to 0.7, `[file:line]` from 0.8, the
`(Name pid=N) ` prefix from `decorate_logs()` on every physical line in 0.10.1-0.30, always
ANSI-coloured `\\x1b[1;36m...\\x1b[0;0m` in 0.10.1-0.11.x, and inside the formatter, vLLM records
only, from 0.31), the `file:line` of every logging call, `NewLineFormatter`'s `\\r\\n` + header
continuation lines, tqdm bars (`_BAR_FORMAT` ends in `\\n`, each update starts with `\\r`),
`%.1f` formatting, optional fields, idle suppression (one `0.0 tokens/s` line, then silence).

**Verified against wheels** (`pip download vllm==X --no-deps`, `.py` files read, wheels deleted):
0.6.6, 0.11.0, 0.11.2, 0.16.0, 0.20.2, 0.26.0, 0.33.0. Every `file:line` used is listed in
`LINES` in the script, with the `logger.*(`/`log_fn(` call line found in: `v1/metrics/loggers.py`
(stats), `v1/spec_decode/metrics.py` (SpecDecoding),
`distributed/kv_transfer/kv_connector/v1/metrics.py` (`KV Transfer metrics: %s`),
`kv_connector/v1/offloading/metrics.py` / `offloading/scheduler.py` (0.26 keys and the EAGLE/MTP
line), `kv_connector/v1/offloading/metrics.py` in 0.20.2 (`GPU_to_CPU_total_bytes`),
`v1/kv_offload/tiering/metrics.py` in 0.33 (labelled keys), `engine/metrics.py` in 0.6.6 (V0),
`entrypoints/.../api_utils.py|utils.py|startup.py` (logo/banner, non-default args),
`v1/core/kv_cache_utils.py` (KV cache size), `logging_utils/formatter.py` and
`utils/system_utils.py` (continuation lines, prefix/colour).

Line counts below count INFO stats lines only; "last" values are the printed strings of the last
stats line of that engine. Totals are sums of the printed per-interval KV Transfer values.

Details the wheels settled while checking: (1) 0.11.0 has no `Preemptions` (0.11.1+ does:
`v1/metrics/loggers.py`) - so the DP sample uses 0.11.2; (2) the labelled
tiering key in 0.33 is `vllm:kv_offload_tiering_read_bytes:('1:fs',)` (label
`f"{tier_idx + 1}:{tier_type}"`), not `('fs',)`, and 0.26 has no `tiering_read_bytes` at all;
(3) in 0.11.2 the per-engine `Engine 000: vllm cache_config_info ...` line is DEBUG (only the
aggregated `N Engines: ...` form is INFO); (4) NixlConnector's reduce() returns numpy scalars, so
a MultiConnector line prints `np.float64(...)` values under numpy 2.

"""


def main() -> None:
    """Write every sample and samples/README.vllm.md."""
    SAMPLES.mkdir(exist_ok=True)
    sections: list[str] = []
    jobs: list[tuple[str, Callable[[], tuple[bytes, str]]]] = [
        (
            "vllm-offload-readback.log",
            lambda: offload_sample(
                "vllm-offload-readback.log", "0.26.0", 1001, "2026-08-18T01:15:00", docker=False
            ),
        ),
        ("vllm-write-only-offload.log", write_only_sample),
        ("vllm-dp-ansi.log", dp_ansi_sample),
        ("vllm-aggregated.log", aggregated_sample),
        ("vllm-v0.log", v0_sample),
        (
            "vllm-docker.log",
            lambda: offload_sample("vllm-docker.log", "0.26.0", 6006, "2026-08-19T06:40:00", docker=True),
        ),
        ("vllm-rotated.log.1.gz", rotated_sample),
        ("vllm-multiconnector.log", multiconnector_sample),
    ]
    for name, job in jobs:
        data, section = job()
        (SAMPLES / name).write_bytes(data)
        sections.append(section)
        print(f"{name}: {len(data)} bytes")
    (SAMPLES / "README.vllm.md").write_text(HEADER + "\n".join(sections), encoding="utf-8")


if __name__ == "__main__":
    main()
