"""Benchmark kvwatch replay against mtail --one_shot and ripgrep on the same generated logs.

One invocation generates (or reuses) the logs, runs every tool in a fresh subprocess, measures wall
time, lines/s, MB/s and peak RSS (os.wait4 rusage of that child), checks that kvwatch's counts equal
mtail's (and the generator's), and prints a side-by-side table, the ratios and the issue #8 targets.

    python bench/run.py            # vLLM 1.5M lines (~360 MB) + 4x, llama.cpp 50 MB, SGLang 500 MB + 2x
    python bench/run.py --quick    # vLLM 50 MB + 4x, llama.cpp 10 MB: well under a minute
    python bench/run.py --check-only   # tiny files, counts only (what tests/test_bench_sanity runs)
    python bench/run.py --llama-only --repeat 3   # only the llama.cpp log (50 MB), fastest of 3
    python bench/run.py --daemon-only  # only the live daemon at 20k lines/s (bench/daemon.py)
    python bench/run.py --memory-only  # only the memory figures (bench/memory.py): daemon RSS, replay peak
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daemon import DaemonResult, bench_daemon, report
from memory import BURST_LINES, DaemonMemory, burst_file, burst_report, daemon_rss, replay_peak
from versus import compile_bytecode

BENCH = Path(__file__).resolve().parent
MTAIL_PROG = BENCH / "kvwatch.mtail"
RG_VLLM = (r"Engine \d+: Avg prompt throughput", "KV Transfer metrics:")
RG_LLAMA = ("new prompt, ", "stop processing: ")
SGLANG_PROG = BENCH / "sglang.mtail"
RG_SGLANG = (r"\] Prefill batch", r"\] Finish: ")
_SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


@dataclass
class Run:
    """One measured child process."""

    tool: str
    wall: float
    cpu: float
    rss_mb: float
    stdout: str
    code: int


@dataclass
class FileResult:
    """The runs on one file and what they counted."""

    label: str
    path: Path
    size: int
    lines: int
    runs: dict[str, Run] = field(default_factory=dict)
    rounds: list[dict[str, float]] = field(default_factory=list)  # each round's wall time per tool
    checks: list[tuple[str, object, object, bool]] = field(default_factory=list)


def measure(tool: str, argv: list[str]) -> Run:
    """Run argv as a fresh child; wall clock, CPU and peak RSS of exactly that child."""
    # A forked child's ru_maxrss starts at this (40 MB) process's size, so the peak RSS comes from
    # GNU time, a small process whose child is the tool (`%M`, KB), when it is installed.
    gnu_time = os.path.exists("/usr/bin/time")
    wrapped = ["/usr/bin/time", "-f", "kvwatch-bench-rss %M", *argv] if gnu_time else argv
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(wrapped, stdout=subprocess.PIPE, stderr=err, text=True)
        out = proc.stdout.read() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err.seek(0)
        found = re.findall(rb"kvwatch-bench-rss (\d+)", err.read())
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    rss_kb = int(found[-1]) if found else usage.ru_maxrss
    return Run(tool, wall, cpu, rss_kb / 1024, out, proc.returncode)


def best_of(argvs: dict[str, list[str]], tools: tuple[str, ...], repeat: int, result: FileResult) -> None:
    """`repeat` rounds of one run per tool, the tools taking turns; the fastest run of each counts.

    The machine is shared and its speed drifts over tens of seconds, so the tools are interleaved
    (each round measures all of them in the same stretch) and each round's times are kept, for the
    ratios per round beside the ratio of the fastest runs.
    """
    runs: dict[str, list[Run]] = {tool: [] for tool in tools}
    for _ in range(repeat):
        for tool in tools:
            run = measure(tool, argvs[tool])
            if run.code != 0:
                raise SystemExit(f"{tool} failed (exit {run.code}): {' '.join(argvs[tool])}")
            runs[tool].append(run)
        result.rounds.append({tool: runs[tool][-1].wall for tool in tools})
    for tool, made in runs.items():
        fastest = min(made, key=lambda r: r.wall)
        fastest.rss_mb = max(r.rss_mb for r in made)
        result.runs[tool] = fastest


def round_ratios(res: FileResult, over: str, under: str) -> str:
    """`over` wall / `under` wall in each round, and their median (empty with one round)."""
    ratios = [r[over] / r[under] for r in res.rounds if over in r and under in r]
    if len(ratios) < 2:
        return ""
    shown = " ".join(f"{x:.2f}" for x in ratios)
    return f" (per round: {shown}; median {statistics.median(ratios):.2f}x)"


def prom_samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Prometheus text exposition -> {(name, sorted labels without prog/source): value}."""
    out = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line.strip())
        if not match:
            continue
        labels = tuple(
            sorted((k, v) for k, v in _LABEL.findall(match[2] or "") if k not in ("prog", "source"))
        )
        out[(match[1], labels)] = float(match[3])
    return out


