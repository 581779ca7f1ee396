"""Where each vLLM release logs from (`file:line` per call) and its fixed startup texts."""

from __future__ import annotations

# Every format string, `file:line`, process prefix and colour rule here was read from the PyPI wheel of
# the version a sample claims (`pip download vllm==X --no-deps`; see samples/README.vllm.md).

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
