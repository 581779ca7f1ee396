"""Parsers read by key and keep what they know: every engine's key lists (vLLM's stats lines, Ollama's
slog records, llama.cpp's `new prompt` / `stop processing` messages, LM Studio's mlx-engine `key=value`
lines, LMCache's lookup and retrieve lines, SGLang's batch lines, gateway usage JSON) give the same
figures when their sample lines gain a key kvwatch does not know, have their keys reordered or lose a
trailing separator; a key kvwatch does not know is counted (`kvwatch_unknown_fields_total`), never
dropped silently. (A gateway table's row, new-api's or LiteLLM's, counts a key its format is not known
to carry; a gateway's own JSON log around a usage object carries any keys: none is counted. vLLM's KV
Transfer keys are known per connector. SGLang's new keys and shapes are also in
tests/test_format_drift.py.)"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpora import SAMPLES

from kvwatch.cli import main
from kvwatch.engines import make_parser
from kvwatch.engines.usage.litellm_hook import record
from kvwatch.engines.vllm.kv import split_top
from kvwatch.model import EngineFact, LogLine, UnreadFields
from kvwatch.parsers.base import ParserSettings

Figures = dict[str, list[tuple[tuple[tuple[str, str], ...], float]]]


def replayed(path: Path) -> tuple[Figures, float]:
    """Every counter family but kvwatch's own line counts, from `kvwatch replay --format json`, and the
    unknown fields counted."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["replay", "--format", "json", "--year", "2026", str(path)])
    metrics = json.loads(out.getvalue())["metrics"]
    own = ("kvwatch_lines", "kvwatch_unknown", "kvwatch_parse")
    figures = {
        name: sorted((tuple(sorted(s["labels"].items())), s["value"]) for s in samples)
        for name, samples in metrics.items()
        if name.endswith("_total") and not name.startswith(own)
    }
    return figures, sum(s["value"] for s in metrics.get("kvwatch_unknown_fields_total", []))


# --- vLLM: `Avg prompt throughput: ..., Running: N reqs, ...` -------------------------------------

_RUNNING = re.compile(r"(Running: \d+ reqs, )")


def vllm_extra_key(line: str) -> str:
    """A stats line with keys of no release after `Running:` (spelt with a hyphen and a digit, and one
    piece with no `: ` at all) and one at its end (before V0's `.`)."""
    if "Avg prompt throughput" not in line or "Running:" not in line:
        return line
    extra = r"\1Mystery gauge: 3.5%, KV-tier2 share: 7%, warmup done, "
    body = _RUNNING.sub(extra, line.rstrip("\n"), count=1)
    end = "." if body.endswith(".") else ""
    return body.removesuffix(".") + ", Mystery counter: 12 widgets" + end + "\n"


def vllm_reordered(line: str) -> str:
    """A stats line whose `Running:` and `Waiting:` (V0: `Swapped:`) fields swap places."""
    return re.sub(r"(Running: \d+ reqs), ((?:Waiting|Swapped): \d+ reqs)", r"\2, \1", line)


def vllm_stripped(line: str) -> str:
    """A V0 stats line without its trailing `.`."""
    if "Avg prompt throughput" in line and line.rstrip("\n").endswith("%."):
        return line.rstrip("\n")[:-1] + "\n"
    return line


# --- vLLM: `KV Transfer metrics: k=v, ...` (MultiConnector: `Name={'k': v, ...}, ...`) ---------------

_KV = re.compile(r"(KV Transfer metrics: )(.*?)(\r?\n?)$")


def _kv_payload(line: str, change: Callable[[str], str]) -> str:
    match = _KV.search(line)
    if match is None:
        return line
    return line[: match.start(2)] + change(match[2]) + match[3]


def vllm_kv_extra_key(line: str) -> str:
    """A KV Transfer line with a key no release of its connector printed: first in a flat payload, last
    in each connector's dict under MultiConnector."""

    def change(payload: str) -> str:
        if "={" in payload:
            return re.sub(r"\}(?=, \w+=\{|$)", ", 'Mystery stat (ms)': 1.5}", payload)
        return "Mystery stat (ms)=1.5, " + payload

    return _kv_payload(line, change)


