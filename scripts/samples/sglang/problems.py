"""Makes samples/sglang-v0-5-17-agentic-broken.log, samples/sglang-v0-4-6-radix-disabled.log, samples/sglang-v0-5-23-hicache-unused.log, samples/sglang-v0-5-12-hicache-debug.log (+ .golden): the diagnoses."""  # noqa: E501

from __future__ import annotations

from datetime import datetime, timezone

from scripts.samples.made import Made
from scripts.samples.sglang import lines as sl
from scripts.samples.sglang.families import T0, _args, _join
from scripts.samples.sglang.traffic import prefill_lines, sessions


def agentic_broken() -> str:
    """0.5.17 (sglang#35129's shape): long agentic turns, `#cached-token: 0` every turn; --log-requests."""
    reqs = sessions(517, T0, 30, system=20000, broken=True)
    rows = [(T0, sl.line(T0, sl.server_args_repr(_args(log_requests=True, chunked_prefill_size=16384))))]
    rows += prefill_lines(
        reqs,
        16384,
        lambda b, t: sl.line(t, sl.prefill_0_5_23(b, 0, False, 9000.0)),
        own_chunks=False,
        decode=lambda t, p: sl.line(t, sl.decode_0_5_23(1, p, min(0.9, p / 200000), 40.0, 0, True)),
    )
    for r in reqs:
        finish = sl.finish_text(r.rid, r.prompt, r.cached, 300, "agent turn with tool output", 9.5)
        rows.append((r.time + 8.0, sl.line(r.time + 8.0, finish)))
    return _join(rows)


def radix_disabled() -> str:
    """0.4.6 started with --disable-radix-cache: every prompt computed in full."""
    reqs = sessions(46, T0, 20, broken=True)
    rows = [(T0, sl.line(T0, sl.server_args_repr(_args(disable_radix_cache=True)), " TP0"))]
    rows += prefill_lines(
        reqs,
        8192,
        lambda b, t: sl.line(t, sl.prefill_0_4_4(b).rstrip(", "), " TP0"),
        own_chunks=False,
    )
    return _join(rows)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds")


def hicache_unused() -> str:
    """0.5.23: HiCache + mooncake storage whose prefetches are all dropped; ATTN_CP duplicates; ms stamps."""
    reqs = sessions(523, T0, 30, system=6000)
    args = _args(
        enable_hierarchical_cache=True,
        hicache_storage_backend="mooncake",
        hicache_storage_prefetch_policy="wait_complete",
        log_requests=True,
        tp_size=2,
    )
    rows = [(T0, sl.line(T0, sl.server_args_dict(args), ms=True))]
    rows.append((T0 + 30, sl.line(T0 + 30, "Mooncake direct linker offload: tokens=6144", ms=True)))
    for r in reqs:
        b = sl.Batch(1, r.prompt - r.cached, r.cached, running=1, queued=0, usage=0.2)
        msg = sl.prefill_0_5_23(b, 0, False, 5000.0, occupancy=61.0)
        for cp in (0, 1):  # one batch printed once per context-parallel rank
            rows.append((r.time, sl.line(r.time, msg, f" ATTN_CP{cp} TP{cp}", ms=True)))
        rows.append(
            (r.time - 0.2, sl.line(r.time - 0.2, sl.prefetch("dropped", r.rid, 4096, 0, 4096, 0), ms=True))
        )
        tiers = {"device": r.cached, "host": 0, "storage": 0}
        rows.append(
            (
                r.time + 2,
                sl.line(
                    r.time + 2,
                    sl.finish_json(_iso(r.time + 2), r.rid, r.prompt, r.cached, tiers, "hi"),
                    ms=True,
                ),
            )
        )
    rows.append(
        (reqs[3].time + 0.1, sl.line(reqs[3].time + 0.1, sl.declined(reqs[3].rid, 2048, 1024), ms=True))
    )
    return _join(rows)


def hicache_debug() -> str:
    """0.5.12: HiCache with a file storage backend, no INFO prefetch lines in this build: no_signal."""
    reqs = sessions(512, T0, 20)
    args = _args(enable_hierarchical_cache=True, hicache_storage_backend="file")
    rows = [(T0, sl.line(T0, sl.server_args_repr(args)))]
    rows += prefill_lines(
        reqs,
        8192,
        lambda b, t: sl.line(t, sl.prefill_0_5_10(b, False, 4000.0, 80.0).split(", est.")[0]),
        own_chunks=False,
    )
    return _join(rows)


SAMPLES = {
    "sglang-v0-5-17-agentic-broken.log": agentic_broken,
    "sglang-v0-4-6-radix-disabled.log": radix_disabled,
    "sglang-v0-5-23-hicache-unused.log": hicache_unused,
    "sglang-v0-5-12-hicache-debug.log": hicache_debug,
}


def make() -> list[Made]:
    """The diagnosis samples."""
    return [Made(name, build().encode(), f"{name}: {build.__doc__}") for name, build in SAMPLES.items()]