def by_engine(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str) -> dict[str, float]:
    """{engine: value} of one metric."""
    return {dict(labels).get("engine", ""): v for (n, labels), v in samples.items() if n == name}


def one(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str) -> float | None:
    """The single value of an unlabelled metric (None when absent)."""
    return samples.get((name, ()))


def total(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str) -> float | None:
    """The sum over every series of a metric (None when absent): SGLang's per rank and per tier."""
    values = [v for (n, _), v in samples.items() if n == name]
    return sum(values) if values else None


def generated(kind: str, workdir: Path, size_arg: list[str]) -> tuple[Path, dict[str, Any]]:
    """A generated log, reused while the generator and its arguments are unchanged."""
    script = BENCH / f"gen_{kind}.py"
    key = hashlib.sha256(script.read_bytes() + " ".join(size_arg).encode()).hexdigest()[:12]
    path = workdir / f"{kind}-{'-'.join(a.strip('-') for a in size_arg)}-{key}.log"
    meta = path.with_suffix(".json")
    if not (path.exists() and meta.exists()):
        workdir.mkdir(parents=True, exist_ok=True)
        for old in workdir.glob(f"{kind}-{'-'.join(a.strip('-') for a in size_arg)}-*"):
            old.unlink()
        print(f"generating {path.name} ...", file=sys.stderr, flush=True)
        proc = subprocess.run(
            [sys.executable, str(script), *size_arg, "-o", str(path), "--totals"],
            check=True,
            capture_output=True,
            text=True,
        )
        meta.write_text(proc.stderr.strip().splitlines()[-1])
    return path, json.loads(meta.read_text())


def warm(path: Path) -> None:
    """Read the file once so every tool starts with it in the page cache."""
    with open(path, "rb") as handle:
        while handle.read(1 << 24):
            pass


def kvwatch_argv(path: Path) -> list[str]:
    """The replay command as a user runs it: the venv's own `kvwatch` beside this Python (run as
    `.venv/bin/python bench/run.py`, its bin need not be on PATH), else the one on PATH."""
    beside = Path(sys.executable).with_name("kvwatch")
    exe = str(beside) if beside.is_file() else shutil.which("kvwatch")
    base = [exe] if exe else [sys.executable, "-m", "kvwatch"]
    return [*base, "replay", "--format", "prom", str(path)]


def mtail_argv(path: Path, prog: Path = MTAIL_PROG) -> list[str]:
    """mtail one-shot: read the file to EOF, print the metric store, exit."""
    return [
        "mtail",
        "--one_shot",
        "--one_shot_format",
        "prometheus",
        "--port",
        "0",
        "--progs",
        str(prog),
        "--logs",
        str(path),
    ]


def rg_argv(path: Path, patterns: tuple[str, ...]) -> list[str]:
    """ripgrep counting the lines that match either key pattern."""
    return ["rg", "-c", *(arg for p in patterns for arg in ("-e", p)), str(path)]


def floor_argv(path: Path) -> list[str]:
    """bench/floor.py: the bare Python scan that reads only the compared numbers (a floor, not kvwatch)."""
    return [sys.executable, str(Path(__file__).with_name("floor.py")), str(path)]


def check(result: FileResult, what: str, kv: object, mt: object) -> None:
    """Record one kvwatch-vs-mtail comparison."""
    result.checks.append((what, kv, mt, kv == mt))