def vllm_kv_reordered(line: str) -> str:
    """A KV Transfer line with its items (MultiConnector: its connectors) in reverse order."""
    return _kv_payload(line, lambda payload: ", ".join(reversed(split_top(payload))))


def vllm_kv_unknown_connector(line: str) -> str:
    """A MultiConnector KV Transfer line with a connector no vLLM release has (a plugin's) first."""
    return _kv_payload(
        line,
        lambda payload: "MysteryConnector={'Widgets moved': 3}, " + payload if "={" in payload else payload,
    )


# --- Ollama: slog `k=v` records ----------------------------------------------------------------------

_REQUEST_RECORD = re.compile(r'(msg="(?:cache hit|cache miss|loading cache slot)") (.*?)(\r?\n?)$')


def ollama_extra_key(line: str) -> str:
    """A request's slog record with an attribute of no release in the middle and at its end."""
    match = _REQUEST_RECORD.search(line)
    if match is None:
        return line
    first, _, rest = match[2].partition(" ")
    return line[: match.start(2)] + f'{first} mystery=7 {rest} other="a b"' + match[3]


def ollama_reordered(line: str) -> str:
    """A request's slog record with its attributes in reverse order."""
    match = _REQUEST_RECORD.search(line)
    if match is None:
        return line
    return line[: match.start(2)] + " ".join(reversed(match[2].split())) + match[3]


# --- llama.cpp: `new prompt, n_ctx_slot = N, ...`, `stop processing: n_tokens = N, truncated = N` -----

_NEW_PROMPT = re.compile(
    r"new prompt, (n_ctx_slot = \d+), (n_keep = \d+), ((?:task\.n_tokens|n_prompt_tokens) = \d+)"
)
_STOP = re.compile(r"(stop processing: (?:n_tokens|n_past) = \d+), (truncated = \d+)")


def llamacpp_extra_key(line: str) -> str:
    """`new prompt` and `stop processing` with a key of no build in the middle and at the end."""
    line = _NEW_PROMPT.sub(r"new prompt, \1, n_mystery = 3, \2, \3, n_other = 4", line)
    return _STOP.sub(r"\1, n_mystery = 5, \2", line)


def llamacpp_reordered(line: str) -> str:
    """`new prompt` with the prompt's size first, `stop processing` with `truncated` first."""
    line = _NEW_PROMPT.sub(r"new prompt, \3, \2, \1", line)
    return _STOP.sub(
        lambda m: m[0].replace(m[1] + ", " + m[2], f"stop processing: {m[2]}, {m[1][17:]}"), line
    )


# --- LM Studio: mlx-engine's `Prompt cache restore: k=v ...`, `... disk usage: k=v ...` ---------------

_PAIRS = re.compile(r"((?:Prompt cache restore|VLM prompt cache disk usage): )((?:\w+=\S+ ?)+)")


def lmstudio_extra_key(line: str) -> str:
    """A `key=value` line with a key of no release first and last."""
    return _PAIRS.sub(lambda m: f"{m[1]}mystery_mib=1.5 {m[2].rstrip()} other_count=3", line)


def lmstudio_reordered(line: str) -> str:
    """A `key=value` line with its pairs reversed, the efficiency without its `%`."""
    return _PAIRS.sub(lambda m: m[1] + " ".join(reversed(m[2].replace("%", "").split())), line)


# --- LMCache: `Reqid: R, Total tokens N, ...` and `Retrieved ... throughput: X GB/s;` ----------------

_LOOKUP = re.compile(
    r"(Reqid: \S+?), (Total tokens \d+), (.*?)(LMCache hit tokens: \d+), (need to load: -?\d+)"
)


def lmcache_extra_key(line: str) -> str:
    """A lookup line with a part of no release in the middle and at its end."""
    return _LOOKUP.sub(r"\1, \2, Mystery tokens: 9, \3\4, \5, Other: 1", line)


def lmcache_reordered(line: str) -> str:
    """A lookup line with its parts after the request id reversed; a retrieve line without its `;`."""
    line = _LOOKUP.sub(
        lambda m: ", ".join([m[1], m[5], m[4], *(m[3].rstrip(", ").split(", ") if m[3] else []), m[2]]), line
    )
    return line.replace(" GB/s; ", " GB/s ") if "Retrieved " in line else line


