"""Makes samples/sglang-v0-1-14.log, samples/sglang-v0-2-5.log, samples/sglang-v0-2-14.log, samples/sglang-v0-4-1.log, samples/sglang-v0-4-4.log, samples/sglang-v0-4-9-pd.log, samples/sglang-v0-5-4-dp.log, samples/sglang-v0-5-10-ray.log (+ .golden): healthy traffic per version family."""  # noqa: E501

from __future__ import annotations

from scripts.samples.made import Made
from scripts.samples.sglang import lines as sl
from scripts.samples.sglang.traffic import Request, prefill_lines, sessions

T0 = 1775419200.0  # 2026-04-05T20:00:00Z


def _args(**extra: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "model_path": "Qwen/Qwen2.5-7B-Instruct",
        "tp_size": 1,
        "dp_size": 1,
        "chunked_prefill_size": 8192,
        "page_size": 1,
        "disable_radix_cache": False,
        "log_requests": False,
    }
    fields.update(extra)
    return fields


def _join(rows: list[tuple[float, str]]) -> str:
    return "".join(f"{text}\n" for _, text in sorted(rows, key=lambda r: r[0]))


def _access(reqs: list[Request], stamped: bool, ranks: str = "") -> list[tuple[float, str]]:
    out = []
    for i, r in enumerate(reqs):
        msg = sl.access(port=40000 + i)
        out.append((r.time + 1.5, sl.line(r.time + 1.5, msg, ranks) if stamped else msg))
    return out


def v0_1_14() -> str:
    """0.1.14: `%(message)s` only (no time), `new fill batch.`, decode lines without a name."""
    reqs = sessions(114, T0, 40, system=600)
    rows = prefill_lines(
        reqs,
        0,
        lambda b, t: sl.fill_0_1_14(b),
        own_chunks=True,
        decode=lambda t, p: sl.decode_0_1_14(2, p + 40, min(0.9, p / 60000), 0),
    )
    return _join(rows + _access(reqs, stamped=False))


def v0_2_5() -> str:
    """0.2.5: `[gpu_id=0] Prefill batch.` / `Decode batch.`, no time in the line."""
    reqs = sessions(25, T0, 40)
    rows = prefill_lines(
        reqs,
        0,
        lambda b, t: sl.prefill_0_2_5(b),
        own_chunks=True,
        decode=lambda t, p: sl.decode_0_2_5(2, p + 40, min(0.9, p / 60000), 61.5, 0),
    )
    return _join(rows + _access(reqs, stamped=False))


def v0_2_14() -> str:
    """0.2.14: `[%H:%M:%S TP0]`, one mixed-chunk batch, crossing midnight."""
    reqs = sessions(214, T0 + 4 * 3600 - 120, 40)  # 23:58 local (UTC) onwards
    rows = prefill_lines(
        reqs,
        0,
        lambda b, t: sl.line(t, sl.prefill_0_2_14(b), " TP0", dated=False),
        own_chunks=True,
        decode=lambda t, p: sl.line(
            t, sl.decode_0_2_14(2, p + 40, min(0.9, p / 60000), 61.5, 0), " TP0", dated=False
        ),
    )
    mixed = sl.Batch(1, 300, 1200, running=0, queued=0, usage=0.1, rate=0.5)
    rows.append(
        (
            reqs[5].time + 0.1,
            sl.line(reqs[5].time + 0.1, sl.prefill_0_2_14(mixed, mixed=2), " TP0", dated=False),
        )
    )
    return _join(rows)


def v0_4_1() -> str:
    """0.4.1: server_args, chunked prefill of 4096 (continuations count their own chunks), TP0 prefix."""
    reqs = sessions(41, T0, 40, system=3000)
    start = [(T0, sl.line(T0, sl.server_args_repr(_args(chunked_prefill_size=4096, tp_size=2)), " TP0"))]
    rows = prefill_lines(
        reqs,
        4096,
        lambda b, t: sl.line(t, sl.prefill_0_4_1(b), " TP0"),
        own_chunks=True,
        decode=lambda t, p: sl.line(t, sl.decode_0_2_14(2, p + 40, min(0.9, p / 60000), 58.0, 0), " TP0"),
    )
    return _join(start + rows + _access(reqs, stamped=True))