def bench_vllm(
    label: str, path: Path, meta: dict[str, Any], repeat: int, tools: tuple[str, ...]
) -> FileResult:
    """kvwatch, mtail and rg on a vLLM json-file log, and the count comparison."""
    result = FileResult(label, path, meta["bytes"], meta["lines"])
    warm(path)
    argvs = {
        "kvwatch": kvwatch_argv(path),
        "mtail": mtail_argv(path),
        "rg": rg_argv(path, RG_VLLM),
        "floor": floor_argv(path),
    }
    best_of(argvs, tools, repeat, result)
    kv = prom_samples(result.runs["kvwatch"].stdout)
    engines = {f"{int(k[-3:])}": v for k, v in meta["stats_lines"].items()}
    check(result, "total lines (kvwatch = generator)", one(kv, "kvwatch_lines_total"), float(meta["lines"]))
    check(
        result,
        "stats lines per engine (kvwatch = generator)",
        by_engine(kv, "kvwatch_vllm_stats_lines_total"),
        {k: float(v) for k, v in engines.items()},
    )
    check(
        result,
        "store bytes, all engines (kvwatch = generator)",
        sum(by_engine(kv, "kvwatch_vllm_kv_offload_store_bytes_total").values()),
        float(meta["store_bytes"]),
    )
    if "mtail" in result.runs:
        mt = prom_samples(result.runs["mtail"].stdout)
        check(result, "total lines", one(kv, "kvwatch_lines_total"), one(mt, "lines_total"))
        check(
            result,
            "stats lines per engine",
            by_engine(kv, "kvwatch_vllm_stats_lines_total"),
            by_engine(mt, "vllm_stats_lines"),
        )
        check(
            result,
            "store bytes per engine",
            by_engine(kv, "kvwatch_vllm_kv_offload_store_bytes_total"),
            by_engine(mt, "vllm_store_bytes"),
        )
        check(
            result,
            "load bytes per engine",
            by_engine(kv, "kvwatch_vllm_kv_offload_load_bytes_total"),
            by_engine(mt, "vllm_load_bytes"),
        )
    if meta.get("lmcache_lookups"):
        lmcache(result, kv, meta)
    if "rg" in result.runs:
        check(
            result,
            "rg -c = stats + KV lines (generator)",
            int(result.runs["rg"].stdout.strip() or 0),
            sum(meta["stats_lines"].values()) + meta["kv_lines"],
        )
    if "floor" in result.runs:
        floor = json.loads(result.runs["floor"].stdout)
        check(result, "floor.py: total lines", one(kv, "kvwatch_lines_total"), float(floor["lines"]))
        check(
            result,
            "floor.py: stats lines per engine",
            by_engine(kv, "kvwatch_vllm_stats_lines_total"),
            {k: float(v) for k, v in floor["stats_lines"].items()},
        )
        check(
            result,
            "floor.py: store bytes per engine",
            by_engine(kv, "kvwatch_vllm_kv_offload_store_bytes_total"),
            {k: float(v) for k, v in floor["store_bytes"].items()},
        )
    return result


def lmcache(
    result: FileResult, kv: dict[tuple[str, tuple[tuple[str, str], ...]], float], meta: dict[str, Any]
) -> None:
    """The LMCache sums (gen_vllm.py --lmcache): kvwatch against the generator and mtail."""
    sums = (
        ("lookups", "kvwatch_lmcache_lookups_total", "lmcache_lookups"),
        ("stored tokens, all workers", "kvwatch_lmcache_stored_tokens_total", "lmcache_stored_tokens"),
        (
            "retrieved tokens, all workers",
            "kvwatch_lmcache_retrieved_tokens_total",
            "lmcache_retrieved_tokens",
        ),
    )
    mt = prom_samples(result.runs["mtail"].stdout) if "mtail" in result.runs else None
    for what, ours, key in sums:
        check(result, f"LMCache {what} (kvwatch = generator)", total(kv, ours), float(meta[key]))
        if mt is not None:
            check(result, f"LMCache {what}", total(kv, ours), one(mt, key))


