#!/usr/bin/env bash
# Install SGLang 0.5.23 for the CPU into a venv outside the checkout; print the venv's path.
#
#   scripts/real/install_sglang.sh            # venv: ${KVWATCH_REAL_CACHE:-$HOME/.cache/kvwatch-real}/sglang-0.5.23
#
# SGLang's own CPU path needs sgl-kernel built from source: PyPI's `sglang-kernel` 0.4.10 and `sgl-kernel`
# 0.3.21 are CUDA-only (`No module named 'sgl_kernel'` with SGLANG_USE_CPU_ENGINE=1), and sglang's
# requirements pull CUDA wheels (flashinfer, deep-gemm, cutlass-dsl, nvshmem, ...) that a CPU box cannot
# use. What serves: the sglang wheel alone (`--no-deps`), its pure-Python and CPU dependencies pinned in
# sglang-requirements.txt (also `--no-deps`: the list is the whole closure, so pip pulls nothing else),
# torch 2.13.0's CPU build, and the transformers model implementation (`--model-impl transformers`) with
# torch_native attention (tests/real/sglang_server.py has the launch flags).
#
# Cached: a finished install writes a marker holding a hash of this script and the requirements; a later
# run with the same hash does nothing (a half-done install has no marker and is redone). Python 3.11 (the
# version torch's CPU wheel here is built for); PYTHON overrides `python3`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${KVWATCH_REAL_CACHE:-$HOME/.cache/kvwatch-real}
venv=$cache/sglang-0.5.23
marker=$venv/.kvwatch-installed
requirements=$here/sglang-requirements.txt
stamp=$(cat "${BASH_SOURCE[0]}" "$requirements" | sha256sum | cut -c1-16)

if [[ -f $marker && $(cat "$marker") == "$stamp" ]]; then
    echo "$venv"
    exit 0
fi

python=${PYTHON:-python3}
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [[ $version != 3.11 ]]; then
    echo "install_sglang.sh: needs Python 3.11 (torch 2.13.0's CPU wheel), $python is $version: set PYTHON" >&2
    exit 1
fi

rm -rf "$venv"
mkdir -p "$cache"
"$python" -m venv "$venv"
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps)

# torch first, alone: the one heavy wheel, and the one a machine may not have. torch 2.13.0's CPU build
# is what sglang 0.5.23 runs on here (its own pin, 2.14.1, is a CUDA build on PyPI).
if ! "${pip[@]}" torch==2.13.0; then
    echo "install_sglang.sh: torch==2.13.0 (CPU) not found. Point pip at PyTorch's CPU wheels:" >&2
    echo "    PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu $0" >&2
    exit 1
fi
"${pip[@]}" -r "$requirements"
"${pip[@]}" sglang==0.5.23
# torchvision: sglang imports it (multimodal processors) even for a text model. 0.28.0 is the release
# for torch 2.13; `--no-deps` or pip swaps torch for a CUDA build.
"${pip[@]}" torchvision==0.28.0
# Its _meta_registrations.py registers fake kernels for torchvision's C++ ops at import; PyPI's wheel
# does not load those ops against this torch build, and the import dies with `RuntimeError: operator
# torchvision::nms does not exist`. Text serving needs none of them: empty the module.
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
: > "$site/torchvision/_meta_registrations.py"

# The install is good when sglang's server module and the model loader import.
"$venv/bin/python" -c 'import sglang.launch_server, sglang.srt.entrypoints.http_server, transformers, torch' \
    || { echo "install_sglang.sh: sglang 0.5.23 installed but does not import (see above)" >&2; exit 1; }

echo "$stamp" > "$marker"
echo "$venv"