def v0_4_4() -> str:
    """0.4.4: trailing `, `, `--log-requests` Finish lines (exact records, prompt text never kept)."""
    reqs = sessions(44, T0, 40)
    start = [(T0, sl.line(T0, sl.server_args_repr(_args(log_requests=True))))]
    rows = prefill_lines(
        reqs,
        8192,
        lambda b, t: sl.line(t, sl.prefill_0_4_4(b)),
        own_chunks=False,
        decode=lambda t, p: sl.line(t, sl.decode_0_4_4(2, p + 40, min(0.9, p / 60000), 58.0, 0)),
    )
    for r in reqs:
        text = "You are a careful assistant. SECRET-PROMPT-TEXT 'cached_tokens': 99999, " * 3
        finish = sl.finish_text(r.rid, r.prompt, r.cached, 64, text, 1.25)
        rows.append((r.time + 1.2, sl.line(r.time + 1.2, finish)))
    return _join(start + rows + _access(reqs, stamped=True))


def v0_4_9_pd() -> str:
    """0.4.9: a PD prefill server of a hybrid SWA model (`#token: full=N, swa=M`, `#unbootstrapped-req`)."""
    reqs = sessions(49, T0, 40)
    start = [(T0, sl.line(T0, sl.server_args_repr(_args(disaggregation_mode="prefill"))))]

    def fmt(b: sl.Batch, t: float) -> str:
        full = int(b.usage * 200000)
        return sl.line(t, sl.prefill_0_4_9_pd(b, full, full // 4, b.usage / 2, 0, 1, 5321.0))

    rows = prefill_lines(reqs, 8192, fmt, own_chunks=False)
    return _join(start + rows + _access(reqs, stamped=True))


def v0_5_4_dp() -> str:
    """0.5.4: DP attention, two DP ranks with their own lines (`[... DP1 TP1]`), iteration numbers, mamba."""
    rows: list[tuple[float, str]] = [
        (
            T0,
            sl.line(
                T0, sl.server_args_repr(_args(dp_size=2, tp_size=2, enable_dp_attention=True)), " DP0 TP0"
            ),
        )
    ]
    for rank in (0, 1):
        reqs = sessions(54 + rank, T0, 30)
        ranks = f" DP{rank} TP{rank}"
        counter = [rank * 1000]

        def fmt(b: sl.Batch, t: float, ranks: str = ranks, counter: list[int] = counter) -> str:
            counter[0] += 7
            return sl.line(t, sl.prefill_0_5_4(b, counter[0], mamba=0.12), ranks)

        def dec(t: float, p: int, ranks: str = ranks, counter: list[int] = counter) -> str:
            return sl.line(
                t, sl.decode_0_5_4(counter[0], 3, p + 40, min(0.9, p / 60000), 90.25, 0, True), ranks
            )

        rows += prefill_lines(reqs, 8192, fmt, own_chunks=False, decode=dec)
    return _join(rows)


def v0_5_10_ray() -> str:
    """0.5.10 under Ray: `(SGLangEngine pid=N) ` before the line, graph before throughput, est. TFLOPS."""
    reqs = sessions(510, T0, 40)
    ray = "(SGLangEngine pid=4242) "
    start = [(T0, ray + sl.line(T0, sl.server_args_repr(_args())))]
    rows = prefill_lines(
        reqs,
        8192,
        lambda b, t: ray + sl.line(t, sl.prefill_0_5_10(b, False, 4123.5, 88.1)),
        own_chunks=False,
        decode=lambda t, p: ray + sl.line(t, sl.decode_0_5_10(2, p + 40, min(0.9, p / 60000), 77.0, 0, True)),
    )
    return _join(start + rows)


SAMPLES = {
    "sglang-v0-1-14.log": v0_1_14,
    "sglang-v0-2-5.log": v0_2_5,
    "sglang-v0-2-14.log": v0_2_14,
    "sglang-v0-4-1.log": v0_4_1,
    "sglang-v0-4-4.log": v0_4_4,
    "sglang-v0-4-9-pd.log": v0_4_9_pd,
    "sglang-v0-5-4-dp.log": v0_5_4_dp,
    "sglang-v0-5-10-ray.log": v0_5_10_ray,
}


def make() -> list[Made]:
    """One healthy sample per version family."""
    return [Made(name, build().encode(), f"{name}: {build.__doc__}") for name, build in SAMPLES.items()]