def bench_llama(
    label: str, path: Path, meta: dict[str, Any], repeat: int, tools: tuple[str, ...]
) -> FileResult:
    """kvwatch, mtail and rg on a llama-server -lv 4 log, and the count comparison."""
    result = FileResult(label, path, meta["bytes"], meta["lines"])
    warm(path)
    argvs = {"kvwatch": kvwatch_argv(path), "mtail": mtail_argv(path), "rg": rg_argv(path, RG_LLAMA)}
    best_of(argvs, tools, repeat, result)
    kv = prom_samples(result.runs["kvwatch"].stdout)
    pairs = (
        ("total lines", "kvwatch_lines_total", "lines_total", "lines"),
        ("requests", "kvwatch_llamacpp_requests_total", "llamacpp_requests", "requests"),
        ("prompt tokens", "kvwatch_llamacpp_prompt_tokens_total", "llamacpp_prompt_tokens", "prompt_tokens"),
        ("cached tokens", "kvwatch_llamacpp_cached_tokens_total", "llamacpp_cached_tokens", "reused_tokens"),
    )
    for what, kv_name, _, key in pairs:
        check(result, f"{what} (kvwatch = generator)", one(kv, kv_name), float(meta[key]))
    if "mtail" in result.runs:
        mt = prom_samples(result.runs["mtail"].stdout)
        for what, kv_name, mt_name, _ in pairs:
            check(result, what, one(kv, kv_name), one(mt, mt_name))
    if "rg" in result.runs:
        check(
            result,
            "rg -c = new prompt + stop lines (generator)",
            int(result.runs["rg"].stdout.strip() or 0),
            2 * meta["requests"],
        )
    return result


def bench_sglang(
    label: str, path: Path, meta: dict[str, Any], repeat: int, tools: tuple[str, ...]
) -> FileResult:
    """kvwatch, mtail (bench/sglang.mtail) and rg on an SGLang --log-requests log, and the counts."""
    result = FileResult(label, path, meta["bytes"], meta["lines"])
    warm(path)
    argvs = {
        "kvwatch": kvwatch_argv(path),
        "mtail": mtail_argv(path, SGLANG_PROG),
        "rg": rg_argv(path, RG_SGLANG),
    }
    best_of(argvs, tools, repeat, result)
    kv = prom_samples(result.runs["kvwatch"].stdout)
    pairs = (
        ("total lines", "kvwatch_lines_total", "lines_total", "lines"),
        ("prefill batches", "kvwatch_sglang_prefill_batches_total", "sglang_prefill_batches",
         "prefill_batches"),
        ("new sequences", "kvwatch_sglang_prefill_seqs_total", "sglang_prefill_seqs", "prefill_seqs"),
        ("computed tokens", "kvwatch_sglang_prefill_computed_tokens_total", "sglang_prefill_computed_tokens",
         "computed_tokens"),
        ("cached tokens", "kvwatch_sglang_prefill_cached_tokens_total", "sglang_prefill_cached_tokens",
         "cached_tokens"),
        ("requests", "kvwatch_sglang_requests_total", "sglang_requests", "requests"),
        ("request prompt tokens", "kvwatch_sglang_prompt_tokens_total", "sglang_prompt_tokens",
         "prompt_tokens"),
        ("request cached tokens", "kvwatch_sglang_cached_tokens_total", "sglang_cached_tokens",
         "request_cached_tokens"),
    )  # fmt: skip
    for what, kv_name, _, key in pairs:
        check(result, f"{what} (kvwatch = generator)", total(kv, kv_name), float(meta[key]))
    if "mtail" in result.runs:
        mt = prom_samples(result.runs["mtail"].stdout)
        for what, kv_name, mt_name, _ in pairs:
            check(result, what, total(kv, kv_name), total(mt, mt_name))
    if "rg" in result.runs:
        check(
            result,
            "rg -c = prefill + Finish lines (generator)",
            int(result.runs["rg"].stdout.strip() or 0),
            meta["prefill_batches"] + meta["requests"],
        )
    return result


def table(results: list[FileResult]) -> str:
    """The side-by-side table."""
    rows = [
        f"{'file':<34} {'tool':<8} {'wall s':>8} {'cpu s':>8} {'lines/s':>11} {'MB/s':>8} {'peak RSS MB':>12}"
    ]
    for res in results:
        name = f"{res.label} ({res.size / 1e6:.0f} MB, {res.lines / 1e6:.2f}M lines)"
        for tool, run in res.runs.items():
            rows.append(
                f"{name:<34} {tool:<8} {run.wall:8.2f} {run.cpu:8.2f} "
                f"{res.lines / run.wall:11,.0f} {res.size / 1e6 / run.wall:8.1f} {run.rss_mb:12.1f}"
            )
            name = ""
    return "\n".join(rows)