# --- SGLang: `Prefill batch, #new-seq: N, #new-token: N, #cached-token: N, ...` ----------------------

_SGLANG = re.compile(r"(#new-token: \d+), (#cached-token: \d+)")


def sglang_reordered(line: str) -> str:
    """A prefill line with `#cached-token` before `#new-token`."""
    return _SGLANG.sub(r"\2, \1", line)


# --- gateway usage rows (JSON) -----------------------------------------------------------------------


def _usage_row(line: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> str:
    text = line.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return line
    try:
        record = json.loads(text)
    except ValueError:
        return line
    return json.dumps(change(record), ensure_ascii=False) + "\n"


def usage_reordered(line: str) -> str:
    """A usage JSON line with its keys reversed."""
    return _usage_row(line, lambda record: dict(reversed(list(record.items()))))


def usage_extra_key(line: str) -> str:
    """A usage JSON line with a top-level key of no gateway's format first."""
    return _usage_row(line, lambda record: {"zz_mystery": {"n": 1}, **record})


#: (the samples, a mutation, whether it adds a key kvwatch must count)
MUTATIONS: list[tuple[str, Callable[[str], str], bool]] = [
    ("vllm-*.log", vllm_extra_key, True),
    ("vllm-*.log", vllm_reordered, False),
    ("vllm-*.log", vllm_stripped, False),
    ("vllm-*.log", vllm_kv_extra_key, True),
    ("vllm-*.log", vllm_kv_reordered, False),
    ("vllm-*.log", vllm_kv_unknown_connector, True),
    ("ollama-*.log", ollama_extra_key, True),
    ("ollama-*.log", ollama_reordered, False),
    ("llamacpp-*.log", llamacpp_extra_key, True),
    ("llamacpp-*.log", llamacpp_reordered, False),
    ("lmstudio-*.log", lmstudio_extra_key, True),
    ("lmstudio-*.log", lmstudio_reordered, False),
    ("lmcache-*.log", lmcache_extra_key, True),
    ("lmcache-*.log", lmcache_reordered, False),
    ("sglang-*.log", sglang_reordered, False),
    ("usage-*.log", usage_reordered, False),
    ("usage-newapi*.log", usage_extra_key, True),  # (a new-api `logs` row: a column of no release)
    ("usage-[ao]*.log", usage_extra_key, False),  # (a gateway's own log: its keys are its own)
]


def mutated(path: Path, mutate: Callable[[str], str]) -> str:
    return "".join(mutate(line) for line in path.read_text(encoding="utf-8").splitlines(keepends=True))


def cases() -> list[tuple[Path, Callable[[str], str], bool]]:
    """Each sample a mutation changes (docker json-file logs hold their lines in JSON strings: left out)."""
    found = []
    for pattern, mutate, counted in MUTATIONS:
        for path in sorted(SAMPLES.glob(pattern)):
            if path.read_text(encoding="utf-8").startswith('{"log"'):
                continue
            if mutated(path, mutate) != path.read_text(encoding="utf-8"):
                found.append((path, mutate, counted))
    return found


def test_every_engine_with_key_lists_is_mutated() -> None:
    """Each mutation changes at least one sample: no engine's key lines are left untested."""
    assert {mutate for _, mutate, _ in cases()} == {mutate for _, mutate, _ in MUTATIONS}


@pytest.mark.parametrize(
    ("sample", "mutate", "counted"), cases(), ids=lambda v: getattr(v, "__name__", getattr(v, "stem", str(v)))
)
def test_unknown_and_reordered_keys_leave_the_figures_unchanged(
    sample: Path, mutate: Callable[[str], str], counted: bool, tmp_path: Path
) -> None:
    """The mutated sample gives exactly the original's figures; a key kvwatch does not know is counted."""
    path = tmp_path / sample.name
    path.write_text(mutated(sample, mutate), encoding="utf-8")
    (want, unknown_before), (got, unknown_after) = replayed(sample), replayed(path)
    assert want == got
    assert unknown_before == 0
    assert (unknown_after > 0) == counted


# --- vLLM's KV connectors: which unknown keys are drift ----------------------------------------------


def _replay_report(path: Path) -> tuple[dict[str, Any], str]:
    """`kvwatch replay --format json` and the text report of a file."""
    reports = []
    for fmt in ("json", "text"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["replay", "--format", fmt, "--year", "2026", str(path)])
        reports.append(out.getvalue())
    return json.loads(reports[0]), reports[1]


def _drift_alerts(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for a in report["alerts"] if a["alert"] == "format_drift" and a["state"] == "firing"]


def test_a_known_connectors_new_key_is_drift_an_unknown_connectors_keys_are_counted(tmp_path: Path) -> None:
    """Under MultiConnector, a key no release of Nixl or OffloadingConnector printed is counted per
    connector and fires format_drift (an upgrade); the keys of a connector no vLLM release has (a
    plugin's) are counted and listed in replay's text, with no format_drift (nothing kvwatch read changed)."""
    sample = SAMPLES / "vllm-multiconnector.log"
    for mutate, drift in ((vllm_kv_extra_key, True), (vllm_kv_unknown_connector, False)):
        path = tmp_path / f"{mutate.__name__}.log"
        path.write_text(mutated(sample, mutate), encoding="utf-8")
        report, text = _replay_report(path)
        unknown = {
            s["labels"]["shape"]: s["value"] for s in report["metrics"]["kvwatch_unknown_fields_total"]
        }
        assert {s["labels"]["engine"] for s in report["metrics"]["kvwatch_unknown_fields_total"]} == {"vllm"}
        lines = sample.read_text(encoding="utf-8").count("KV Transfer metrics: ")
        if drift:
            assert unknown == {
                "KV Transfer NixlConnector +Mystery stat (ms)": lines,
                "KV Transfer OffloadingConnector +Mystery stat (ms)": lines,
            }
            [alert] = _drift_alerts(report)
            assert alert["evidence"]["engine"] == "vllm"
            assert set(alert["evidence"]["shapes"]) == set(unknown)
        else:
            assert unknown == {"KV Transfer MysteryConnector +Widgets moved": lines}
            assert not _drift_alerts(report)
        listed = text.split("lines not (wholly) read, by sanitised shape", 1)[1].split("\n\n")[0]
        assert all(shape in listed for shape in unknown), listed


#: One payload per key generation of each connector vLLM prints (kvwatch.engines.vllm.connectors).
_NIXL_0_11 = "num_successful_transfers=3"
_NIXL_0_12 = (
    "Num successful transfers=4, Avg xfer time (ms)=18.639, P90 xfer time (ms)=23.922, "
    "Avg post time (ms)=0.195, P90 post time (ms)=0.756, Avg MB per transfer=359.0, "
    "Throughput (MB/s)=19260.721, Avg number of descriptors=1811.2"
)
_NIXL_0_32 = _NIXL_0_12 + ", Num failed transfers=0, Num KV expired reqs=1, Num notifs after expiry=0"
_NIXL_NP = (
    "NixlConnector={'Num successful transfers': 0, 'Avg xfer time (ms)': 0, 'P90 xfer time (ms)': 0, "
    "'Avg post time (ms)': np.float64(0.1), 'P90 post time (ms)': 0, 'Avg MB per transfer': 0, "
    "'Throughput (MB/s)': np.float64(1.5), 'Avg number of descriptors': 0, 'Num failed transfers': 2, "
    "'Num KV expired reqs': 0, 'Num notifs after expiry': 0}"
)
_MOONCAKE = (
    "Num successful transfers=2, Avg xfer time (ms)=1.5, P90 xfer time (ms)=2.0, Avg MB per transfer=8.0, "
    "Throughput (MB/s)=100.0, Avg number of descriptors=4.0, Num failed transfers=0, Num failed recvs=0, "
    "Num KV expired reqs=0"
)
_MOONCAKE_STORE = (
    "load_get_count=2, load_get_avg_ms=1.2, load_get_p90_ms=1.5, load_get_total_keys=8, "
    "load_get_total_bytes=1048576, load_get_failed_keys=0, load_get_error_count=0, save_put_count=1, "
    "lookup_lease_count=1"
)
_HF3FS = (
    "Num transfers task=3, Num save task success=2, Num save task failed=0, Num load task success=1, "
    "Num load task failed=0, Avg save duration (ms)=3.1, P90 save duration (ms)=4.0, "
    "Avg load duration (ms)=2.0, P90 load duration (ms)=2.0"
)
_HISPARSE = (
    "HiSparse hot-buffer hits=10, HiSparse hot-buffer misses=2, HiSparse host-to-device bytes=4096, "
    "HiSparse host KV cache usage %=12.5"
)
_UMBP = "load_submitted=1, load_completed=1, load_failed=0, load_num_bytes=4096, store_submitted=2"
_OFFLOAD_OLD = "GPU_to_CPU_total_bytes=1048576, GPU_to_CPU_total_time=0.01, CPU_to_GPU_total_bytes=0"
_OFFLOAD = (
    "vllm:kv_offload_store_bytes=1048576, vllm:kv_offload_store_size_count=2, "
    "vllm:kv_offload_store_size_sum=1048576, vllm:kv_offload_lookup_async_delay_seconds_count=1, "
    "vllm:kv_offload_allocation_failure=0, vllm:kv_offload_stores_skipped=0, "
    "vllm:kv_offload_tiering_read_bytes:('1:fs',)=4096, "
    "vllm:kv_offload_tiering_promotion_latency_seconds:('1:fs', 'success')_count=3"
)
_SIMPLE = (
    "vllm:simple_kv_offload_used_blocks=4, vllm:simple_kv_offload_pending_store_blocks=0, "
    "vllm:simple_kv_offload_save_outcomes_total:('stored',)=3, "
    "vllm:simple_kv_offload_load_blocks_total:('completed',)=2"
)
_LMCACHE_MP = "LMCache MP lookup count=3, LMCache MP lookup avg latency (ms)=0.4"
KNOWN_PAYLOADS = [
    _NIXL_0_11, _NIXL_0_12, _NIXL_0_32, _NIXL_NP, _MOONCAKE, _MOONCAKE_STORE, _HF3FS, _HISPARSE, _UMBP,
    _OFFLOAD_OLD, _OFFLOAD, _SIMPLE, _LMCACHE_MP,
    "NixlPullConnector={'Num successful transfers': 1, 'Num failed transfers': 0}, "
    "OffloadingConnector={'vllm:kv_offload_load_bytes': 4096, 'vllm:kv_offload_load_time': 0.001}, "
    "SimpleCPUOffloadConnector={\"vllm:simple_kv_offload_save_outcomes_total:('stored',)\": 1}",
]  # fmt: skip


@pytest.mark.parametrize("payload", KNOWN_PAYLOADS, ids=lambda p: p[:30])
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
def test_every_connectors_own_keys_are_known(payload: str, fast: bool) -> None:
    """Each connector's keys as vLLM's releases print them (Nixl's every generation, alone or under
    MultiConnector): read, never counted as unknown, on the fast path and the plain one."""
    parser = make_parser("vllm", "s", ParserSettings(year=2026, fast_paths=fast))
    line = f"(APIServer pid=1) INFO 11-04 13:32:20 [metrics.py:108] KV Transfer metrics: {payload}"
    result = parser.parse(LogLine("s", line, None))
    assert isinstance(result, list) and result
    assert not [e for e in result if isinstance(e, (UnreadFields, EngineFact))]


def test_a_flat_payload_of_no_known_connector_is_counted_not_drift() -> None:
    """A single connector's flat payload with no key any connector prints is counted as an unknown
    connector's (no fact: no format_drift); one new key beside Nixl's is Nixl's drift."""
    parser = make_parser("vllm", "s", ParserSettings(year=2026))
    head = "(APIServer pid=1) INFO 11-04 13:32:20 [metrics.py:108] KV Transfer metrics: "
    plugin = parser.parse(LogLine("s", head + "widgets_moved=3, widget_latency (ms)=1.5", None))
    assert isinstance(plugin, list)
    assert [e.shape for e in plugin if isinstance(e, UnreadFields)] == [
        "KV Transfer (unknown connector) +widget_latency (ms),widgets_moved"
    ]
    assert not [e for e in plugin if isinstance(e, EngineFact)]
    nixl = parser.parse(LogLine("s", head + _NIXL_0_32 + ", Num mystery retries=2", None))
    assert isinstance(nixl, list)
    assert [e.shape for e in nixl if isinstance(e, UnreadFields)] == [
        "KV Transfer NixlConnector +Num mystery retries"
    ]
    assert [e for e in nixl if isinstance(e, EngineFact)]


# --- gateway table rows: the keys their formats carry ------------------------------------------------

#: A `LiteLLM_SpendLogs` row with every column of litellm 1.108.7's schema.prisma, as the `sql` source
#: hands it on, and a record of kvwatch's LiteLLM callback (a subset of the StandardLoggingPayload).
SPEND_LOG_ROW = {
    "request_id": "chatcmpl-1", "call_type": "acompletion", "api_key": "hashed", "spend": 0.0,
    "total_tokens": 1100, "prompt_tokens": 1000, "completion_tokens": 100,
    "startTime": "2026-08-20T08:00:00.000", "endTime": "2026-08-20T08:00:02.000",
    "request_duration_ms": 2000, "completionStartTime": None, "model": "qwen", "model_id": "m1",
    "model_group": "qwen", "custom_llm_provider": "hosted_vllm", "api_base": "http://vllm:8000/v1",
    "user": "", "metadata": {"status": "success", "additional_usage_values": {
        "prompt_tokens_details": {"cached_tokens": 896}}},
    "cache_hit": "False", "cache_key": "", "request_tags": [], "team_id": None, "organization_id": None,
    "end_user": None, "requester_ip_address": None, "messages": {}, "response": {}, "session_id": None,
    "status": "success", "mcp_namespaced_tool_name": None, "billing_agent_id": None, "agent_id": None,
    "proxy_server_request": {}, "litellm_call_id": "c1", "created_at": "2026-08-20T08:00:02.000",
    "updated_at": "2026-08-20T08:00:02.000",
}  # fmt: skip


def _usage_events(rows: list[dict[str, Any]]) -> list[Any]:
    parser = make_parser("usage", "s", ParserSettings(year=2026))
    events: list[Any] = []
    for row in rows:
        result = parser.parse(LogLine("s", json.dumps(row), None))
        assert isinstance(result, list)
        events += result
    return events


def test_gateway_table_rows_count_only_keys_their_format_does_not_carry() -> None:
    """A full LiteLLM_SpendLogs row, a record of kvwatch's LiteLLM callback and a new-api row count no
    key; the same rows with a column of no release are read the same and count it (with its fact:
    format_drift), per engine and shape; a gateway's own JSON log around a usage object counts none."""
    hook = record(
        {
            "startTime": 1787212800.0, "endTime": 1787212802.0, "call_type": "acompletion",
            "model_group": "qwen", "model": "qwen", "status": "success", "prompt_tokens": 1000,
            "completion_tokens": 100, "total_tokens": 1100, "cache_hit": False,
            "metadata": {
                "usage_object": {"prompt_tokens": 1000, "prompt_tokens_details": {"cached_tokens": 896}}
            },
        }
    )  # fmt: skip
    newapi = json.loads((SAMPLES / "usage-newapi.log").read_text(encoding="utf-8").splitlines()[0])
    generic = {"ts": "2026-08-20T08:00:18Z", "level": "info", "client_ip": "10.0.0.1", "latency_ms": 9,
               "response": {"object": "chat.completion", "usage": {"prompt_tokens": 10}}}  # fmt: skip
    rows = [SPEND_LOG_ROW, hook, newapi, generic]
    plain = _usage_events(rows)
    assert not [e for e in plain if isinstance(e, UnreadFields)]
    mutated = _usage_events([{**row, "zz_mystery_col": 1} for row in rows])
    assert [e for e in mutated if not isinstance(e, (UnreadFields, EngineFact))] == plain
    assert [(e.engine, e.shape) for e in mutated if isinstance(e, UnreadFields)] == [
        ("usage", "litellm row +zz_mystery_col"),
        ("usage", "litellm row +zz_mystery_col"),
        ("usage", "newapi row +zz_mystery_col"),
    ]
    assert [e.key for e in mutated if isinstance(e, EngineFact)] == [
        "unread:usage:litellm row +zz_mystery_col",
        "unread:usage:newapi row +zz_mystery_col",
    ]