def verdicts(results: dict[str, FileResult]) -> list[tuple[str, str, bool]]:
    """The issue #8 targets as (target, measured, met)."""
    out = []
    vllm, llama, sglang = results.get("vllm"), results.get("llama"), results.get("sglang")
    if vllm and {"kvwatch", "mtail"} <= vllm.runs.keys():
        ratio = vllm.runs["mtail"].wall / vllm.runs["kvwatch"].wall
        out.append(("vLLM: kvwatch throughput >= 10x mtail", f"{ratio:.2f}x", ratio >= 10))
    if vllm and {"kvwatch", "rg"} <= vllm.runs.keys():
        ratio = vllm.runs["kvwatch"].wall / vllm.runs["rg"].wall
        out.append(("vLLM: kvwatch wall <= 6x rg -c wall", f"{ratio:.1f}x", ratio <= 6))
    if llama and {"kvwatch", "mtail"} <= llama.runs.keys():
        ratio = llama.runs["mtail"].wall / llama.runs["kvwatch"].wall
        out.append(("llama.cpp: kvwatch throughput >= 3x mtail", f"{ratio:.2f}x", ratio >= 3))
    if sglang and {"kvwatch", "mtail"} <= sglang.runs.keys():
        ratio = sglang.runs["mtail"].wall / sglang.runs["kvwatch"].wall
        out.append(("SGLang: kvwatch throughput >= 10x mtail", f"{ratio:.2f}x", ratio >= 10))
    for key in ("vllm", "vllm4x", "llama", "sglang", "sglang2x"):
        res = results.get(key)
        if res and "kvwatch" in res.runs:
            rss = res.runs["kvwatch"].rss_mb
            out.append((f"peak RSS < 100 MB ({res.label})", f"{rss:.1f} MB", rss < 100))
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 1 when a count differs (targets missed do not fail the run)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="vLLM 50 MB (+4x), llama.cpp 10 MB")
    ap.add_argument(
        "--check-only", action="store_true", help="tiny files, one run each: only check that the counts agree"
    )
    ap.add_argument("--vllm-lines", type=int, help="vLLM log size in lines (default 1500000)")
    ap.add_argument("--vllm-mb", type=float, help="vLLM log size in MB instead of lines")
    ap.add_argument("--llama-mb", type=float, help="llama.cpp log size in MB (default 50)")
    ap.add_argument("--sglang-mb", type=float, help="SGLang log size in MB (default 500)")
    ap.add_argument("--no-4x", action="store_true", help="skip the 4x vLLM file (RSS check)")
    ap.add_argument(
        "--vllm-lmcache",
        action="store_true",
        help="the vLLM log with LMCache's lines (gen_vllm.py --lmcache)",
    )
    ap.add_argument("--llama-only", action="store_true", help="only the llama.cpp log (no vLLM files)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool; the fastest counts")
    ap.add_argument(
        "--workdir",
        default=os.environ.get("KVWATCH_BENCH_DIR", str(Path(tempfile.gettempdir()) / "kvwatch-bench")),
    )
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument(
        "--daemon-seconds", type=float, help="length of each daemon phase (default 30; --quick 20)"
    )
    ap.add_argument("--no-daemon", action="store_true", help="skip the live daemon benchmark")
    ap.add_argument("--daemon-only", action="store_true", help="only the live daemon benchmark")
    ap.add_argument(
        "--memory-seconds", type=float, help="length of the daemon memory run (default 60; --quick 20)"
    )
    ap.add_argument("--no-memory", action="store_true", help="skip the memory figures")
    ap.add_argument("--memory-only", action="store_true", help="only the memory figures")
    args = ap.parse_args(argv)
    daemon_seconds = args.daemon_seconds or (20.0 if args.quick else 30.0)
    memory_seconds = args.memory_seconds or (20.0 if args.quick else 60.0)
    if args.daemon_only:
        return run_daemon(daemon_seconds, args.json)
    if args.memory_only:
        _, figures = run_memory(memory_seconds, Path(args.workdir))
        if args.json:
            Path(args.json).write_text(json.dumps({"memory": figures}, indent=1) + "\n")
        return 0
    for tool in ("mtail", "rg"):
        if shutil.which(tool) is None:
            print(f"bench: {tool} is not installed", file=sys.stderr)
            return 2
    compile_bytecode()
    if args.check_only:
        vllm_size, llama_size, four = ["--lines", "20000"], ["--lines", "6000"], False
        sglang_size = ["--lines", "3000"]
    elif args.quick:
        vllm_size, llama_size, four = ["--mb", "50"], ["--mb", "10"], not args.no_4x
        sglang_size = ["--mb", "100"]
    else:
        vllm_size = ["--lines", str(args.vllm_lines or 1_500_000)]
        llama_size = ["--mb", "50"]
        sglang_size = ["--mb", "500"]
        four = not args.no_4x
    if args.vllm_mb:
        vllm_size = ["--mb", str(args.vllm_mb)]
    if args.llama_mb:
        llama_size = ["--mb", str(args.llama_mb)]
    if args.sglang_mb:
        sglang_size = ["--mb", str(args.sglang_mb)]
    workdir = Path(args.workdir)
    tools = ("kvwatch", "mtail", "rg")
    results: dict[str, FileResult] = {}
    if not args.llama_only:
        extra = ["--lmcache"] if args.vllm_lmcache else []
        path, meta = generated("vllm", workdir, [*vllm_size, *extra])
        label = "vLLM json-file" + (" + LMCache" if extra else "")
        results["vllm"] = bench_vllm(label, path, meta, args.repeat, (*tools, "floor"))
    if four and not args.llama_only:
        flag, value = vllm_size
        big = [flag, str(int(float(value) * 4)) if flag == "--lines" else str(float(value) * 4)]
        path, meta = generated("vllm", workdir, big)
        results["vllm4x"] = bench_vllm("vLLM json-file 4x", path, meta, 1, ("kvwatch",))
    path, meta = generated("llamacpp", workdir, llama_size)
    results["llama"] = bench_llama("llama.cpp -lv 4", path, meta, args.repeat, tools)
    path, meta = generated("sglang", workdir, sglang_size)
    results["sglang"] = bench_sglang("SGLang --log-requests", path, meta, args.repeat, tools)
    if four and sglang_size[0] == "--mb":  # memory flat as the file grows: the same at twice the size
        path, meta = generated("sglang", workdir, ["--mb", str(float(sglang_size[1]) * 2)])
        results["sglang2x"] = bench_sglang("SGLang --log-requests 2x", path, meta, 1, ("kvwatch",))

    ok = all(same for res in results.values() for *_, same in res.checks)
    print(
        f"machine: {cpu_model()}, {os.cpu_count()} cores; load average at the end: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(f"runs per tool: {args.repeat}, the tools in turn (fastest shown; peak RSS is the largest seen)\n")
    print(table(list(results.values())))
    print("\ncounts (kvwatch vs mtail; and vs what the generator wrote):")
    for res in results.values():
        for what, kv, mt, same in res.checks:
            print(f"  [{'same' if same else 'DIFFERENT'}] {res.label}: {what}: {kv} vs {mt}")
    print("  => counts " + ("agree: the comparison is like for like" if ok else "DIFFER"))
    if args.check_only:
        return 0 if ok else 1
    print("\nratios:")
    for res in results.values():
        runs = res.runs
        if {"kvwatch", "mtail"} <= runs.keys():
            print(
                f"  {res.label}: kvwatch throughput / mtail throughput = "
                f"{runs['mtail'].wall / runs['kvwatch'].wall:.2f}x" + round_ratios(res, "mtail", "kvwatch")
            )
        if {"kvwatch", "rg"} <= runs.keys():
            print(
                f"  {res.label}: kvwatch wall / rg wall = {runs['kvwatch'].wall / runs['rg'].wall:.1f}x"
                + round_ratios(res, "kvwatch", "rg")
            )
        if {"floor", "rg"} <= runs.keys():
            print(
                f"  {res.label}: floor.py wall / rg wall = {runs['floor'].wall / runs['rg'].wall:.1f}x"
                + round_ratios(res, "floor", "rg")
                + " (the least a Python process does for these counts: bench/floor.py)"
            )
    print("\ntargets (issue #8):")
    marks = verdicts(results)
    for target, measured, met in marks:
        print(f"  [{'met' if met else 'MISSED'}] {target}: {measured}")
    daemons: dict[str, DaemonResult] = {}
    if not (args.no_daemon or args.llama_only):
        daemons = {
            "daemon": bench_daemon(daemon_seconds),
            "daemon_docker": bench_daemon(daemon_seconds, docker=True),
        }
        for daemon in daemons.values():
            marks += daemon.targets()
            for target, measured, met in daemon.targets():
                print(f"  [{'met' if met else 'MISSED'}] {target}: {measured}")
        for daemon in daemons.values():
            print("\n" + report(daemon))
    memory: dict[str, Any] = {}
    if not (args.no_memory or args.llama_only):
        marks_memory, memory = run_memory(memory_seconds, workdir)
        marks += marks_memory
    if args.json:
        dump: dict[str, Any] = {
            key: {
                "file": str(res.path),
                "bytes": res.size,
                "lines": res.lines,
                "runs": {t: {"wall": r.wall, "cpu": r.cpu, "rss_mb": r.rss_mb} for t, r in res.runs.items()},
                "rounds": res.rounds,
                "checks": [[w, str(a), str(b), s] for w, a, b, s in res.checks],
            }
            for key, res in results.items()
        }
        dump["targets"] = [list(m) for m in marks]
        for key, daemon in daemons.items():
            dump[key] = daemon_json(daemon)
        if memory:
            dump["memory"] = memory
        Path(args.json).write_text(json.dumps(dump, indent=1) + "\n")
    return 0 if ok else 1


def daemon_json(result: DaemonResult) -> dict[str, Any]:
    """The daemon run as JSON."""
    return {
        "rss_mb": result.rss_mb,
        "lines_written": result.lines_written,
        "lines_counted": result.lines_counted,
        "phases": [
            {
                "name": ph.name,
                "seconds": ph.seconds,
                "lines": ph.lines,
                "cpu_s": ph.cpu_s,
                "cpu_pct": ph.cpu_pct,
            }
            for ph in result.phases
        ],
        "latency_p50": result.percentile(0.5),
        "latency_p99": result.percentile(0.99),
        "latency_samples": sum(len(ph.latencies) for ph in result.phases),
    }


def run_daemon(seconds: float, json_path: str | None) -> int:
    """`--daemon-only`: the live daemon benchmark and its targets."""
    results = {"daemon": bench_daemon(seconds), "daemon_docker": bench_daemon(seconds, docker=True)}
    print(
        f"machine: {cpu_model()}, {os.cpu_count()} cores; load average at the end: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
    )
    print("\n\n".join(report(result) for result in results.values()))
    print("\ntargets (issue #8 item 3; the docker source beside them):")
    marks = [mark for result in results.values() for mark in result.targets()]
    for target, measured, met in marks:
        print(f"  [{'met' if met else 'MISSED'}] {target}: {measured}")
    if json_path:
        dump: dict[str, Any] = {key: daemon_json(result) for key, result in results.items()}
        dump["targets"] = [list(m) for m in marks]
        Path(json_path).write_text(json.dumps(dump, indent=1) + "\n")
    return 0


def run_memory(seconds: float, workdir: Path) -> tuple[list[tuple[str, str, bool]], dict[str, Any]]:
    """Issue #20 item 1's figures: the daemon's RSS over time at 20k stats lines/s, and the peak RSS
    (parent + forked children) of a replay of 400k stats/KV lines that share one timestamp."""
    print("\nmemory (issue #20 item 1):")
    daemon: DaemonMemory = daemon_rss(seconds)
    print(daemon.report())
    for target, measured, met in daemon.targets():
        print(f"  [{'met' if met else 'MISSED'}] {target}: {measured}")
    path = burst_file(BURST_LINES, workdir)
    replay = replay_peak(path)
    print("\n".join(burst_report(path, replay)))
    marks = [
        *daemon.targets(),
        (f"replay of {path.name}: peak RSS < 100 MB", f"{replay.peak_mb:.1f} MB", replay.peak_mb < 100),
    ]
    dump = {
        "daemon_seconds": daemon.seconds,
        "daemon_rss_mb": [[round(at, 1), mb] for at, mb in daemon.samples],
        "daemon_peak_rss_mb": daemon.hwm_mb,
        "daemon_lines_written": daemon.lines_written,
        "daemon_lines_counted": daemon.lines_counted,
        "replay_file": str(path),
        "replay_peak_rss_mb": replay.peak_mb,
        "replay_process_peaks_mb": list(replay.hwm_mb.values()),
    }
    return marks, dump


def cpu_model() -> str:
    """The CPU model name as /proc/cpuinfo gives it."""
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    return next((ln.split(":", 1)[1].strip() for ln in cpuinfo if ln.startswith("model name")), "?")


if __name__ == "__main__":
    raise SystemExit(main())
